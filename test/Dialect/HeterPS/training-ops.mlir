// The backward ops of the layers parse, verify and print back.
// RUN: heterps-opt %s | heterps-opt | FileCheck %s

// CHECK-LABEL: func.func @layer_gradients
func.func @layer_gradients(%x: tensor<?x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %dy: tensor<?x4x8x8xf32>, %y: tensor<?x4x8x8xf32>, %p: tensor<?x4x4x4xf32>, %dp: tensor<?x4x4x4xf32>, %s: tensor<4xf32>, %h: tensor<?x64xf32>, %dh: tensor<?x64xf32>, %ln: tensor<64xf32>) {
  // CHECK: %[[DX:.*]], %[[DF:.*]], %[[DB:.*]] = heterps.conv_grad %{{.*}}, %{{.*}}, %{{.*}} {pads = array<i64: 1, 1, 1, 1>}
  %dx, %df, %db = heterps.conv_grad %x, %f, %dy {pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  // CHECK: %[[DPOOL:.*]] = heterps.pool_grad max
  %dpool = heterps.pool_grad max %y, %p, %dp {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
  // CHECK: heterps.batch_norm_grad
  %dbn, %dscale, %dbias = heterps.batch_norm_grad %y, %s, %dy : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: heterps.layer_norm_grad
  %dln, %dls, %dlb = heterps.layer_norm_grad %h, %ln, %dh {axis = -1 : i64} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>)
  // CHECK: heterps.softmax_grad %{{.*}}, %{{.*}} {axis = 1 : i64, log = true} : tensor<?x64xf32>
  %dsm = heterps.softmax_grad %h, %dh {axis = 1 : i64, log = true} : tensor<?x64xf32>
  return
}

// CHECK-LABEL: func.func @indexing_gradients
func.func @indexing_gradients(%z: tensor<?x4x3xf32>, %i: tensor<5xi64>, %dg: tensor<?x5x3xf32>, %x: tensor<?x6xf32>, %dk: tensor<?x2xf32>, %dpad: tensor<?x8xf32>) {
  // CHECK: heterps.gather_grad %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<?x4x3xf32>, tensor<5xi64>, tensor<?x5x3xf32>) -> tensor<?x4x3xf32>
  %dz = heterps.gather_grad %z, %i, %dg {axis = 1 : i64} : (tensor<?x4x3xf32>, tensor<5xi64>, tensor<?x5x3xf32>) -> tensor<?x4x3xf32>
  // CHECK: heterps.slice_grad %{{.*}}, %{{.*}} {ends = array<i64: 9223372036854775807, 4>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : (tensor<?x6xf32>, tensor<?x2xf32>) -> tensor<?x6xf32>
  %dx = heterps.slice_grad %x, %dk {starts = array<i64: 0, 2>, ends = array<i64: 9223372036854775807, 4>, steps = array<i64: 1, 1>} : (tensor<?x6xf32>, tensor<?x2xf32>) -> tensor<?x6xf32>
  // CHECK: heterps.pad_grad %{{.*}}, %{{.*}} {mode = "edge", pads = array<i64: 0, 1, 0, 1>} : (tensor<?x6xf32>, tensor<?x8xf32>) -> tensor<?x6xf32>
  %dp = heterps.pad_grad %x, %dpad {mode = "edge", pads = array<i64: 0, 1, 0, 1>} : (tensor<?x6xf32>, tensor<?x8xf32>) -> tensor<?x6xf32>
  return
}

// CHECK-LABEL: func.func @gather_elements_gradient
func.func @gather_elements_gradient(%d: tensor<?x10xf32>, %i: tensor<?x3xi64>, %dg: tensor<?x3xf32>) {
  // CHECK: heterps.gather_elements_grad %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<?x10xf32>, tensor<?x3xi64>, tensor<?x3xf32>) -> tensor<?x10xf32>
  %dd = heterps.gather_elements_grad %d, %i, %dg {axis = 1 : i64} : (tensor<?x10xf32>, tensor<?x3xi64>, tensor<?x3xf32>) -> tensor<?x10xf32>
  return
}

// CHECK-LABEL: func.func @conv_transpose_gradient
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x3x3xf32>, %[[W:.*]]: tensor<4x2x3x3xf32>, %[[DY:.*]]: tensor<?x2x7x7xf32>)
func.func @conv_transpose_gradient(%x: tensor<?x4x3x3xf32>, %w: tensor<4x2x3x3xf32>, %dy: tensor<?x2x7x7xf32>) -> tensor<2xf32> {
  // CHECK: %{{.*}}, %{{.*}}, %[[DB:.*]] = heterps.conv_transpose_grad %[[X]], %[[W]], %[[DY]] {strides = array<i64: 2, 2>} : (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<?x2x7x7xf32>) -> (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>)
  %dx, %dw, %db = heterps.conv_transpose_grad %x, %w, %dy {strides = array<i64: 2, 2>} : (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<?x2x7x7xf32>) -> (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>)
  // CHECK: return %[[DB]]
  return %db : tensor<2xf32>
}
