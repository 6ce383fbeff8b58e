// RUN: heterps-opt %s -split-input-file --heterps-autodiff='loss=bce optimizer=sgd learning-rate=0.1' | FileCheck %s

// A logistic regression: the loss is added, the backward runs in reverse,
// and the parameter gets one SGD update. The gradient of the input %x is
// not needed and is not built. Every forward op is a layer
// (heterps.layer); the ops built for its backward join it, so that the
// scheduler places them with it.

heterps.param @w : tensor<4x1xf32> = #heterps.init<xavier_uniform>
heterps.param @b : tensor<1xf32> = #heterps.init<zeros>

// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:.*]]: tensor<?x4xf32>, %[[LABEL:.*]]: tensor<?x1xf32> {heterps.label, heterps.name = "label"}
// CHECK-SAME: -> (tensor<?x1xf32>, tensor<f32> {heterps.name = "loss"})
// CHECK-SAME: heterps.training = #heterps.training<loss = "bce", loss_output = 1>
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x1xf32> {
  // CHECK: %[[W:.*]] = heterps.load_param @w {heterps.layer = [[LW:[0-9]+]] : i64}
  // CHECK: %[[B:.*]] = heterps.load_param @b {heterps.layer = [[LB:[0-9]+]] : i64}
  %w = heterps.load_param @w : tensor<4x1xf32>
  %b = heterps.load_param @b : tensor<1xf32>
  // CHECK: %[[Z:.*]] = heterps.gemm %[[X]], %[[W]], %[[B]] {heterps.layer = [[LZ:[0-9]+]] : i64}
  %z = heterps.gemm %x, %w, %b : (tensor<?x4xf32>, tensor<4x1xf32>, tensor<1xf32>) -> tensor<?x1xf32>
  // CHECK: %[[P:.*]] = heterps.sigmoid %[[Z]]
  %p = heterps.sigmoid %z : tensor<?x1xf32>
  // CHECK: %[[L:.*]] = heterps.bce_loss %[[P]], %[[LABEL]]
  // CHECK: %[[ONE:.*]] = heterps.constant dense<1.000000e+00> : tensor<f32>
  // CHECK: %[[DP:.*]] = heterps.loss_grad bce %[[P]], %[[LABEL]], %[[ONE]]
  // CHECK: %[[DZ:.*]] = heterps.unary_grad sigmoid %[[Z]], %[[P]], %[[DP]]
  // CHECK-NOT: heterps.gemm %[[DZ]], %[[W]]
  // CHECK: %[[DW:.*]] = heterps.gemm %[[X]], %[[DZ]] {heterps.layer = [[LZ]] : i64, trans_a = true}
  // CHECK: %[[DB:.*]] = heterps.sum_to_shape %[[DZ]], %[[B]] {heterps.layer = [[LZ]] : i64}
  // CHECK: heterps.update_param sgd @b, %[[DB]] {heterps.layer = [[LB]] : i64, learning_rate = 1.000000e-01 : f64
  // CHECK: heterps.update_param sgd @w, %[[DW]] {heterps.layer = [[LW]] : i64
  // CHECK: return %[[P]], %[[L]]
  return %p : tensor<?x1xf32>
}

// -----

// Embedding lookups push sparse row gradients; the table gets the
// optimizer the parameter server applies. A value with two uses sums its
// gradients.

heterps.embedding_table @t {vocab = 100 : i64, dim = 4 : i64, initializer = #heterps.init<uniform(-0.1, 0.1)>}
heterps.param @v : tensor<4x1xf32> = #heterps.init<xavier_uniform>

// CHECK: heterps.embedding_table @t {{.*}}optimizer = #heterps.optimizer<kind = sgd, learning_rate = 1.000000e-01>
// CHECK-LABEL: func.func @bag
func.func @bag(%ids: tensor<?x3xi64>) -> tensor<?x1xf32> {
  // CHECK: %[[E:.*]] = heterps.embedding_lookup @t[%[[IDS:.*]]] {combiner = #heterps.combiner<mean>, heterps.layer = [[LE:[0-9]+]] : i64}
  %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<mean>} : (tensor<?x3xi64>) -> tensor<?x4xf32>
  // CHECK: %[[S:.*]] = heterps.add %[[E]], %[[E]]
  %s = heterps.add %e, %e : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %v = heterps.load_param @v : tensor<4x1xf32>
  %y = heterps.matmul %s, %v : (tensor<?x4xf32>, tensor<4x1xf32>) -> tensor<?x1xf32>
  // CHECK: %[[DS:.*]] = heterps.gemm %{{.*}}, %{{.*}} {heterps.layer = {{[0-9]+}} : i64, trans_b = true}
  // CHECK: %[[DE:.*]] = heterps.add %[[DS]], %[[DS]]
  // CHECK: %[[KEYS:.*]], %[[ROWS:.*]] = heterps.embedding_grad %[[IDS]], %[[DE]] {combiner = #heterps.combiner<mean>, heterps.layer = [[LE]] : i64}
  // CHECK-SAME: -> (tensor<?xi64>, tensor<?x4xf32>)
  // CHECK: heterps.ps_push @t[%[[KEYS]]], %[[ROWS]] {heterps.layer = [[LE]] : i64}
  return %y : tensor<?x1xf32>
}

