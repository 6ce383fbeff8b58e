// Round trip of the ops the ONNX frontend adds (gather, slice, cast, expand,
// pad, compare, logical, not, where, arg_extreme, top_k_indices,
// scatter_elements, scatter_nd, resize, cumsum, weighted_nll_loss) and of an embedding table
// with initial rows: parse, print, parse again, in the custom and in the
// generic form.
// RUN: heterps-opt %s | heterps-opt | FileCheck %s
// RUN: heterps-opt %s --mlir-print-op-generic | heterps-opt | FileCheck %s

// CHECK: heterps.embedding_table @rows {dim = 2 : i64, initializer = #heterps.init<zeros>, value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>, vocab = 3 : i64}
heterps.embedding_table @rows {vocab = 3 : i64, dim = 2 : i64, initializer = #heterps.init<zeros>, value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>}

// CHECK-LABEL: func.func @gather_and_lookup
// CHECK-SAME: (%[[IDS:.*]]: tensor<?x8xi64>, %[[X:.*]]: tensor<5x4xf32>, %[[I:.*]]: tensor<2x3xi64>)
func.func @gather_and_lookup(%ids: tensor<?x8xi64>, %x: tensor<5x4xf32>, %i: tensor<2x3xi64>)
    -> (tensor<?x2xf32>, tensor<2x3x4xf32>) {
  // CHECK: %[[C:.*]] = heterps.constant dense<3> : tensor<i64>
  %c = heterps.constant dense<3> : tensor<i64>
  // CHECK: %[[COL:.*]] = heterps.gather %[[IDS]], %[[C]] {axis = 1 : i64} : (tensor<?x8xi64>, tensor<i64>) -> tensor<?xi64>
  %col = heterps.gather %ids, %c {axis = 1 : i64} : (tensor<?x8xi64>, tensor<i64>) -> tensor<?xi64>
  // CHECK: %[[E:.*]] = heterps.embedding_lookup @rows[%[[COL]]] : (tensor<?xi64>) -> tensor<?x2xf32>
  %e = heterps.embedding_lookup @rows[%col] : (tensor<?xi64>) -> tensor<?x2xf32>
  // CHECK: %[[G:.*]] = heterps.gather %[[X]], %[[I]] : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %g = heterps.gather %x, %i : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  // CHECK: return %[[E]], %[[G]]
  return %e, %g : tensor<?x2xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @slice_cast_expand
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xi64>, %[[Y:.*]]: tensor<3x1xf32>)
func.func @slice_cast_expand(%x: tensor<?x8xi64>, %y: tensor<3x1xf32>)
    -> (tensor<?x3xf32>, tensor<2x3x6xf32>, tensor<10xf32>) {
  // CHECK: %[[S:.*]] = heterps.slice %[[X]] {ends = array<i64: 9223372036854775807, 7>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : (tensor<?x8xi64>) -> tensor<?x3xi64>
  %s = heterps.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 9223372036854775807, 7>, steps = array<i64: 1, 2>} : (tensor<?x8xi64>) -> tensor<?x3xi64>
  // CHECK: %[[F:.*]] = heterps.cast %[[S]] : (tensor<?x3xi64>) -> tensor<?x3xf32>
  %f = heterps.cast %s : (tensor<?x3xi64>) -> tensor<?x3xf32>
  // CHECK: %[[E:.*]] = heterps.expand %[[Y]] {shape = array<i64: 2, 1, 6>} : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
  %e = heterps.expand %y {shape = array<i64: 2, 1, 6>} : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
  // Backwards with a negative step: 9, 7, ..., 0 clamps to 10 elements.
  %c = heterps.constant dense<1.0> : tensor<10xf32>
  // CHECK: heterps.slice %{{.*}} {ends = array<i64: -1>, starts = array<i64: 9>, steps = array<i64: -1>} : (tensor<10xf32>) -> tensor<10xf32>
  %r = heterps.slice %c {starts = array<i64: 9>, ends = array<i64: -1>, steps = array<i64: -1>} : (tensor<10xf32>) -> tensor<10xf32>
  return %f, %e, %r : tensor<?x3xf32>, tensor<2x3x6xf32>, tensor<10xf32>
}

