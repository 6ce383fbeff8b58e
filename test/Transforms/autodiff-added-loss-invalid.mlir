// An added loss beside one the model computes is refused: training would
// follow their sum and report only the added one.
// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-autodiff='loss=bce'

// expected-error @+1 {{heterps-autodiff: the function already returns a loss (heterps.bce_loss, result 1); leave loss= unset to train on it, or drop it from the model to add another}}
func.func @own_loss(%p: tensor<?x1xf32>, %y: tensor<?x1xf32>)
    -> (tensor<?x1xf32>, tensor<f32>) {
  %l = heterps.bce_loss %p, %y : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
  return %p, %l : tensor<?x1xf32>, tensor<f32>
}
