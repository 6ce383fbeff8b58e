// RUN: heterps-opt %s --heterps-insert-pipeline-comm | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
func.func @f(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: %[[P:.*]]:2 = heterps.pipeline ins(%[[X]] : tensor<?x8xf32>) {
  // CHECK-NEXT: ^bb0(%[[IN:.*]]: tensor<?x8xf32>):
  %r:2 = heterps.pipeline ins(%x : tensor<?x8xf32>) {
  ^bb0(%in: tensor<?x8xf32>):
    // The first stage sends its result to both later stages and keeps the
    // second result, which the pipeline returns.
    // CHECK-NEXT: %[[S0:.*]] = heterps.stage 0 on <"cpu", cpu> units 2 ins(%[[IN]] : tensor<?x8xf32>) {
    // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<?x8xf32>):
    // CHECK-NEXT: %[[R:.*]] = heterps.relu %[[A]]
    // CHECK-NEXT: %[[N:.*]] = heterps.neg %[[A]]
    // CHECK-NEXT: heterps.send %[[R]] channel 0 : tensor<?x8xf32>
    // CHECK-NEXT: heterps.send %[[R]] channel 1 : tensor<?x8xf32>
    // CHECK-NEXT: heterps.yield %[[N]] : tensor<?x8xf32>
    // CHECK-NEXT: } -> tensor<?x8xf32>
    %s0:2 = heterps.stage 0 on <"cpu", cpu> units 2 ins(%in : tensor<?x8xf32>) {
    ^bb0(%a: tensor<?x8xf32>):
      %r = heterps.relu %a : tensor<?x8xf32>
      %n = heterps.neg %a : tensor<?x8xf32>
      heterps.yield %r, %n : tensor<?x8xf32>, tensor<?x8xf32>
    } -> tensor<?x8xf32>, tensor<?x8xf32>
    // CHECK-NEXT: heterps.stage 1 on <"gpu", gpu> units 1 {
    // CHECK-NEXT: %[[B:.*]] = heterps.recv channel 0 : tensor<?x8xf32>
    // CHECK-NEXT: %[[T:.*]] = heterps.tanh %[[B]]
    // CHECK-NEXT: heterps.send %[[T]] channel 2 : tensor<?x8xf32>
    // CHECK-NEXT: }
    %s1 = heterps.stage 1 on <"gpu", gpu> units 1 ins(%s0#0 : tensor<?x8xf32>) {
    ^bb0(%b: tensor<?x8xf32>):
      %t = heterps.tanh %b : tensor<?x8xf32>
      heterps.yield %t : tensor<?x8xf32>
    } -> tensor<?x8xf32>
    // CHECK-NEXT: %[[S2:.*]] = heterps.stage 2 on <"cpu", cpu> units 1 {
    // CHECK-DAG: %[[C:.*]] = heterps.recv channel 1 : tensor<?x8xf32>
    // CHECK-DAG: %[[D:.*]] = heterps.recv channel 2 : tensor<?x8xf32>
    // CHECK: %[[SUM:.*]] = heterps.add %[[C]], %[[D]]
    // CHECK-NEXT: heterps.yield %[[SUM]] : tensor<?x8xf32>
    // CHECK-NEXT: } -> tensor<?x8xf32>
    %s2 = heterps.stage 2 on <"cpu", cpu> units 1 ins(%s0#0, %s1 : tensor<?x8xf32>, tensor<?x8xf32>) {
    ^bb0(%c: tensor<?x8xf32>, %d: tensor<?x8xf32>):
      %sum = heterps.add %c, %d : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
      heterps.yield %sum : tensor<?x8xf32>
    } -> tensor<?x8xf32>
    // CHECK-NEXT: heterps.yield %[[S0]], %[[S2]] : tensor<?x8xf32>, tensor<?x8xf32>
    heterps.yield %s0#1, %s2 : tensor<?x8xf32>, tensor<?x8xf32>
  } -> tensor<?x8xf32>, tensor<?x8xf32>
  return %r#0, %r#1 : tensor<?x8xf32>, tensor<?x8xf32>
}
