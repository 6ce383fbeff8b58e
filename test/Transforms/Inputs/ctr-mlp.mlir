// A CTR model whose lookups are IO-bound (bags of 64 ids into 64-wide rows)
// and whose MLP is compute-bound (4096-wide layers): the cheapest plan at
// 200000 samples/s keeps the lookups on CPUs and the MLP on GPUs. Shared by
// the scheduling tests; not a test itself.
heterps.embedding_table @t0 {vocab = 1000000 : i64, dim = 64 : i64, initializer = #heterps.init<zeros>}
heterps.embedding_table @t1 {vocab = 1000000 : i64, dim = 64 : i64, initializer = #heterps.init<zeros>}
heterps.param @w1 : tensor<128x4096xf32> = #heterps.init<xavier_uniform>
heterps.param @w2 : tensor<4096x4096xf32> = #heterps.init<xavier_uniform>
heterps.param @w3 : tensor<4096x1xf32> = #heterps.init<xavier_uniform>
func.func @ctr(%ids0: tensor<?x64xi64>, %ids1: tensor<?x64xi64>, %label: tensor<?x1xf32>) -> tensor<f32> {
  %e0 = heterps.embedding_lookup @t0[%ids0] {combiner = #heterps.combiner<sum>} : (tensor<?x64xi64>) -> tensor<?x64xf32> loc("lookup0")
  %e1 = heterps.embedding_lookup @t1[%ids1] {combiner = #heterps.combiner<sum>} : (tensor<?x64xi64>) -> tensor<?x64xf32> loc("lookup1")
  %x = heterps.concat %e0, %e1 {axis = 1 : i64} : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x128xf32> loc("concat")
  %w1 = heterps.load_param @w1 : tensor<128x4096xf32> loc("w1")
  %h1 = heterps.matmul %x, %w1 : (tensor<?x128xf32>, tensor<128x4096xf32>) -> tensor<?x4096xf32> loc("fc1")
  %a1 = heterps.relu %h1 : tensor<?x4096xf32> loc("relu1")
  %w2 = heterps.load_param @w2 : tensor<4096x4096xf32> loc("w2")
  %h2 = heterps.matmul %a1, %w2 : (tensor<?x4096xf32>, tensor<4096x4096xf32>) -> tensor<?x4096xf32> loc("fc2")
  %a2 = heterps.relu %h2 : tensor<?x4096xf32> loc("relu2")
  %w3 = heterps.load_param @w3 : tensor<4096x1xf32> loc("w3")
  %y = heterps.matmul %a2, %w3 : (tensor<?x4096xf32>, tensor<4096x1xf32>) -> tensor<?x1xf32> loc("fc3")
  %l = heterps.bce_loss %y, %label {from_logits = true} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
