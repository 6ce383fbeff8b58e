// A model with one wide layer (4.3 GB of weights) and a table larger than
// any unit: where the layer may go depends on the optimizer's state. Used by
// place-ops-memory.mlir; not a test itself.
heterps.embedding_table @ids {vocab = 1000000000 : i64, dim = 64 : i64, initializer = #heterps.init<zeros>}
heterps.param @w : tensor<4096x262144xf32> = #heterps.init<zeros>
func.func @wide(%x: tensor<?x4096xf32>, %i: tensor<?x4xi64>) -> tensor<?x262144xf32> {
  %e = heterps.embedding_lookup @ids[%i] {combiner = #heterps.combiner<sum>} : (tensor<?x4xi64>) -> tensor<?x64xf32> loc("lookup")
  %w = heterps.load_param @w : tensor<4096x262144xf32>
  %y = heterps.matmul %x, %w : (tensor<?x4096xf32>, tensor<4096x262144xf32>) -> tensor<?x262144xf32> loc("fc")
  return %y : tensor<?x262144xf32>
}
