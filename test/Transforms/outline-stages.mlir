// RUN: heterps-opt %s --heterps-outline-stages="function=f micro-batches=4" | FileCheck %s
// RUN: heterps-opt %s --heterps-outline-stages="function=unprovisioned" | FileCheck %s --check-prefix=RUNS

module attributes {heterps.resources = [#heterps.device<"cpu", cpu>, #heterps.device<"gpu", gpu>]} {
  heterps.embedding_table @t {vocab = 100 : i64, dim = 8 : i64, initializer = #heterps.init<zeros>}
  heterps.param @w : tensor<8x1xf32> = #heterps.init<xavier_uniform>
  // CHECK-LABEL: func.func @f
  // CHECK-SAME: (%[[IDS:.*]]: tensor<?x2xi64>, %[[LABEL:.*]]: tensor<?x1xf32>) -> tensor<f32>
  func.func @f(%ids: tensor<?x2xi64>, %label: tensor<?x1xf32>) -> tensor<f32> {
    // CHECK: %[[P:.*]] = heterps.pipeline ins(%[[IDS]], %[[LABEL]] : tensor<?x2xi64>, tensor<?x1xf32>) attributes {micro_batches = 4 : i64} {
    // CHECK-NEXT: ^bb0(%[[PIDS:.*]]: tensor<?x2xi64>, %[[PLABEL:.*]]: tensor<?x1xf32>):
    // CHECK-NEXT: %[[S0:.*]] = heterps.stage 0 on <"cpu", cpu> units 3 ins(%[[PIDS]] : tensor<?x2xi64>) {
    // CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<?x2xi64>):
    // CHECK-NEXT: %[[E:.*]] = heterps.embedding_lookup @t[%[[A0]]] {combiner = #heterps.combiner<sum>} : (tensor<?x2xi64>) -> tensor<?x8xf32>
    // CHECK-NEXT: heterps.yield %[[E]] : tensor<?x8xf32>
    // CHECK-NEXT: } -> tensor<?x8xf32>
    %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>, heterps.device = #heterps.device<"cpu", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 3>} : (tensor<?x2xi64>) -> tensor<?x8xf32>
    // CHECK-NEXT: %[[S1:.*]] = heterps.stage 1 on <"gpu", gpu> units 2 ins(%[[S0]], %[[PLABEL]] : tensor<?x8xf32>, tensor<?x1xf32>) {
    // CHECK-NEXT: ^bb0(%[[B0:.*]]: tensor<?x8xf32>, %[[B1:.*]]: tensor<?x1xf32>):
    // CHECK-NEXT: %[[W:.*]] = heterps.load_param @w : tensor<8x1xf32>
    // CHECK-NEXT: %[[Y:.*]] = heterps.matmul %[[B0]], %[[W]]
    // CHECK-NEXT: %[[L:.*]] = heterps.bce_loss %[[Y]], %[[B1]]
    // CHECK-NEXT: heterps.yield %[[L]] : tensor<f32>
    // CHECK-NEXT: } -> tensor<f32>
    // CHECK-NEXT: heterps.yield %[[S1]] : tensor<f32>
    // CHECK-NEXT: } -> tensor<f32>
    // CHECK-NEXT: return %[[P]] : tensor<f32>
    %w = heterps.load_param @w {heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : tensor<8x1xf32>
    %y = heterps.matmul %e, %w {heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : (tensor<?x8xf32>, tensor<8x1xf32>) -> tensor<?x1xf32>
    %l = heterps.bce_loss %y, %label {from_logits = true, heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }

  // Without provisioning, stages are the runs of one device with one unit.
  // RUNS-LABEL: func.func @unprovisioned
  // RUNS: heterps.stage 0 on <"cpu", cpu> units 1
  // RUNS: heterps.relu
  // RUNS: heterps.relu
  // RUNS: heterps.stage 1 on <"gpu", gpu> units 1
  // RUNS: heterps.tanh
  // RUNS: heterps.stage 2 on <"cpu", cpu> units 1
  // RUNS: heterps.exp
  func.func @unprovisioned(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %a = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>} : tensor<?x4xf32>
    %b = heterps.relu %a {heterps.device = #heterps.device<"cpu", cpu>} : tensor<?x4xf32>
    %c = heterps.tanh %b {heterps.device = #heterps.device<"gpu", gpu>} : tensor<?x4xf32>
    %d = heterps.exp %c {heterps.device = #heterps.device<"cpu", cpu>} : tensor<?x4xf32>
    return %d : tensor<?x4xf32>
  }
}
