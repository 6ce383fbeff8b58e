// A dense model with batch normalisation (DevicePlacementTest.cpp): its
// running statistics are frozen parameters that the training forward
// updates in place.
heterps.param @w1 : tensor<4x6xf32> = #heterps.init<xavier_uniform>
heterps.param @gamma : tensor<6xf32> = #heterps.init<ones>
heterps.param @beta : tensor<6xf32> = #heterps.init<zeros>
heterps.param frozen @mean : tensor<6xf32> = #heterps.init<zeros>
heterps.param frozen @variance : tensor<6xf32> = #heterps.init<ones>
heterps.param @w2 : tensor<6x1xf32> = #heterps.init<xavier_uniform>
func.func @main(%dense: tensor<?x4xf32> {heterps.name = "dense"}) -> tensor<?x1xf32> {
  %w1 = heterps.load_param @w1 : tensor<4x6xf32>
  %h = heterps.matmul %dense, %w1 : (tensor<?x4xf32>, tensor<4x6xf32>) -> tensor<?x6xf32>
  %g = heterps.load_param @gamma : tensor<6xf32>
  %b = heterps.load_param @beta : tensor<6xf32>
  %m = heterps.load_param @mean : tensor<6xf32>
  %v = heterps.load_param @variance : tensor<6xf32>
  %n = heterps.batch_norm %h, %g, %b, %m, %v : (tensor<?x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
  %a = heterps.relu %n : tensor<?x6xf32>
  %w2 = heterps.load_param @w2 : tensor<6x1xf32>
  %z = heterps.matmul %a, %w2 : (tensor<?x6xf32>, tensor<6x1xf32>) -> tensor<?x1xf32>
  %p = heterps.sigmoid %z : tensor<?x1xf32>
  return %p : tensor<?x1xf32>
}
