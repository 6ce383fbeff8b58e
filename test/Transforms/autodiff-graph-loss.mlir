// RUN: heterps-opt %s --heterps-autodiff='optimizer=sgd learning-rate=0.1' | FileCheck %s

// A loss spelled out in the graph, -(y*log(p) + (1-y)*log(1-p)).mean(): the
// one 0-D float result is the loss, and the input that only it reads is
// the label.

heterps.param @w2 : tensor<4x1xf32> = #heterps.init<xavier_uniform>

// CHECK-LABEL: func.func @graph_loss
// CHECK-SAME: %[[X:.*]]: tensor<?x4xf32>, %[[Y:.*]]: tensor<?x1xf32> {heterps.label}
// CHECK-SAME: heterps.training = #heterps.training<loss = "graph", loss_output = 1>
func.func @graph_loss(%x: tensor<?x4xf32>, %y: tensor<?x1xf32>) -> (tensor<?x1xf32>, tensor<f32>) {
  %w = heterps.load_param @w2 : tensor<4x1xf32>
  %z = heterps.matmul %x, %w : (tensor<?x4xf32>, tensor<4x1xf32>) -> tensor<?x1xf32>
  // CHECK: %[[P:.*]] = heterps.sigmoid
  %p = heterps.sigmoid %z : tensor<?x1xf32>
  %one = heterps.constant dense<1.0> : tensor<f32>
  %lp = heterps.log %p : tensor<?x1xf32>
  %a = heterps.mul %y, %lp : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %ny = heterps.sub %one, %y : (tensor<f32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %np = heterps.sub %one, %p : (tensor<f32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %lnp = heterps.log %np : tensor<?x1xf32>
  %b = heterps.mul %ny, %lnp : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %s = heterps.add %a, %b : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %m = heterps.reduce_mean %s {keepdims = false} : (tensor<?x1xf32>) -> tensor<f32>
  // CHECK: %[[L:.*]] = heterps.neg
  %l = heterps.neg %m : tensor<f32>
  // CHECK: heterps.update_param sgd @w2
  // CHECK: return %[[P]], %[[L]]
  return %p, %l : tensor<?x1xf32>, tensor<f32>
}
