// A model of Criteo's shape for the runtime tests: 13 dense features, 26
// categorical ids summed from one table, a logistic output. Not a test.
heterps.embedding_table @cat {vocab = 10000 : i64, dim = 8 : i64, initializer = #heterps.init<uniform(-0.05, 0.05)>}
heterps.param @w : tensor<21x1xf32> = #heterps.init<xavier_uniform>
heterps.param @b : tensor<1xf32> = #heterps.init<zeros>
func.func @main(%dense: tensor<?x13xf32> {heterps.name = "dense"},
                %cat: tensor<?x26xi64> {heterps.name = "cat"}) -> (tensor<?x1xf32> {heterps.name = "click"}) {
  %e = heterps.embedding_lookup @cat[%cat] {combiner = #heterps.combiner<sum>} : (tensor<?x26xi64>) -> tensor<?x8xf32>
  %x = heterps.concat %dense, %e {axis = 1 : i64} : (tensor<?x13xf32>, tensor<?x8xf32>) -> tensor<?x21xf32>
  %w = heterps.load_param @w : tensor<21x1xf32>
  %b = heterps.load_param @b : tensor<1xf32>
  %z = heterps.gemm %x, %w, %b : (tensor<?x21xf32>, tensor<21x1xf32>, tensor<1xf32>) -> tensor<?x1xf32>
  %p = heterps.sigmoid %z : tensor<?x1xf32>
  return %p : tensor<?x1xf32>
}
