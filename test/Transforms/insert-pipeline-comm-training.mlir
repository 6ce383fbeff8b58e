// A training step written out by hand (forward and backward ops, as the
// autodiff pass will produce them): a tanh on the CPU, a matmul on the GPU,
// the matmul's input gradient on the GPU and the tanh's gradient back on the
// CPU. The backward CPU ops form a later stage on the CPU type; the
// gradient reaches them through a channel like any activation, and so does
// the forward activation the tanh gradient reuses (without heterps.layer
// the passes cannot tell backward ops from forward ones).
// RUN: heterps-opt %s -split-input-file --heterps-outline-stages --heterps-insert-pipeline-comm --heterps-verify-placement | FileCheck %s

heterps.param @w : tensor<8x4xf32> = #heterps.init<xavier_uniform>
// CHECK-LABEL: func.func @train
func.func @train(%x: tensor<?x8xf32>, %dy: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x8xf32>) {
  // CHECK: heterps.stage 0 on <"cpu", cpu> units 1
  // CHECK: %[[A:.*]] = heterps.tanh
  // CHECK-DAG: heterps.send %[[A]] channel 0 : tensor<?x8xf32>
  // CHECK-DAG: heterps.send %[[A]] channel 1 : tensor<?x8xf32>
  %a = heterps.tanh %x {heterps.device = #heterps.device<"cpu", cpu>} : tensor<?x8xf32>
  // CHECK: heterps.stage 1 on <"gpu", gpu> units 1
  // CHECK: %[[A1:.*]] = heterps.recv channel 0 : tensor<?x8xf32>
  // CHECK: heterps.matmul %[[A1]]
  // CHECK: %[[DA:.*]] = heterps.matmul %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  // CHECK: heterps.send %[[DA]] channel 2 : tensor<?x8xf32>
  %w = heterps.load_param @w {heterps.device = #heterps.device<"gpu", gpu>} : tensor<8x4xf32>
  %y = heterps.matmul %a, %w {heterps.device = #heterps.device<"gpu", gpu>} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %wt = heterps.transpose %w {perm = array<i64: 1, 0>, heterps.device = #heterps.device<"gpu", gpu>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %da = heterps.matmul %dy, %wt {heterps.device = #heterps.device<"gpu", gpu>} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  // CHECK: heterps.stage 2 on <"cpu", cpu> units 1
  // CHECK-DAG: %[[A2:.*]] = heterps.recv channel 1 : tensor<?x8xf32>
  // CHECK-DAG: %[[G:.*]] = heterps.recv channel 2 : tensor<?x8xf32>
  // CHECK: heterps.mul %[[A2]], %[[A2]]
  // CHECK: heterps.mul %[[G]]
  %aa = heterps.mul %a, %a {heterps.device = #heterps.device<"cpu", cpu>} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %one = heterps.constant dense<1.0> : tensor<8xf32> {heterps.device = #heterps.device<"cpu", cpu>}
  %d = heterps.sub %one, %aa {heterps.device = #heterps.device<"cpu", cpu>} : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %dx = heterps.mul %da, %d {heterps.device = #heterps.device<"cpu", cpu>} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y, %dx : tensor<?x4xf32>, tensor<?x8xf32>
}

// -----

// The same step as heterps-autodiff writes it: every op carries the layer
// (heterps.layer) of the forward op it belongs to, so the CPU backward is
// the second part of stage 0, not a stage of its own. The activation the
// tanh gradient reuses stays on stage 0's workers as an SSA value between
// the two parts; only the gradient crosses a channel, from stage 1 back to
// stage 0.
heterps.param @w : tensor<8x4xf32> = #heterps.init<xavier_uniform>
// CHECK-LABEL: func.func @train_layers
func.func @train_layers(%x: tensor<?x8xf32>, %dy: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x8xf32>) {
  // CHECK: %[[FWD:.*]] = heterps.stage 0 on <"cpu", cpu> units 1
  // CHECK: %[[A:.*]] = heterps.tanh
  // CHECK: heterps.send %[[A]] channel [[ACT:[0-9]+]] : tensor<?x8xf32>
  // CHECK-NOT: heterps.send
  // CHECK: heterps.yield %[[A]] : tensor<?x8xf32>
  %a = heterps.tanh %x {heterps.device = #heterps.device<"cpu", cpu>, heterps.layer = 0 : i64} : tensor<?x8xf32>
  // CHECK: heterps.stage 1 on <"gpu", gpu> units 1
  // CHECK: %[[A1:.*]] = heterps.recv channel [[ACT]] : tensor<?x8xf32>
  // CHECK: heterps.matmul %[[A1]]
  // CHECK: %[[DA:.*]] = heterps.matmul %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  // CHECK: heterps.send %[[DA]] channel [[GRAD:[0-9]+]] : tensor<?x8xf32>
  %w = heterps.load_param @w {heterps.device = #heterps.device<"gpu", gpu>, heterps.layer = 1 : i64} : tensor<8x4xf32>
  %y = heterps.matmul %a, %w {heterps.device = #heterps.device<"gpu", gpu>, heterps.layer = 2 : i64} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %wt = heterps.transpose %w {perm = array<i64: 1, 0>, heterps.device = #heterps.device<"gpu", gpu>, heterps.layer = 2 : i64} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %da = heterps.matmul %dy, %wt {heterps.device = #heterps.device<"gpu", gpu>, heterps.layer = 2 : i64} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  // CHECK: heterps.stage 0 on <"cpu", cpu> units 1 ins(%[[FWD]] : tensor<?x8xf32>)
  // CHECK-NEXT: ^bb0(%[[A2:.*]]: tensor<?x8xf32>):
  // CHECK: %[[G:.*]] = heterps.recv channel [[GRAD]] : tensor<?x8xf32>
  // CHECK: heterps.mul %[[A2]], %[[A2]]
  // CHECK: heterps.mul %[[G]]
  %aa = heterps.mul %a, %a {heterps.device = #heterps.device<"cpu", cpu>, heterps.layer = 0 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %one = heterps.constant dense<1.0> : tensor<8xf32> {heterps.device = #heterps.device<"cpu", cpu>, heterps.layer = 0 : i64}
  %d = heterps.sub %one, %aa {heterps.device = #heterps.device<"cpu", cpu>, heterps.layer = 0 : i64} : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %dx = heterps.mul %da, %d {heterps.device = #heterps.device<"cpu", cpu>, heterps.layer = 0 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y, %dx : tensor<?x4xf32>, tensor<?x8xf32>
}
