// A dense model with its own bce_loss (heterps-run.test: its labels are checked).
module {
  heterps.param @w : tensor<3x1xf32> = #heterps.init<zeros>
  func.func @main(%x: tensor<?x3xf32>, %y: tensor<?x1xf32>) -> tensor<f32> {
    %w = heterps.load_param @w : tensor<3x1xf32>
    %p = heterps.matmul %x, %w : (tensor<?x3xf32>, tensor<3x1xf32>) -> tensor<?x1xf32>
    %l = heterps.bce_loss %p, %y {from_logits = true} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
