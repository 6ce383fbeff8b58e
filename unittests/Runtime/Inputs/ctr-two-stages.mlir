// The CTR model placed by hand in two stages of two units each: the lookup
// and the concat in stage 0, the MLP in stage 1. PipelineTest.cpp trains it
// against one worker and with stage 1 on the test device; GPUColumnTest.cpp
// with stage 1 on a GPU.
module attributes {heterps.resources = [#heterps.device<"a", cpu>, #heterps.device<"b", cpu>]} {
heterps.embedding_table @t {vocab = 50 : i64, dim = 8 : i64, initializer = #heterps.init<uniform(-0.1, 0.1)>}
heterps.param @w1 : tensor<12x16xf32> = #heterps.init<xavier_uniform>
heterps.param @b1 : tensor<16xf32> = #heterps.init<zeros>
heterps.param @w2 : tensor<16x1xf32> = #heterps.init<xavier_uniform>
func.func @main(%dense: tensor<?x4xf32> {heterps.name = "dense"},
                %ids: tensor<?x3xi64> {heterps.name = "ids"}) -> tensor<?x1xf32> {
  %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>, heterps.device = #heterps.device<"a", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 2>} : (tensor<?x3xi64>) -> tensor<?x8xf32>
  %x = heterps.concat %dense, %e {axis = 1 : i64, heterps.device = #heterps.device<"a", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 2>} : (tensor<?x4xf32>, tensor<?x8xf32>) -> tensor<?x12xf32>
  %w1 = heterps.load_param @w1 {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : tensor<12x16xf32>
  %b1 = heterps.load_param @b1 {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : tensor<16xf32>
  %h = heterps.gemm %x, %w1, %b1 {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : (tensor<?x12xf32>, tensor<12x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %a = heterps.relu %h {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : tensor<?x16xf32>
  %w2 = heterps.load_param @w2 {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : tensor<16x1xf32>
  %z = heterps.matmul %a, %w2 {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : (tensor<?x16xf32>, tensor<16x1xf32>) -> tensor<?x1xf32>
  %p = heterps.sigmoid %z {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 2>} : tensor<?x1xf32>
  return %p : tensor<?x1xf32>
}
}
