// Every verifier message of the ops the ONNX frontend adds.
// RUN: heterps-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{initial value of table @t has type 'tensor<4x2xf32>', expected 'tensor<3x2xf32>'}}
heterps.embedding_table @t {vocab = 3 : i64, dim = 2 : i64, initializer = #heterps.init<zeros>, value = dense<0.0> : tensor<4x2xf32>}

// -----

func.func @gather_axis(%x: tensor<5x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.gather: axis 2 is out of range for rank 2}}
  %g = "heterps.gather"(%x, %i) <{axis = 2 : i64}> : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_type(%x: tensor<5x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.gather' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  %g = heterps.gather %x, %i : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.slice: needs one start, end and step per dimension (2), got 1, 1 and 1}}
  %s = "heterps.slice"(%x) <{starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 1>}> : (tensor<4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.slice: step of dimension 0 is zero}}
  %s = "heterps.slice"(%x) <{starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 0>}> : (tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @slice_batch(%x: tensor<?x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.slice: dynamic dimension 0 must be kept whole (start 0, end INT64_MAX, step 1)}}
  %s = "heterps.slice"(%x) <{starts = array<i64: 1, 0>, ends = array<i64: 9223372036854775807, 8>, steps = array<i64: 1, 1>}> : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4xi64>) {
  // expected-error @+1 {{'heterps.cast' op requires the same shape for all operands and results}}
  %c = heterps.cast %x : (tensor<4xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @cast_complex(%x: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{'heterps.cast' op casts numbers only, got 'complex<f32>' to 'f32'}}
  %c = heterps.cast %x : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  return
}

// -----

func.func @expand(%x: tensor<3x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.expand: cannot broadcast 3x2 to 4x3}}
  %e = "heterps.expand"(%x) <{shape = array<i64: 4, 3>}> : (tensor<3x2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @loss_labels(%lp: tensor<4x5xf32>, %y: tensor<3xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.weighted_nll_loss: labels of shape 3 do not match log_probs 4x5 without dimension 1}}
  %l = "heterps.weighted_nll_loss"(%lp, %y) : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_weight(%lp: tensor<4x5xf32>, %y: tensor<4xi64>, %w: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.weighted_nll_loss: weight of shape 4 must have one of 5 classes}}
  %l = "heterps.weighted_nll_loss"(%lp, %y, %w) : (tensor<4x5xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @pad_mode(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.pad: unknown mode 'wrap'; expected constant, reflect or edge}}
  %p = heterps.pad %x {mode = "wrap", pads = array<i64: 1, 1, 1, 1>} : (tensor<4x6xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.pad: needs 2 x rank (4) pads, got 2}}
  %p = heterps.pad %x {pads = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @pad_negative(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.pad: pads of dimension 1 (-1, 0) are negative}}
  %p = heterps.pad %x {pads = array<i64: 0, -1, 0, 0>} : (tensor<4x6xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @pad_batch(%x: tensor<?x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.pad: dynamic dimension 0 cannot be padded}}
  %p = heterps.pad %x {pads = array<i64: 1, 0, 0, 0>} : (tensor<?x6xf32>) -> tensor<?x6xf32>
  return
}

// -----

func.func @pad_reflect(%x: tensor<4x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.pad: reflect pads of dimension 1 (2, 0) must be below its size 2}}
  %p = heterps.pad %x {mode = "reflect", pads = array<i64: 0, 2, 0, 0>} : (tensor<4x2xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @pad_result(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.pad' op inferred type(s) 'tensor<6x8xf32>' are incompatible with return type(s) of operation 'tensor<6x9xf32>'}}
  %p = heterps.pad %x {pads = array<i64: 1, 1, 1, 1>} : (tensor<4x6xf32>) -> tensor<6x9xf32>
  return
}

// -----

func.func @compare_kind(%x: tensor<4xf32>) {
  // expected-error @+2 {{'ne' is not an elementwise comparison; expected one of: eq, lt, gt, le, ge}}
  // expected-error @+1 {{failed to parse HeterPS_CompareKindAttr}}
  %m = heterps.compare ne %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_types(%x: tensor<4xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.compare' op operands have different element types: 'f32' and 'i64'}}
  %m = heterps.compare eq %x, %i : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @logical_kind(%a: tensor<4xi1>) {
  // expected-error @+2 {{'nand' is not an elementwise boolean operation; expected one of: and, or, xor}}
  // expected-error @+1 {{failed to parse HeterPS_LogicKindAttr}}
  %m = heterps.logical nand %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @where_shapes(%c: tensor<3xi1>, %x: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'heterps.where' op operand shapes 3 and 4 do not broadcast (dimension 0: 3 vs 4)}}
  %w = heterps.where %c, %x, %x : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_condition(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %w = heterps.where %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @arg_extreme_kind(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{'median' is not an extreme that arg_extreme finds; expected one of: max, min}}
  // expected-error @+1 {{failed to parse HeterPS_ExtremeKindAttr}}
  %i = heterps.arg_extreme median %x {axis = 1 : i64} : (tensor<4x10xf32>) -> tensor<4x1xi64>
  return
}

// -----

func.func @arg_extreme_axis(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.arg_extreme: axis 2 is out of range for rank 2}}
  %i = heterps.arg_extreme max %x {axis = 2 : i64} : (tensor<4x10xf32>) -> tensor<4x1xi64>
  return
}

// -----

func.func @scatter_updates(%x: tensor<4x10xf32>, %i: tensor<4x3xi64>, %u: tensor<4x2xf32>) {
  // expected-error @+1 {{'heterps.scatter_elements' op updates 4x2 must have the indices' shape 4x3}}
  %s = heterps.scatter_elements %x, %i, %u {axis = 1 : i64} : (tensor<4x10xf32>, tensor<4x3xi64>, tensor<4x2xf32>) -> tensor<4x10xf32>
  return
}

// -----

func.func @scatter_reduction(%x: tensor<4x10xf32>, %i: tensor<4x3xi64>, %u: tensor<4x3xf32>) {
  // expected-error @+1 {{'heterps.scatter_elements' op reduction 'mul' is not one of: none, add}}
  %s = heterps.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "mul"} : (tensor<4x10xf32>, tensor<4x3xi64>, tensor<4x3xf32>) -> tensor<4x10xf32>
  return
}

