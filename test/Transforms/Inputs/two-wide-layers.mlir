// Two wide layers of 2.1 GB of weights each: with Adam a unit that trains
// both holds 17.2 GB, more than a 16 GB GPU, while each alone fits. Used by
// place-ops-stage-cut.mlir; not a test itself.
heterps.param @w1 : tensor<4096x131072xf32> = #heterps.init<zeros>
heterps.param @w2 : tensor<131072x4096xf32> = #heterps.init<zeros>
func.func @wide(%x: tensor<?x4096xf32>) -> tensor<?x4096xf32> {
  %w1 = heterps.load_param @w1 : tensor<4096x131072xf32>
  %h = heterps.matmul %x, %w1 : (tensor<?x4096xf32>, tensor<4096x131072xf32>) -> tensor<?x131072xf32> loc("fc1")
  %w2 = heterps.load_param @w2 : tensor<131072x4096xf32>
  %y = heterps.matmul %h, %w2 : (tensor<?x131072xf32>, tensor<131072x4096xf32>) -> tensor<?x4096xf32> loc("fc2")
  return %y : tensor<?x4096xf32>
}
