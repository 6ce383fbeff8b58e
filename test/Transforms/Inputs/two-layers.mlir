// Two layers of 8.4 MB of weights each: with Adam a unit that trains both
// holds 67 MB, more than the 50 MB GPU of cluster-small-gpu.json, while each
// alone fits. Used by place-ops-stage-cut.mlir; not a test itself.
heterps.param @w1 : tensor<1024x2048xf32> = #heterps.init<xavier_uniform>
heterps.param @w2 : tensor<2048x1024xf32> = #heterps.init<xavier_uniform>
heterps.param @w3 : tensor<1024x1xf32> = #heterps.init<xavier_uniform>
func.func @mlp(%x: tensor<?x1024xf32>) -> tensor<?x1xf32> {
  %w1 = heterps.load_param @w1 : tensor<1024x2048xf32>
  %h = heterps.matmul %x, %w1 : (tensor<?x1024xf32>, tensor<1024x2048xf32>) -> tensor<?x2048xf32> loc("fc1")
  %a = heterps.relu %h : tensor<?x2048xf32> loc("relu")
  %w2 = heterps.load_param @w2 : tensor<2048x1024xf32>
  %y = heterps.matmul %a, %w2 : (tensor<?x2048xf32>, tensor<2048x1024xf32>) -> tensor<?x1024xf32> loc("fc2")
  %w3 = heterps.load_param @w3 : tensor<1024x1xf32>
  %z = heterps.matmul %y, %w3 : (tensor<?x1024xf32>, tensor<1024x1xf32>) -> tensor<?x1xf32> loc("fc3")
  return %z : tensor<?x1xf32>
}