// -----

func.func @scatter_nd_updates(%x: tensor<4x4x4xf32>, %i: tensor<2x2xi64>, %u: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'heterps.scatter_nd' op updates 2x4x4 must have shape 2x4 (indices[:-1] + data[2:])}}
  %s = heterps.scatter_nd %x, %i, %u : (tensor<4x4x4xf32>, tensor<2x2xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
  return
}

// -----

func.func @scatter_nd_tuple(%x: tensor<4x4xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) {
  // expected-error @+1 {{'heterps.scatter_nd' op index tuples of 3 entries for data of rank 2}}
  %s = heterps.scatter_nd %x, %i, %u : (tensor<4x4xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_nd_grad_reduction(%i: tensor<2x1xi64>, %dy: tensor<4x4xf32>) {
  // expected-error @+1 {{'heterps.scatter_nd_grad' op reduction 'mul' is not one of: none, add}}
  %dd, %du = heterps.scatter_nd_grad %i, %dy {reduction = "mul"} : (tensor<2x1xi64>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @resize_mode(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+1 {{'heterps.resize' op mode 'area' is not nearest, linear or cubic}}
  %y = heterps.resize %x {mode = "area", scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x16xf32>
  return
}

// -----

func.func @resize_batch(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+1 {{'heterps.resize' op dimension 0 of 'tensor<?x3x8x8xf32>' and 'tensor<?x3x16x16xf32>': a dynamic (batch) dimension is not resized (scale 1), a static one stays static}}
  %y = heterps.resize %x {scales = array<f64: 2.0, 1.0, 2.0, 2.0>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x16xf32>
  return
}

// -----

func.func @resize_scales(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+1 {{'heterps.resize' op scales[2] is 0.000000e+00, expected a positive number}}
  %y = heterps.resize %x {scales = array<f64: 1.0, 1.0, 0.0, 2.0>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x16xf32>
  return
}

// -----

func.func @resize_roi(%x: tensor<?x3x8x8xf32>) {
  // expected-error @+1 {{'heterps.resize' op tf_crop_and_resize needs roi of 8 entries (starts, then ends)}}
  %y = heterps.resize %x {coordinate_transformation_mode = "tf_crop_and_resize", scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x16xf32>
  return
}

// -----

func.func @top_k_axis(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.top_k_indices: axis -3 is out of range for rank 2}}
  %i = heterps.top_k_indices %x {axis = -3 : i64, k = 2 : i64} : (tensor<4x10xf32>) -> tensor<4x2xi64>
  return
}

// -----

func.func @top_k_too_many(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.top_k_indices: k = 11 is not between 0 and the axis' size 10}}
  %i = heterps.top_k_indices %x {k = 11 : i64} : (tensor<4x10xf32>) -> tensor<4x11xi64>
  return
}

// -----

func.func @cumsum_axis(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{'heterps.cumsum' op axis 2 is out of range for rank 2}}
  %c = heterps.cumsum %x {axis = 2 : i64} : tensor<4x10xf32>
  return
}

// -----

func.func @gather_elements_rank(%d: tensor<4x10xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.gather_elements: indices of rank 1 for data of rank 2}}
  %g = heterps.gather_elements %d, %i {axis = 1 : i64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_elements_size(%d: tensor<4x10xf32>, %i: tensor<5x3xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{heterps.gather_elements: indices dimension 0 (5) is larger than the data's (4)}}
  %g = heterps.gather_elements %d, %i {axis = 1 : i64} : (tensor<4x10xf32>, tensor<5x3xi64>) -> tensor<5x3xf32>
  return
}
