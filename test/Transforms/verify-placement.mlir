// RUN: heterps-opt %s --heterps-verify-placement | FileCheck %s

// Placed ops and ops inside stages pass; module-level parameters need no
// placement. The IR is unchanged.
heterps.param @w : tensor<4x4xf32> = #heterps.init<zeros>
// CHECK-LABEL: func.func @placed
func.func @placed(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // CHECK: heterps.relu %{{.*}} {heterps.device = #heterps.device<"cpu", cpu>}
  %y = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>} : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @staged
func.func @staged(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // CHECK: heterps.pipeline
  %r = heterps.pipeline ins(%x : tensor<?x4xf32>) {
  ^bb0(%a: tensor<?x4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<?x4xf32>) {
    ^bb0(%b: tensor<?x4xf32>):
      %c = heterps.relu %b : tensor<?x4xf32>
      heterps.send %c channel 0 : tensor<?x4xf32>
    }
    %s = heterps.stage 1 on <"gpu", gpu> units 1 {
      %d = heterps.recv channel 0 : tensor<?x4xf32>
      %w = heterps.load_param @w : tensor<4x4xf32>
      %e = heterps.matmul %d, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
      heterps.yield %e : tensor<?x4xf32>
    } -> tensor<?x4xf32>
    heterps.yield %s : tensor<?x4xf32>
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
