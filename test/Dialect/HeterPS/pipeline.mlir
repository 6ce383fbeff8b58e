// Round trip of placement attributes, pipelines, stages and channels.
// RUN: heterps-opt %s | heterps-opt | FileCheck %s
// RUN: heterps-opt %s --mlir-print-op-generic | heterps-opt | FileCheck %s

// CHECK: module attributes {heterps.prediction = #heterps.prediction<throughput = 2.000000e+05, cost_usd = 2.500000e+00, cost_per_hour = 1.500000e+01, stage_throughputs = [2.000000e+05, 4.000000e+05]>, heterps.resources = [#heterps.device<"c6i", cpu>, #heterps.device<"a100", gpu>]}
module attributes {heterps.prediction = #heterps.prediction<throughput = 2.0e5, cost_usd = 2.5, cost_per_hour = 15.0, stage_throughputs = [2.0e5, 4.0e5]>, heterps.resources = [#heterps.device<"c6i", cpu>, #heterps.device<"a100", gpu>]} {
  heterps.embedding_table @slot {vocab = 100 : i64, dim = 8 : i64, initializer = #heterps.init<normal(0.0, 0.01)>}
  heterps.param @w : tensor<8x1xf32> = #heterps.init<kaiming_normal>

  // CHECK-LABEL: func.func @placed
  // CHECK-SAME: (%[[IDS:.*]]: tensor<?x2xi64>)
  func.func @placed(%ids: tensor<?x2xi64>) -> tensor<?x1xf32> {
    // CHECK: %[[E:.*]] = heterps.embedding_lookup @slot[%[[IDS]]] {combiner = #heterps.combiner<sum>, heterps.device = #heterps.device<"c6i", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 3>}
    %e = heterps.embedding_lookup @slot[%ids] {combiner = #heterps.combiner<sum>, heterps.device = #heterps.device<"c6i", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 3>} : (tensor<?x2xi64>) -> tensor<?x8xf32>
    // CHECK: %[[W:.*]] = heterps.load_param @w {heterps.device = #heterps.device<"a100", gpu>}
    %w = heterps.load_param @w {heterps.device = #heterps.device<"a100", gpu>} : tensor<8x1xf32>
    // CHECK: heterps.matmul %[[E]], %[[W]] {heterps.device = #heterps.device<"a100", gpu>}
    %y = heterps.matmul %e, %w {heterps.device = #heterps.device<"a100", gpu>} : (tensor<?x8xf32>, tensor<8x1xf32>) -> tensor<?x1xf32>
    return %y : tensor<?x1xf32>
  }

  // CHECK-LABEL: func.func @staged
  // CHECK-SAME: (%[[IDS:.*]]: tensor<?x2xi64>, %[[LABEL:.*]]: tensor<?x1xf32>)
  func.func @staged(%ids: tensor<?x2xi64>, %label: tensor<?x1xf32>) -> tensor<f32> {
    // CHECK: %[[R:.*]] = heterps.pipeline ins(%[[IDS]], %[[LABEL]] : tensor<?x2xi64>, tensor<?x1xf32>) attributes {micro_batches = 4 : i64} {
    %r = heterps.pipeline ins(%ids, %label : tensor<?x2xi64>, tensor<?x1xf32>) attributes {micro_batches = 4 : i64} {
    // CHECK-NEXT: ^bb0(%[[PIDS:.*]]: tensor<?x2xi64>, %[[PLABEL:.*]]: tensor<?x1xf32>):
    ^bb0(%pids: tensor<?x2xi64>, %plabel: tensor<?x1xf32>):
      // CHECK: heterps.stage 0 on <"c6i", cpu> units 4 ins(%[[PIDS]] : tensor<?x2xi64>) {
      heterps.stage 0 on <"c6i", cpu> units 4 ins(%pids : tensor<?x2xi64>) {
      // CHECK-NEXT: ^bb0(%[[SIDS:.*]]: tensor<?x2xi64>):
      ^bb0(%sids: tensor<?x2xi64>):
        // CHECK: %[[E:.*]] = heterps.embedding_lookup @slot[%[[SIDS]]]
        %e = heterps.embedding_lookup @slot[%sids] {combiner = #heterps.combiner<sum>} : (tensor<?x2xi64>) -> tensor<?x8xf32>
        // CHECK: heterps.send %[[E]] channel 0 : tensor<?x8xf32>
        heterps.send %e channel 0 : tensor<?x8xf32>
        // CHECK: %[[G:.*]] = heterps.recv channel 1 : tensor<?x8xf32>
        %g = heterps.recv channel 1 : tensor<?x8xf32>
        // An empty yield is implicit in the custom form.
        // CHECK-NEXT: }
        heterps.yield
      }
      // CHECK: %[[L:.*]] = heterps.stage 1 on <"a100", gpu> units 1 ins(%[[PLABEL]] : tensor<?x1xf32>) {
      %l = heterps.stage 1 on <"a100", gpu> units 1 ins(%plabel : tensor<?x1xf32>) {
      ^bb0(%slabel: tensor<?x1xf32>):
        // CHECK: %[[X:.*]] = heterps.recv channel 0 : tensor<?x8xf32>
        %x = heterps.recv channel 0 : tensor<?x8xf32>
        %w = heterps.load_param @w {heterps.device = #heterps.device<"a100", gpu>} : tensor<8x1xf32>
        %y = heterps.matmul %x, %w : (tensor<?x8xf32>, tensor<8x1xf32>) -> tensor<?x1xf32>
        %loss = heterps.bce_loss %y, %slabel {from_logits = true} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
        // CHECK: heterps.send %[[X]] channel 1 : tensor<?x8xf32>
        heterps.send %x channel 1 : tensor<?x8xf32>
        // CHECK: heterps.yield %[[LOSS:.*]] : tensor<f32>
        heterps.yield %loss : tensor<f32>
      // CHECK-NEXT: } -> tensor<f32>
      } -> tensor<f32>
      // CHECK: heterps.yield %[[L]] : tensor<f32>
      heterps.yield %l : tensor<f32>
    } -> tensor<f32>
    // CHECK: return %[[R]] : tensor<f32>
    return %r : tensor<f32>
  }

  // A pipeline with no inputs and no results: the terminators are implicit.
  // CHECK-LABEL: func.func @implicit_terminators
  func.func @implicit_terminators() {
    // CHECK: heterps.pipeline {
    heterps.pipeline {
      // CHECK: heterps.stage 0 on <"c6i", cpu> units 1 {
      heterps.stage 0 on <"c6i", cpu> units 1 {
      }
    }
    return
  }
}