// -----

// A placed (and provisioned) model: the backward of each op lands on its
// resource type and in its stage.

module attributes {heterps.resources = [#heterps.device<"cpu", cpu>, #heterps.device<"gpu", gpu>]} {
  heterps.param @w : tensor<4x1xf32> = #heterps.init<xavier_uniform>
  // CHECK-LABEL: func.func @placed
  func.func @placed(%x: tensor<?x4xf32>) -> tensor<?x1xf32> {
    %w = heterps.load_param @w {heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 2>} : tensor<4x1xf32>
    %z = heterps.matmul %x, %w {heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 2>} : (tensor<?x4xf32>, tensor<4x1xf32>) -> tensor<?x1xf32>
    %p = heterps.sigmoid %z {heterps.device = #heterps.device<"cpu", cpu>} : tensor<?x1xf32>
    // CHECK: heterps.bce_loss {{.*}}heterps.device = #heterps.device<"cpu", cpu>
    // CHECK: heterps.constant {{.*}}heterps.device = #heterps.device<"cpu", cpu>
    // CHECK: heterps.loss_grad {{.*}}heterps.device = #heterps.device<"cpu", cpu>
    // CHECK: heterps.unary_grad sigmoid {{.*}}heterps.device = #heterps.device<"cpu", cpu>
    // CHECK: heterps.gemm {{.*}}heterps.device = #heterps.device<"gpu", gpu>, {{.*}}heterps.stage = #heterps.stage_assignment<index = 0, units = 2>, trans_a = true
    // CHECK: heterps.update_param sgd @w{{.*}}heterps.device = #heterps.device<"gpu", gpu>, {{.*}}heterps.stage = #heterps.stage_assignment<index = 0, units = 2>
    return %p : tensor<?x1xf32>
  }
}

// -----

// A gather and a slice of float data (DLRM's pair selection, a packed
// q/k/v split) scatter their gradients back: heterps.gather_grad and
// heterps.slice_grad, summed where the value has both uses.

heterps.param @z : tensor<4x6xf32> = #heterps.init<xavier_uniform>

// CHECK-LABEL: func.func @pick
func.func @pick(%x: tensor<?x4xf32>) -> tensor<?x1xf32> {
  // CHECK: %[[Z:.*]] = heterps.load_param @z
  %z = heterps.load_param @z : tensor<4x6xf32>
  %i = heterps.constant dense<[0, 2, 2]> : tensor<3xi64>
  // CHECK: %[[I:.*]] = heterps.constant
  // CHECK: %[[G:.*]] = heterps.gather %[[Z]], %[[I]] {axis = 1 : i64
  %g = heterps.gather %z, %i {axis = 1 : i64} : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  // CHECK: %[[S:.*]] = heterps.slice %[[Z]]
  %s = heterps.slice %z {starts = array<i64: 0, 3>, ends = array<i64: 4, 6>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  %a = heterps.add %g, %s : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %h = heterps.matmul %x, %a : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
  %y = heterps.reduce_sum %h {axes = array<i64: 1>, keepdims = true} : (tensor<?x3xf32>) -> tensor<?x1xf32>
  // CHECK: %[[DA:.*]] = heterps.gemm %[[X:.*]], %{{.*}} {{{.*}}trans_a = true}
  // CHECK-DAG: %[[DS:.*]] = heterps.slice_grad %[[Z]], %[[DA]] {{{.*}}starts = array<i64: 0, 3>{{.*}}} : (tensor<4x6xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
  // CHECK-DAG: %[[DG:.*]] = heterps.gather_grad %[[Z]], %[[I]], %[[DA]] {axis = 1 : i64{{.*}}} : (tensor<4x6xf32>, tensor<3xi64>, tensor<4x3xf32>) -> tensor<4x6xf32>
  // CHECK: %[[DZ:.*]] = heterps.add
  // CHECK: heterps.update_param sgd @z, %[[DZ]]
  return %y : tensor<?x1xf32>
}
