// RUN: heterps-opt %s --cse --canonicalize | FileCheck %s

// The stateful ops declare what they touch: CSE merges two loads of a
// parameter with no update between them, keeps a load after an update apart
// from the one before, and never merges two dropouts (two draws of the mask).

heterps.param @w : tensor<4xf32> = #heterps.init<zeros>

// CHECK-LABEL: func.func @loads_merge
// CHECK:         %[[W:.*]] = heterps.load_param @w
// CHECK-NOT:     heterps.load_param
// CHECK:         heterps.add %[[W]], %[[W]]
func.func @loads_merge() -> tensor<4xf32> {
  %a = heterps.load_param @w : tensor<4xf32>
  %b = heterps.load_param @w : tensor<4xf32>
  %s = heterps.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @update_separates_loads
// CHECK:         %[[BEFORE:.*]] = heterps.load_param @w
// CHECK:         heterps.update_param sgd @w
// CHECK:         %[[AFTER:.*]] = heterps.load_param @w
// CHECK:         heterps.add %[[BEFORE]], %[[AFTER]]
func.func @update_separates_loads(%g: tensor<4xf32>) -> tensor<4xf32> {
  %a = heterps.load_param @w : tensor<4xf32>
  heterps.update_param sgd @w, %g {learning_rate = 1.0e-01 : f64} : tensor<4xf32>
  %b = heterps.load_param @w : tensor<4xf32>
  %s = heterps.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @dropouts_stay
// CHECK:         %[[D1:.*]] = heterps.dropout %{{.*}}
// CHECK:         %[[D2:.*]] = heterps.dropout %{{.*}}
// CHECK:         heterps.add %[[D1]], %[[D2]]
func.func @dropouts_stay(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %a = heterps.dropout %x {ratio = 5.000000e-01 : f32} : tensor<?x4xf32>
  %b = heterps.dropout %x {ratio = 5.000000e-01 : f32} : tensor<?x4xf32>
  %s = heterps.add %a, %b : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @unused_load_goes
// CHECK-NOT:     heterps.load_param
// CHECK:         return
func.func @unused_load_goes() {
  %a = heterps.load_param @w : tensor<4xf32>
  return
}
