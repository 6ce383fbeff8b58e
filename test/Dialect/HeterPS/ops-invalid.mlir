// Every verifier message of the model-layer ops.
// RUN: heterps-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{parameter @w must have a static shape, got 'tensor<?x4xf32>'}}
heterps.param @w : tensor<?x4xf32> = #heterps.init<zeros>

// -----

// expected-error @+1 {{initial value of @w has type 'tensor<2xf32>', expected 'tensor<3xf32>'}}
"heterps.param"() <{sym_name = "w", type = tensor<3xf32>, value = dense<1.0> : tensor<2xf32>}> : () -> ()

// -----

// expected-error @+1 {{xavier_uniform needs a parameter of rank 2 or more to compute its fans, @b has rank 1}}
heterps.param @b : tensor<4xf32> = #heterps.init<xavier_uniform>

// -----

// expected-error @+1 {{table @t needs a positive vocab, got 0}}
heterps.embedding_table @t {vocab = 0 : i64, dim = 8 : i64, initializer = #heterps.init<zeros>}

// -----

// expected-error @+1 {{table @t needs a positive dim, got -2}}
heterps.embedding_table @t {vocab = 10 : i64, dim = -2 : i64, initializer = #heterps.init<zeros>}

// -----

func.func @load_missing() -> tensor<2xf32> {
  // expected-error @+1 {{@nowhere does not name a heterps.param}}
  %w = heterps.load_param @nowhere : tensor<2xf32>
  return %w : tensor<2xf32>
}

// -----

heterps.param @w : tensor<2xf32> = #heterps.init<zeros>
func.func @load_wrong_type() -> tensor<3xf32> {
  // expected-error @+1 {{result type 'tensor<3xf32>' does not match parameter @w of type 'tensor<2xf32>'}}
  %w = heterps.load_param @w : tensor<3xf32>
  return %w : tensor<3xf32>
}

// -----

heterps.param @w : tensor<2xf32> = #heterps.init<zeros>
func.func @lookup_not_a_table(%ids: tensor<?x1xi64>) -> tensor<?x1x2xf32> {
  // expected-error @+1 {{@w does not name a heterps.embedding_table}}
  %e = heterps.embedding_lookup @w[%ids] : (tensor<?x1xi64>) -> tensor<?x1x2xf32>
  return %e : tensor<?x1x2xf32>
}

// -----

heterps.embedding_table @t {vocab = 10 : i64, dim = 4 : i64, initializer = #heterps.init<zeros>}
func.func @lookup_scalar_bag(%ids: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{a sum combiner needs ids of rank 1 or more}}
  %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>} : (tensor<i64>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

heterps.embedding_table @t {vocab = 10 : i64, dim = 4 : i64, initializer = #heterps.init<zeros>}
func.func @lookup_f16(%ids: tensor<?xi64>) -> tensor<?x4xf16> {
  // expected-error @+1 {{table rows are f32, the result has element type 'f16'}}
  %e = heterps.embedding_lookup @t[%ids] : (tensor<?xi64>) -> tensor<?x4xf16>
  return %e : tensor<?x4xf16>
}

// -----

heterps.embedding_table @t {vocab = 10 : i64, dim = 4 : i64, initializer = #heterps.init<zeros>}
func.func @lookup_shape(%ids: tensor<?x3xi64>) -> tensor<?x3x8xf32> {
  // expected-error @+1 {{result shape ?x3x8 does not match the expected ?x3x4 (ids ?x3, dim 4, combiner none)}}
  %e = heterps.embedding_lookup @t[%ids] : (tensor<?x3xi64>) -> tensor<?x3x8xf32>
  return %e : tensor<?x3x8xf32>
}

// -----

func.func @gemm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.gemm' op A and B must be matrices, got ranks 3 and 2}}
  %y = heterps.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gemm_element_types(%a: tensor<3x4xf32>, %b: tensor<4x5xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.gemm' op A and B have different element types: 'f32' and 'f16'}}
  %y = heterps.gemm %a, %b : (tensor<3x4xf32>, tensor<4x5xf16>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gemm_inner(%a: tensor<?x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.gemm' op inner dimensions differ: op(A) is ?x4, op(B) is 5x6}}
  %y = heterps.gemm %a, %b : (tensor<?x4xf32>, tensor<5x6xf32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @gemm_bias(%a: tensor<?x4xf32>, %b: tensor<4x6xf32>, %c: tensor<5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.gemm' op C of shape 5 and type 'tensor<5xf32>' does not broadcast to the ?x6 result}}
  %y = heterps.gemm %a, %b, %c : (tensor<?x4xf32>, tensor<4x6xf32>, tensor<5xf32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @gemm_result(%a: tensor<3x4xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.gemm' op inferred type(s) 'tensor<3x6xf32>' are incompatible with return type(s) of operation 'tensor<3x7xf32>'}}
  %y = heterps.gemm %a, %b : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x7xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.matmul' op operands must have rank 1 or more}}
  %y = heterps.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<3x4xf32>, %b: tensor<4x5xf64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.matmul' op operands have different element types: 'f32' and 'f64'}}
  %y = heterps.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf64>) -> tensor<3x5xf32>
  return
}

// -----

func.func @matmul_inner(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.matmul' op inner dimensions differ: 3x4 times 5x6}}
  %y = heterps.matmul %a, %b : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.matmul' op operand shapes 2 and 3 do not broadcast (dimension 0: 2 vs 3)}}
  %y = heterps.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x6xf32>) -> tensor<2x3x6xf32>
  return
}

// -----

func.func @add_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.add' op operands have different element types: 'f32' and 'f16'}}
  %y = heterps.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @mul_broadcast(%a: tensor<?x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.mul' op operand shapes ?x4 and 3 do not broadcast (dimension 1: 4 vs 3)}}
  %y = heterps.mul %a, %b : (tensor<?x4xf32>, tensor<3xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @clip_bounds(%x: tensor<4xf32>) {
  // expected-error @+1 {{min 2.000000e+00 is greater than max 1.000000e+00}}
  %y = heterps.clip %x {min = 2.0 : f32, max = 1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>) {
  // expected-error @+1 {{ratio must be in [0, 1), got 1}}
  %y = heterps.dropout %x {ratio = 1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for a rank-2 input}}
  %y = heterps.softmax %x {axis = 2 : i64} : tensor<?x4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.concat' op needs at least one input}}
  %y = heterps.concat {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<?x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.concat' op axis 2 is out of range for rank-2 inputs}}
  %y = heterps.concat %a, %a {axis = 2 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<?x4xf32>, %b: tensor<?x4x1xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.concat' op input 1 is 'tensor<?x4x1xf32>' but input 0 is 'tensor<?x4xf32>'}}
  %y = heterps.concat %a, %b {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x4x1xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @concat_size(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.concat' op input 1 has size 5 in dimension 0 where input 0 has 3}}
  %y = heterps.concat %a, %b {axis = 1 : i64} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{changes the element type from 'f32' to 'f16'}}
  %y = heterps.reshape %x : (tensor<?x4xf32>) -> tensor<?x4xf16>
  return
}

// -----

func.func @reshape_two_dynamic(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{may have one dynamic (batch) dimension on each side, got ?x? to ?}}
  %y = heterps.reshape %x : (tensor<?x?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @reshape_batch(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{cannot reshape ?x4 to 2x2: the batch dimension must stay dynamic}}
  %y = heterps.reshape %x : (tensor<?x4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<?x4x3xf32>) {
  // expected-error @+1 {{changes the number of elements per sample from 12 to 13 (?x4x3 to ?x13), and neither divides the other}}
  %y = heterps.reshape %x : (tensor<?x4x3xf32>) -> tensor<?x13xf32>
  return
}

// -----

func.func @reshape_static_count(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{changes the number of elements from 24 to 12 (4x6 to 2x6)}}
  %y = heterps.reshape %x : (tensor<4x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @reshape_overflow(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{has more elements than a 64-bit size holds (?x4 to ?x4611686018427387904x4)}}
  %y = heterps.reshape %x : (tensor<?x4xf32>) -> tensor<?x4611686018427387904x4xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<?x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.transpose' op perm [0, 0] is not a permutation of the 2 dimensions of the input}}
  %y = heterps.transpose %x {perm = array<i64: 0, 0>} : (tensor<?x4xf32>) -> tensor<?x?xf32>
  return
}

// -----

func.func @reduce_axis(%x: tensor<?x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.reduce_sum' op axis -3 is out of range for a rank-2 input}}
  %y = heterps.reduce_sum %x {axes = array<i64: -3>} : (tensor<?x4xf32>) -> tensor<?x1xf32>
  return
}

// -----

func.func @reduce_twice(%x: tensor<?x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.reduce_mean' op axis -1 is reduced twice}}
  %y = heterps.reduce_mean %x {axes = array<i64: 1, -1>} : (tensor<?x4xf32>) -> tensor<?x1xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{input must be N x C x ..., got rank 1}}
  %y = heterps.batch_norm %x, %c, %c, %c, %c : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<?x4x2x2xf32>, %c: tensor<4xf32>, %v: tensor<3xf32>) {
  // expected-error @+1 {{variance must have shape 4 (the channels of the input), got 3}}
  %y = heterps.batch_norm %x, %c, %c, %c, %v : (tensor<?x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<?x4x2x2xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<?x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{axis 5 is out of range for a rank-2 input}}
  %y = heterps.layer_norm %x, %g {axis = 5 : i64} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<?x4xf32>, %g: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{bias must have shape 4 (the normalised dimensions), got 5}}
  %y = heterps.layer_norm %x, %g, %b : (tensor<?x4xf32>, tensor<4xf32>, tensor<5xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<?x3xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op input must be N x C x spatial..., got rank 2}}
  %y = heterps.conv %x, %w : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @conv_filter_rank(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op filter has rank 3, expected 4 (M x C/group x kernel...)}}
  %y = heterps.conv %x, %w : (tensor<?x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<?x4x6x6xf32>
  return
}

// -----

func.func @conv_filter_type(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op filter element type 'f16' differs from the input's 'f32'}}
  %y = heterps.conv %x, %w : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<?x4x6x6xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<?x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op group 4 must be positive and divide the 6 output channels}}
  %y = heterps.conv %x, %w {group = 4 : i64} : (tensor<?x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<?x6x6x6xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<?x4x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op input has 4 channels, filter expects 3 x group 1}}
  %y = heterps.conv %x, %w : (tensor<?x4x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<?x6x6x6xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<?x3x8x8xf32>, %w: tensor<6x3x3x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op bias must have shape 6, got 5}}
  %y = heterps.conv %x, %w, %b : (tensor<?x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<5xf32>) -> tensor<?x6x6x6xf32>
  return
}

// -----

func.func @conv_strides(%x: tensor<?x3x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op strides has 1 entries for 2 spatial dimensions}}
  %y = heterps.conv %x, %w {strides = array<i64: 2>} : (tensor<?x3x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<?x6x3x3xf32>
  return
}

// -----

func.func @conv_dilations(%x: tensor<?x3x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op dilations has 3 entries for 2 spatial dimensions}}
  %y = heterps.conv %x, %w {dilations = array<i64: 1, 1, 1>} : (tensor<?x3x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<?x6x6x6xf32>
  return
}

// -----

func.func @conv_pads(%x: tensor<?x3x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op pads has 2 entries, expected 4 (begins then ends)}}
  %y = heterps.conv %x, %w {pads = array<i64: 1, 1>} : (tensor<?x3x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<?x6x8x8xf32>
  return
}

// -----

func.func @conv_zero_stride(%x: tensor<?x3x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op spatial dimension 1 has stride 0, dilation 1, padding 0: strides and dilations must be positive, padding non-negative}}
  %y = heterps.conv %x, %w {strides = array<i64: 1, 0>} : (tensor<?x3x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<?x6x6x6xf32>
  return
}

// -----

func.func @conv_fit(%x: tensor<?x3x2x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv' op kernel of 3 (dilation 1) does not fit spatial size 2 (padding 0) in dimension 2}}
  %y = heterps.conv %x, %w : (tensor<?x3x2x8xf32>, tensor<6x3x3x3xf32>) -> tensor<?x6x1x6xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<?x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.max_pool' op input must be N x C x spatial..., got rank 2}}
  %y = heterps.max_pool %x {kernel_shape = array<i64: 2>} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.max_pool' op kernel_shape has 1 entries for 2 spatial dimensions}}
  %y = heterps.max_pool %x {kernel_shape = array<i64: 2>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x7x7xf32>
  return
}

// -----

func.func @pool_strides(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.avg_pool' op strides has 3 entries for 2 spatial dimensions}}
  %y = heterps.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1, 1>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x7x7xf32>
  return
}

// -----

func.func @pool_pads(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.avg_pool' op pads has 3 entries, expected 4 (begins then ends)}}
  %y = heterps.avg_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x7x7xf32>
  return
}

// -----

func.func @pool_negative_pad(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.max_pool' op spatial dimension 0 has kernel 2, stride 1, dilation 1, padding -2: kernels, strides and dilations must be positive (kernels and dilations at most 2^20), padding non-negative}}
  %y = heterps.max_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: -1, 0, -1, 0>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x5x7xf32>
  return
}

// -----

func.func @pool_zero_dilation(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.avg_pool' op spatial dimension 1 has kernel 2, stride 1, dilation 0, padding 0}}
  %y = heterps.avg_pool %x {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 1, 0>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x7x7xf32>
  return
}

// -----

func.func @pool_dilations_count(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.max_pool' op dilations has 1 entries for 2 spatial dimensions}}
  %y = heterps.max_pool %x {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 2>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x7x7xf32>
  return
}

// -----

func.func @pool_dilated_fit(%x: tensor<?x3x8x8xf32>) {
  // A 3-tap window with dilation 4 spans 9 elements.
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.max_pool' op window of 9 does not fit spatial size 8 (padding 0) in dimension 2}}
  %y = heterps.max_pool %x {kernel_shape = array<i64: 3, 2>, dilations = array<i64: 4, 1>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x1x7xf32>
  return
}

// -----

func.func @pool_fit(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.max_pool' op window of 9 does not fit spatial size 8 (padding 0) in dimension 3}}
  %y = heterps.max_pool %x {kernel_shape = array<i64: 2, 9>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x7x1xf32>
  return
}

// -----

func.func @global_pool_rank(%x: tensor<?x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.global_avg_pool' op input must be N x C x spatial..., got rank 2}}
  %y = heterps.global_avg_pool %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return
}

// -----

func.func @bce_shapes(%p: tensor<?x1xf32>, %y: tensor<?x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.bce_loss' op prediction 'tensor<?x1xf32>' and target 'tensor<?x2xf32>' differ}}
  %l = heterps.bce_loss %p, %y : (tensor<?x1xf32>, tensor<?x2xf32>) -> tensor<f32>
  return
}

// -----

func.func @softmax_ce_rank(%p: tensor<?xf32>, %y: tensor<?xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.softmax_ce_loss' op scores must be N x C x ..., got rank 1}}
  %l = heterps.softmax_ce_loss %p, %y : (tensor<?xf32>, tensor<?xi64>) -> tensor<f32>
  return
}

// -----

func.func @nll_labels(%p: tensor<?x10xf32>, %y: tensor<?x10xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.nll_loss' op labels must have shape ? (the scores ?x10 without the class dimension), got ?x10}}
  %l = heterps.nll_loss %p, %y : (tensor<?x10xf32>, tensor<?x10xi64>) -> tensor<f32>
  return
}

// -----

func.func @pull_keys(%k: tensor<?x1xi64>) {
  // expected-error @+1 {{keys must be 1-D, got shape ?x1}}
  %r = heterps.ps_pull @t[%k] : (tensor<?x1xi64>) -> tensor<?x4xf32>
  return
}

// -----

func.func @pull_rows(%k: tensor<5xi64>) {
  // expected-error @+1 {{rows must be 5 x dim (one row per key), got 4x4}}
  %r = heterps.ps_pull @t[%k] : (tensor<5xi64>) -> tensor<4x4xf32>
  return
}

// -----

func.func @push_gradients(%k: tensor<?xi64>, %g: tensor<?xf32>) {
  // expected-error @+1 {{gradients must be ? x dim (one row per key), got ?}}
  heterps.ps_push @t[%k], %g : tensor<?xi64>, tensor<?xf32>
  return
}

// -----

heterps.embedding_table @t {vocab = 10 : i64, dim = 4 : i64, initializer = #heterps.init<zeros>}
func.func @pull_dim(%k: tensor<?xi64>) {
  // expected-error @+1 {{rows are 'tensor<?x8xf32>' but table @t has rows of 4 x f32}}
  %r = heterps.ps_pull @t[%k] : (tensor<?xi64>) -> tensor<?x8xf32>
  return
}

// -----

func.func @push_missing(%k: tensor<?xi64>, %g: tensor<?x4xf32>) {
  // expected-error @+1 {{@t does not name a heterps.embedding_table}}
  heterps.ps_push @t[%k], %g : tensor<?xi64>, tensor<?x4xf32>
  return
}

// -----

heterps.embedding_table @t {vocab = 10 : i64, dim = 4 : i64, initializer = #heterps.init<zeros>}
func.func @push_dim(%k: tensor<?xi64>, %g: tensor<?x3xf32>) {
  // expected-error @+1 {{gradients are 'tensor<?x3xf32>' but table @t has rows of 4 x f32}}
  heterps.ps_push @t[%k], %g : tensor<?xi64>, tensor<?x3xf32>
  return
}

// -----

func.func @conv_transpose_channels(%x: tensor<?x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv_transpose' op input has 3 channels, the filter 4}}
  %y = heterps.conv_transpose %x, %w : (tensor<?x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<?x2x10x10xf32>
  return
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<?x4x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv_transpose' op spatial dimension 0 has stride 1, dilation 1, pads 0/0, output_padding 1: strides and dilations must be positive, pads non-negative, output_padding below the stride or the dilation}}
  %y = heterps.conv_transpose %x, %w {output_padding = array<i64: 1, 0>} : (tensor<?x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<?x2x11x10xf32>
  return
}

// -----

func.func @conv_transpose_bias(%x: tensor<?x4x8x8xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.conv_transpose' op bias must have shape 2, got 4}}
  %y = heterps.conv_transpose %x, %w, %b : (tensor<?x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<?x2x10x10xf32>
  return
}

// -----

func.func @segment_reduce_kind(%x: tensor<?x4xf32>, %o: tensor<?xi64>) {
  // expected-error @+1 {{'heterps.segment_reduce' op reduces runs by sum, mean or max, not prod}}
  %y = heterps.segment_reduce prod %x, %o : (tensor<?x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  return
}

// -----

func.func @segment_reduce_offsets_rank(%x: tensor<?x4xf32>, %o: tensor<?x2xi64>) {
  // expected-error @+1 {{'heterps.segment_reduce' op offsets must be 1-D, got 'tensor<?x2xi64>'}}
  %y = heterps.segment_reduce sum %x, %o : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x4xf32>
  return
}

// -----

func.func @segment_reduce_result(%x: tensor<?x4xf32>, %o: tensor<3xi64>) {
  // expected-error @+1 {{'heterps.segment_reduce' op the result 2x4 must have one row per offset and the data's rows: 3x4}}
  %y = heterps.segment_reduce sum %x, %o : (tensor<?x4xf32>, tensor<3xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @segment_reduce_grad_type(%x: tensor<?x4xf32>, %o: tensor<?xi64>, %dy: tensor<?x4xf32>) {
  // expected-error @+1 {{'heterps.segment_reduce_grad' op failed to verify that all of {data, data_grad} have same type}}
  %dx = heterps.segment_reduce_grad mean %x, %o, %dy : (tensor<?x4xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x5xf32>
  return
}

