// Every verifier message of the layers' backward ops.
// RUN: heterps-opt %s -split-input-file -verify-diagnostics

func.func @conv_input_grad_type(%x: tensor<?x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %dy: tensor<?x4x8x8xf32>) {
  // expected-error @+1 {{input gradient type 'tensor<?x3x6x6xf32>' differs from the input type 'tensor<?x3x8x8xf32>'}}
  %dx, %df, %db = heterps.conv_grad %x, %f, %dy : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @conv_bias_grad(%x: tensor<?x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %dy: tensor<?x4x8x8xf32>) {
  // expected-error @+1 {{bias gradient must have shape 4 (the filter's first dimension), got 3}}
  %dx, %df, %db = heterps.conv_grad %x, %f, %dy : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @conv_result_grad_channels(%x: tensor<?x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %dy: tensor<?x5x8x8xf32>) {
  // expected-error @+1 {{result gradient has 5 channels, the filter 4}}
  %dx, %df, %db = heterps.conv_grad %x, %f, %dy : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<?x5x8x8xf32>) -> (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @conv_pads(%x: tensor<?x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %dy: tensor<?x4x8x8xf32>) {
  // expected-error @+1 {{pads has 2 entries, expected 4 (begins then ends)}}
  %dx, %df, %db = heterps.conv_grad %x, %f, %dy {pads = array<i64: 1, 1>} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @conv_group(%x: tensor<?x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %dy: tensor<?x4x8x8xf32>) {
  // expected-error @+1 {{group 3 must be positive and divide the 4 output channels}}
  %dx, %df, %db = heterps.conv_grad %x, %f, %dy {group = 3 : i64} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @conv_rank(%x: tensor<?x3xf32>, %f: tensor<4x3xf32>, %dy: tensor<?x4xf32>) {
  // expected-error @+1 {{input must be N x C x spatial..., got rank 2}}
  %dx, %df, %db = heterps.conv_grad %x, %f, %dy : (tensor<?x3xf32>, tensor<4x3xf32>, tensor<?x4xf32>) -> (tensor<?x3xf32>, tensor<4x3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @pool_kind(%y: tensor<?x4x8x8xf32>, %p: tensor<?x4x4x4xf32>) {
  // expected-error @+2 {{'min' is not a pooling kind; expected one of: max, avg}}
  // expected-error @+1 {{failed to parse HeterPS_PoolKindAttr}}
  %d = heterps.pool_grad min %y, %p, %p {kernel_shape = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
  return
}

// -----

func.func @pool_kernel(%y: tensor<?x4x8x8xf32>, %p: tensor<?x4x4x4xf32>) {
  // expected-error @+1 {{kernel_shape has 1 entries, expected 2 (one per spatial dimension)}}
  %d = heterps.pool_grad max %y, %p, %p {kernel_shape = array<i64: 2>} : (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
  return
}

// -----

func.func @pool_dilations(%y: tensor<?x4x8x8xf32>, %p: tensor<?x4x4x4xf32>) {
  // expected-error @+1 {{dilations has 3 entries, expected 2 (one per spatial dimension)}}
  %d = heterps.pool_grad max %y, %p, %p {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 1, 2, 2>} : (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
  return
}

// -----

func.func @pool_kernel_sign(%y: tensor<?x4x8x8xf32>, %p: tensor<?x4x4x4xf32>) {
  // expected-error @+1 {{kernel_shape entries must be positive, got 0}}
  %d = heterps.pool_grad max %y, %p, %p {kernel_shape = array<i64: 2, 0>} : (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
  return
}

// -----

func.func @pool_result_grad(%y: tensor<?x4x8x8xf32>, %p: tensor<?x4x4x4xf32>, %dp: tensor<?x4x2x2xf32>) {
  // expected-error @+1 {{result gradient type 'tensor<?x4x2x2xf32>' differs from the result type 'tensor<?x4x4x4xf32>'}}
  %d = heterps.pool_grad avg %y, %p, %dp {kernel_shape = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>, tensor<?x4x2x2xf32>) -> tensor<?x4x8x8xf32>
  return
}

// -----

func.func @batch_norm_scale(%y: tensor<?x4x8x8xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{scale must have shape 4 (the channels of the input), got 3}}
  %a, %b, %c = heterps.batch_norm_grad %y, %s, %y : (tensor<?x4x8x8xf32>, tensor<3xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8x8xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_scale_grad(%y: tensor<?x4x8x8xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{scale gradient type 'tensor<4xf64>' differs from the scale type 'tensor<4xf32>'}}
  %a, %b, %c = heterps.batch_norm_grad %y, %s, %y : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8x8xf32>, tensor<4xf64>, tensor<4xf32>)
  return
}

// -----

func.func @batch_norm_rank(%y: tensor<?xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{input must be N x C x ..., got rank 1}}
  %a, %b, %c = heterps.batch_norm_grad %y, %s, %y : (tensor<?xf32>, tensor<4xf32>, tensor<?xf32>) -> (tensor<?xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_axis(%h: tensor<?x64xf32>, %s: tensor<64xf32>) {
  // expected-error @+1 {{axis 2 is out of range for a rank-2 input}}
  %a, %b, %c = heterps.layer_norm_grad %h, %s, %h {axis = 2 : i64} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @layer_norm_scale(%h: tensor<?x64xf32>, %s: tensor<32xf32>) {
  // expected-error @+1 {{scale must have shape 64 (the normalised dimensions), got 32}}
  %a, %b, %c = heterps.layer_norm_grad %h, %s, %h : (tensor<?x64xf32>, tensor<32xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<32xf32>, tensor<32xf32>)
  return
}

// -----

func.func @layer_norm_input_grad(%h: tensor<?x64xf32>, %s: tensor<64xf32>) {
  // expected-error @+1 {{input gradient type 'tensor<?x32xf32>' differs from the input type 'tensor<?x64xf32>'}}
  %a, %b, %c = heterps.layer_norm_grad %h, %s, %h : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @softmax_axis(%h: tensor<?x64xf32>) {
  // expected-error @+1 {{axis 3 is out of range for a rank-2 input}}
  %d = heterps.softmax_grad %h, %h {axis = 3 : i64} : tensor<?x64xf32>
  return
}

// -----

func.func @gather_grad_result_grad(%z: tensor<?x4x3xf32>, %i: tensor<5xi64>, %dg: tensor<?x4x3xf32>) {
  // expected-error @+1 {{result gradient 'tensor<?x4x3xf32>' is not of the gather's result type 'tensor<?x5x3xf32>'}}
  %dz = heterps.gather_grad %z, %i, %dg {axis = 1 : i64} : (tensor<?x4x3xf32>, tensor<5xi64>, tensor<?x4x3xf32>) -> tensor<?x4x3xf32>
  return
}

// -----

func.func @gather_grad_axis(%z: tensor<?x4x3xf32>, %i: tensor<5xi64>, %dg: tensor<?x5x3xf32>) {
  // expected-error @+1 {{heterps.gather_grad: axis 3 is out of range for rank 3}}
  %dz = heterps.gather_grad %z, %i, %dg {axis = 3 : i64} : (tensor<?x4x3xf32>, tensor<5xi64>, tensor<?x5x3xf32>) -> tensor<?x4x3xf32>
  return
}

// -----

func.func @gather_grad_type(%z: tensor<?x4x3xf32>, %i: tensor<5xi64>, %dg: tensor<?x5x3xf32>) {
  // expected-error @+1 {{all of {data, data_grad} have same type}}
  %dz = heterps.gather_grad %z, %i, %dg {axis = 1 : i64} : (tensor<?x4x3xf32>, tensor<5xi64>, tensor<?x5x3xf32>) -> tensor<?x4x4xf32>
  return
}

// -----

func.func @slice_grad_result_grad(%x: tensor<?x6xf32>, %dk: tensor<?x3xf32>) {
  // expected-error @+1 {{result gradient 'tensor<?x3xf32>' is not of the slice's result type 'tensor<?x2xf32>'}}
  %dx = heterps.slice_grad %x, %dk {starts = array<i64: 0, 2>, ends = array<i64: 9223372036854775807, 4>, steps = array<i64: 1, 1>} : (tensor<?x6xf32>, tensor<?x3xf32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @slice_grad_bounds(%x: tensor<?x6xf32>, %dk: tensor<?x2xf32>) {
  // expected-error @+1 {{heterps.slice_grad: needs one start, end and step per dimension (2), got 1, 2 and 2}}
  %dx = heterps.slice_grad %x, %dk {starts = array<i64: 2>, ends = array<i64: 9223372036854775807, 4>, steps = array<i64: 1, 1>} : (tensor<?x6xf32>, tensor<?x2xf32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @pad_grad_result_grad(%x: tensor<?x6xf32>, %dy: tensor<?x7xf32>) {
  // expected-error @+1 {{result gradient 'tensor<?x7xf32>' is not of the pad's result type 'tensor<?x8xf32>'}}
  %dx = heterps.pad_grad %x, %dy {pads = array<i64: 0, 1, 0, 1>} : (tensor<?x6xf32>, tensor<?x7xf32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @pad_grad_mode(%x: tensor<?x6xf32>, %dy: tensor<?x8xf32>) {
  // expected-error @+1 {{heterps.pad_grad: unknown mode 'mirror'; expected constant, reflect or edge}}
  %dx = heterps.pad_grad %x, %dy {mode = "mirror", pads = array<i64: 0, 1, 0, 1>} : (tensor<?x6xf32>, tensor<?x8xf32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @conv_transpose_grad_dy(%x: tensor<?x4x3x3xf32>, %w: tensor<4x2x3x3xf32>, %dy: tensor<?x2x6x6xf32>) {
  // expected-error @+1 {{'heterps.conv_transpose_grad' op result gradient 'tensor<?x2x6x6xf32>' is not of the forward op's result type 'tensor<?x2x7x7xf32>'}}
  %dx, %dw, %db = heterps.conv_transpose_grad %x, %w, %dy {strides = array<i64: 2, 2>} : (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<?x2x6x6xf32>) -> (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>)
  return
}

// -----

func.func @conv_transpose_grad_bias(%x: tensor<?x4x3x3xf32>, %w: tensor<4x2x3x3xf32>, %dy: tensor<?x2x7x7xf32>) {
  // expected-error @+1 {{'heterps.conv_transpose_grad' op bias gradient must have shape 2 (the output channels), got 4}}
  %dx, %dw, %db = heterps.conv_transpose_grad %x, %w, %dy {strides = array<i64: 2, 2>} : (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<?x2x7x7xf32>) -> (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>)
  return
}
