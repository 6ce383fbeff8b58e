// A model of bags of ids given by offsets (nn.EmbeddingBag with offsets),
// for DevicePlacementTest.cpp: a lookup of every id, a mean per bag, one
// GEMM layer.
heterps.embedding_table @t {vocab = 100 : i64, dim = 4 : i64, initializer = #heterps.init<uniform(-0.5, 0.5)>}
heterps.param @w : tensor<4x1xf32> = #heterps.init<xavier_uniform>
heterps.param @b : tensor<1xf32> = #heterps.init<zeros>
func.func @main(%ids: tensor<?xi64> {heterps.name = "ids", heterps.bag_offsets = 1 : i64},
                %offsets: tensor<?xi64> {heterps.name = "offsets"}) -> tensor<?x1xf32> {
  %r = heterps.embedding_lookup @t[%ids] : (tensor<?xi64>) -> tensor<?x4xf32>
  %e = heterps.segment_reduce mean %r, %offsets : (tensor<?x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  %w = heterps.load_param @w : tensor<4x1xf32>
  %b = heterps.load_param @b : tensor<1xf32>
  %z = heterps.gemm %e, %w, %b : (tensor<?x4xf32>, tensor<4x1xf32>, tensor<1xf32>) -> tensor<?x1xf32>
  %p = heterps.sigmoid %z : tensor<?x1xf32>
  return %p : tensor<?x1xf32>
}