// CHECK-LABEL: func.func @weighted_nll_loss
// CHECK-SAME: (%[[LP:.*]]: tensor<?x5x2xf32>, %[[Y:.*]]: tensor<?x2xi64>, %[[W:.*]]: tensor<5xf32>)
func.func @weighted_nll_loss(%lp: tensor<?x5x2xf32>, %y: tensor<?x2xi64>, %w: tensor<5xf32>)
    -> (tensor<f32>, tensor<?x2xf32>) {
  // CHECK: heterps.weighted_nll_loss %[[LP]], %[[Y]], %[[W]] {ignore_index = -1 : i64} : (tensor<?x5x2xf32>, tensor<?x2xi64>, tensor<5xf32>) -> tensor<f32>
  %l = heterps.weighted_nll_loss %lp, %y, %w {ignore_index = -1 : i64} : (tensor<?x5x2xf32>, tensor<?x2xi64>, tensor<5xf32>) -> tensor<f32>
  // CHECK: heterps.weighted_nll_loss %[[LP]], %[[Y]] {ignore_index = 0 : i64, reduction = #heterps.reduction<none>} : (tensor<?x5x2xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
  %n = heterps.weighted_nll_loss %lp, %y {ignore_index = 0 : i64, reduction = #heterps.reduction<none>} : (tensor<?x5x2xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
  return %l, %n : tensor<f32>, tensor<?x2xf32>
}

// CHECK-LABEL: func.func @pads
func.func @pads(%x: tensor<?x3x8x8xf32>, %i: tensor<4x6xi64>) {
  // CHECK: heterps.pad %{{.*}} {mode = "reflect", pads = array<i64: 0, 0, 1, 2, 0, 0, 2, 1>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x11x11xf32>
  %r = heterps.pad %x {mode = "reflect", pads = array<i64: 0, 0, 1, 2, 0, 0, 2, 1>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x11x11xf32>
  // CHECK: heterps.pad %{{.*}} {pads = array<i64: 1, 0, 0, 2>, value = -1.000000e+00 : f64} : (tensor<4x6xi64>) -> tensor<5x8xi64>
  %c = heterps.pad %i {pads = array<i64: 1, 0, 0, 2>, value = -1.0 : f64} : (tensor<4x6xi64>) -> tensor<5x8xi64>
  return
}

// CHECK-LABEL: func.func @masks
func.func @masks(%x: tensor<?x8xf32>, %t: tensor<f32>, %b: tensor<8xi1>) {
  // CHECK: %[[M:.*]] = heterps.compare lt %{{.*}}, %{{.*}} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xi1>
  %m = heterps.compare lt %x, %t : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xi1>
  // CHECK: %[[A:.*]] = heterps.logical and %[[M]], %{{.*}} : (tensor<?x8xi1>, tensor<8xi1>) -> tensor<?x8xi1>
  %a = heterps.logical and %m, %b : (tensor<?x8xi1>, tensor<8xi1>) -> tensor<?x8xi1>
  // CHECK: %[[N:.*]] = heterps.not %[[A]] : tensor<?x8xi1>
  %n = heterps.not %a : tensor<?x8xi1>
  // CHECK: heterps.where %[[N]], %{{.*}}, %{{.*}} : (tensor<?x8xi1>, tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %w = heterps.where %n, %x, %t : (tensor<?x8xi1>, tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  return
}

// CHECK-LABEL: func.func @arg_extremes
func.func @arg_extremes(%x: tensor<?x10xf32>) {
  // CHECK: heterps.arg_extreme max %{{.*}} {axis = 1 : i64, keepdims = false} : (tensor<?x10xf32>) -> tensor<?xi64>
  %i = heterps.arg_extreme max %x {axis = 1 : i64, keepdims = false} : (tensor<?x10xf32>) -> tensor<?xi64>
  // CHECK: heterps.arg_extreme min %{{.*}} {axis = 1 : i64, select_last_index = true} : (tensor<?x10xf32>) -> tensor<?x1xi64>
  %j = heterps.arg_extreme min %x {axis = 1 : i64, select_last_index = true} : (tensor<?x10xf32>) -> tensor<?x1xi64>
  return
}

// CHECK-LABEL: func.func @scatter
func.func @scatter(%x: tensor<?x10xf32>, %i: tensor<?x3xi64>, %u: tensor<?x3xf32>) -> tensor<?x10xf32> {
  // CHECK: %[[S:.*]] = heterps.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, reduction = "add"} : (tensor<?x10xf32>, tensor<?x3xi64>, tensor<?x3xf32>) -> tensor<?x10xf32>
  %s = heterps.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<?x10xf32>, tensor<?x3xi64>, tensor<?x3xf32>) -> tensor<?x10xf32>
  // CHECK: heterps.scatter_elements_grad %{{.*}}, %[[S]] {axis = 1 : i64} : (tensor<?x3xi64>, tensor<?x10xf32>) -> (tensor<?x10xf32>, tensor<?x3xf32>)
  %dd, %du = heterps.scatter_elements_grad %i, %s {axis = 1 : i64} : (tensor<?x3xi64>, tensor<?x10xf32>) -> (tensor<?x10xf32>, tensor<?x3xf32>)
  return %s : tensor<?x10xf32>
}

// CHECK-LABEL: func.func @scatter_nd
func.func @scatter_nd(%x: tensor<?x4x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4x4xf32>) -> tensor<?x4x4xf32> {
  // CHECK: %[[S:.*]] = heterps.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = "mul"} : (tensor<?x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<?x4x4xf32>
  %s = heterps.scatter_nd %x, %i, %u {reduction = "mul"} : (tensor<?x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<?x4x4xf32>
  // CHECK: heterps.scatter_nd_grad %{{.*}}, %[[S]] : (tensor<2x1xi64>, tensor<?x4x4xf32>) -> (tensor<?x4x4xf32>, tensor<2x4x4xf32>)
  %dd, %du = heterps.scatter_nd_grad %i, %s : (tensor<2x1xi64>, tensor<?x4x4xf32>) -> (tensor<?x4x4xf32>, tensor<2x4x4xf32>)
  return %s : tensor<?x4x4xf32>
}

// CHECK-LABEL: func.func @resize
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x8x8xf32>)
func.func @resize(%x: tensor<?x3x8x8xf32>) -> tensor<?x3x8x8xf32> {
  // CHECK: %[[Y:.*]] = heterps.resize %[[X]] {mode = "cubic", scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 1.500000e+00>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x12xf32>
  %y = heterps.resize %x {mode = "cubic", scales = array<f64: 1.0, 1.0, 2.0, 1.5>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x12xf32>
  // CHECK: %[[Z:.*]] = heterps.resize %[[X]] {coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = 1.000000e+01 : f64, mode = "linear", roi = array<f64: 0.000000e+00, 0.000000e+00, 4.000000e-01, 6.000000e-01, 1.000000e+00, 1.000000e+00, 1.200000e+00, 1.700000e+00>, scales = array<f64: 1.000000e+00, 1.000000e+00, 3.750000e-01, 3.750000e-01>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x3x3xf32>
  %z = heterps.resize %x {mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = 10.0, roi = array<f64: 0.0, 0.0, 0.4, 0.6, 1.0, 1.0, 1.2, 1.7>, scales = array<f64: 1.0, 1.0, 0.375, 0.375>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x3x3xf32>
  // CHECK: heterps.resize_grad %[[X]], %[[Y]] {mode = "cubic", scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 1.500000e+00>} : (tensor<?x3x8x8xf32>, tensor<?x3x16x12xf32>) -> tensor<?x3x8x8xf32>
  %dx = heterps.resize_grad %x, %y {mode = "cubic", scales = array<f64: 1.0, 1.0, 2.0, 1.5>} : (tensor<?x3x8x8xf32>, tensor<?x3x16x12xf32>) -> tensor<?x3x8x8xf32>
  return %dx : tensor<?x3x8x8xf32>
}

// CHECK-LABEL: func.func @top_k
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>)
func.func @top_k(%x: tensor<?x10xf32>) -> tensor<?x3xf32> {
  // CHECK: %[[I:.*]] = heterps.top_k_indices %[[X]] {axis = 1 : i64, k = 3 : i64} : (tensor<?x10xf32>) -> tensor<?x3xi64>
  %i = heterps.top_k_indices %x {axis = 1 : i64, k = 3 : i64} : (tensor<?x10xf32>) -> tensor<?x3xi64>
  // CHECK: heterps.top_k_indices %[[X]] {k = 2 : i64, largest = false} : (tensor<?x10xf32>) -> tensor<?x2xi64>
  %j = heterps.top_k_indices %x {k = 2 : i64, largest = false} : (tensor<?x10xf32>) -> tensor<?x2xi64>
  // CHECK: heterps.gather_elements %[[X]], %[[I]] {axis = 1 : i64}
  %v = heterps.gather_elements %x, %i {axis = 1 : i64} : (tensor<?x10xf32>, tensor<?x3xi64>) -> tensor<?x3xf32>
  return %v : tensor<?x3xf32>
}

// CHECK-LABEL: func.func @cumsums
func.func @cumsums(%x: tensor<?x8xf32>) {
  // CHECK: heterps.cumsum %{{.*}} {axis = 1 : i64, exclusive = true, reverse = true} : tensor<?x8xf32>
  %c = heterps.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<?x8xf32>
  return
}
