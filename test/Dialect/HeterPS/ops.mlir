// Round trip of every model-layer op: parse, print, parse again, in the custom
// and in the generic form.
// RUN: heterps-opt %s | heterps-opt | FileCheck %s
// RUN: heterps-opt %s --mlir-print-op-generic | heterps-opt | FileCheck %s

// CHECK: heterps.embedding_table @table {dim = 8 : i64, initializer = #heterps.init<uniform(-5.000000e-02, 5.000000e-02)>, vocab = 1000 : i64}
heterps.embedding_table @table {vocab = 1000 : i64, dim = 8 : i64, initializer = #heterps.init<uniform(-0.05, 0.05)>}
// CHECK: heterps.param @w : tensor<16x8xf32> = #heterps.init<xavier_uniform>
heterps.param @w : tensor<16x8xf32> = #heterps.init<xavier_uniform>
// CHECK: heterps.param @b : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
heterps.param @b : tensor<2xf32> = dense<[1.0, 2.0]>
// CHECK: heterps.param frozen @running_mean : tensor<4xf32> = #heterps.init<zeros>
heterps.param frozen @running_mean : tensor<4xf32> = #heterps.init<zeros>

// CHECK-LABEL: func.func @params_and_tables
// CHECK-SAME: (%[[IDS:.*]]: tensor<?x3xi64>)
func.func @params_and_tables(%ids: tensor<?x3xi64>) -> (tensor<?x3x8xf32>, tensor<?x8xf32>, tensor<16x8xf32>, tensor<2xf32>) {
  // CHECK: %[[ROWS:.*]] = heterps.embedding_lookup @table[%[[IDS]]] : (tensor<?x3xi64>) -> tensor<?x3x8xf32>
  %rows = heterps.embedding_lookup @table[%ids] : (tensor<?x3xi64>) -> tensor<?x3x8xf32>
  // CHECK: %[[BAG:.*]] = heterps.embedding_lookup @table[%[[IDS]]] {combiner = #heterps.combiner<mean>} : (tensor<?x3xi64>) -> tensor<?x8xf32>
  %bag = heterps.embedding_lookup @table[%ids] {combiner = #heterps.combiner<mean>} : (tensor<?x3xi64>) -> tensor<?x8xf32>
  // CHECK: %[[W:.*]] = heterps.load_param @w : tensor<16x8xf32>
  %w = heterps.load_param @w : tensor<16x8xf32>
  // CHECK: %[[C:.*]] = heterps.constant dense<5.000000e-01> : tensor<2xf32>
  %c = heterps.constant dense<0.5> : tensor<2xf32>
  // CHECK: return %[[ROWS]], %[[BAG]], %[[W]], %[[C]]
  return %rows, %bag, %w, %c : tensor<?x3x8xf32>, tensor<?x8xf32>, tensor<16x8xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @bags
// CHECK-SAME: (%[[IDS:[^:]*]]: tensor<?xi64> {heterps.bag_offsets = 1 : i64}, %[[OFF:[^:]*]]: tensor<?xi32>, %[[DY:[^:]*]]: tensor<?x8xf32>)
func.func @bags(%ids: tensor<?xi64> {heterps.bag_offsets = 1 : i64}, %offsets: tensor<?xi32>, %dy: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: %[[ROWS:.*]] = heterps.embedding_lookup @table[%[[IDS]]] : (tensor<?xi64>) -> tensor<?x8xf32>
  %rows = heterps.embedding_lookup @table[%ids] : (tensor<?xi64>) -> tensor<?x8xf32>
  // CHECK: %[[BAG:.*]] = heterps.segment_reduce max %[[ROWS]], %[[OFF]] : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  %bag = heterps.segment_reduce max %rows, %offsets : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  // CHECK: %[[DROWS:.*]] = heterps.segment_reduce_grad max %[[ROWS]], %[[OFF]], %[[DY]] : (tensor<?x8xf32>, tensor<?xi32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %drows = heterps.segment_reduce_grad max %rows, %offsets, %dy : (tensor<?x8xf32>, tensor<?xi32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: return %[[BAG]], %[[DROWS]]
  return %bag, %drows : tensor<?x8xf32>, tensor<?x8xf32>
}

// CHECK-LABEL: func.func @linear_algebra
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<8xf32>, %[[A:.*]]: tensor<4x?x16xf32>, %[[V:.*]]: tensor<16xf32>)
func.func @linear_algebra(%x: tensor<?x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>, %a: tensor<4x?x16xf32>, %v: tensor<16xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<4x?x8xf32>, tensor<?xf32>) {
  // CHECK: %[[G:.*]] = heterps.gemm %[[X]], %[[W]], %[[B]] {alpha = 2.000000e+00 : f32, trans_b = true} : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %g = heterps.gemm %x, %w, %b {trans_b = true, alpha = 2.0 : f32} : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[G2:.*]] = heterps.gemm %[[X]], %[[W]] {trans_b = true} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %g2 = heterps.gemm %x, %w {trans_b = true} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %wt = heterps.transpose %w {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  // CHECK: %[[M:.*]] = heterps.matmul %[[A]], %{{.*}} : (tensor<4x?x16xf32>, tensor<16x8xf32>) -> tensor<4x?x8xf32>
  %m = heterps.matmul %a, %wt : (tensor<4x?x16xf32>, tensor<16x8xf32>) -> tensor<4x?x8xf32>
  // CHECK: %[[MV:.*]] = heterps.matmul %[[X]], %[[V]] : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?xf32>
  %mv = heterps.matmul %x, %v : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?xf32>
  return %g, %g2, %m, %mv : tensor<?x8xf32>, tensor<?x8xf32>, tensor<4x?x8xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[Y:.*]]: tensor<8xf32>)
func.func @elementwise(%x: tensor<?x8xf32>, %y: tensor<8xf32>) -> tensor<?x8xf32> {
  // CHECK: %[[ADD:.*]] = heterps.add %[[X]], %[[Y]] : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %0 = heterps.add %x, %y : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[SUB:.*]] = heterps.sub %[[ADD]], %[[Y]]
  %1 = heterps.sub %0, %y : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[MUL:.*]] = heterps.mul %[[SUB]], %[[X]]
  %2 = heterps.mul %1, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[DIV:.*]] = heterps.div %[[MUL]], %[[Y]]
  %3 = heterps.div %2, %y : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[POW:.*]] = heterps.pow %[[DIV]], %[[Y]]
  %4 = heterps.pow %3, %y : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[NEG:.*]] = heterps.neg %[[POW]] : tensor<?x8xf32>
  %5 = heterps.neg %4 : tensor<?x8xf32>
  // CHECK: %[[ABS:.*]] = heterps.abs %[[NEG]] : tensor<?x8xf32>
  %6 = heterps.abs %5 : tensor<?x8xf32>
  // CHECK: %[[EXP:.*]] = heterps.exp %[[ABS]] : tensor<?x8xf32>
  %7 = heterps.exp %6 : tensor<?x8xf32>
  // CHECK: %[[LOG:.*]] = heterps.log %[[EXP]] : tensor<?x8xf32>
  %8 = heterps.log %7 : tensor<?x8xf32>
  // CHECK: %[[SQRT:.*]] = heterps.sqrt %[[LOG]] : tensor<?x8xf32>
  %9 = heterps.sqrt %8 : tensor<?x8xf32>
  // CHECK: %[[RELU:.*]] = heterps.relu %[[SQRT]] : tensor<?x8xf32>
  %10 = heterps.relu %9 : tensor<?x8xf32>
  // CHECK: %[[SIG:.*]] = heterps.sigmoid %[[RELU]] : tensor<?x8xf32>
  %11 = heterps.sigmoid %10 : tensor<?x8xf32>
  // CHECK: %[[TANH:.*]] = heterps.tanh %[[SIG]] : tensor<?x8xf32>
  %12 = heterps.tanh %11 : tensor<?x8xf32>
  // CHECK: %[[LEAKY:.*]] = heterps.leaky_relu %[[TANH]] {alpha = 2.000000e-01 : f32} : tensor<?x8xf32>
  %13 = heterps.leaky_relu %12 {alpha = 0.2 : f32} : tensor<?x8xf32>
  // CHECK: %[[CLIP:.*]] = heterps.clip %[[LEAKY]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<?x8xf32>
  %14 = heterps.clip %13 {min = 0.0 : f32, max = 6.0 : f32} : tensor<?x8xf32>
  // CHECK: %[[DROP:.*]] = heterps.dropout %[[CLIP]] {ratio = 1.000000e-01 : f32} : tensor<?x8xf32>
  %15 = heterps.dropout %14 {ratio = 0.1 : f32} : tensor<?x8xf32>
  // CHECK: %[[SM:.*]] = heterps.softmax %[[DROP]] {axis = 1 : i64} : tensor<?x8xf32>
  %16 = heterps.softmax %15 {axis = 1 : i64} : tensor<?x8xf32>
  // CHECK: %[[LSM:.*]] = heterps.log_softmax %[[SM]] : tensor<?x8xf32>
  %17 = heterps.log_softmax %16 : tensor<?x8xf32>
  // CHECK: return %[[LSM]]
  return %17 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @shapes
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x8xf32>, %[[Y:.*]]: tensor<?x4x2xf32>)
func.func @shapes(%x: tensor<?x4x8xf32>, %y: tensor<?x4x2xf32>) -> (tensor<?x4x10xf32>, tensor<?x32xf32>, tensor<?x8x4xf32>, tensor<?x8xf32>, tensor<?x1x8xf32>, tensor<1x1x1xf32>) {
  // CHECK: %[[CAT:.*]] = heterps.concat %[[X]], %[[Y]] {axis = -1 : i64} : (tensor<?x4x8xf32>, tensor<?x4x2xf32>) -> tensor<?x4x10xf32>
  %cat = heterps.concat %x, %y {axis = -1 : i64} : (tensor<?x4x8xf32>, tensor<?x4x2xf32>) -> tensor<?x4x10xf32>
  // CHECK: %[[FLAT:.*]] = heterps.reshape %[[X]] : (tensor<?x4x8xf32>) -> tensor<?x32xf32>
  %flat = heterps.reshape %x : (tensor<?x4x8xf32>) -> tensor<?x32xf32>
  // The batch merged with a dimension (B*4) and split from it again.
  // CHECK: %[[MERGED:.*]] = heterps.reshape %[[X]] : (tensor<?x4x8xf32>) -> tensor<?x8xf32>
  %merged = heterps.reshape %x : (tensor<?x4x8xf32>) -> tensor<?x8xf32>
  // CHECK: heterps.reshape %[[MERGED]] : (tensor<?x8xf32>) -> tensor<?x2x16xf32>
  %split = heterps.reshape %merged : (tensor<?x8xf32>) -> tensor<?x2x16xf32>
  // CHECK: %[[T:.*]] = heterps.transpose %[[X]] {perm = array<i64: 0, 2, 1>} : (tensor<?x4x8xf32>) -> tensor<?x8x4xf32>
  %t = heterps.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<?x4x8xf32>) -> tensor<?x8x4xf32>
  // CHECK: %[[SUM:.*]] = heterps.reduce_sum %[[X]] {axes = array<i64: 1>, keepdims = false} : (tensor<?x4x8xf32>) -> tensor<?x8xf32>
  %sum = heterps.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<?x4x8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[MEAN:.*]] = heterps.reduce_mean %[[X]] {axes = array<i64: -2>} : (tensor<?x4x8xf32>) -> tensor<?x1x8xf32>
  %mean = heterps.reduce_mean %x {axes = array<i64: -2>} : (tensor<?x4x8xf32>) -> tensor<?x1x8xf32>
  // CHECK: %[[MAX:.*]] = heterps.reduce_max %[[X]] : (tensor<?x4x8xf32>) -> tensor<1x1x1xf32>
  %max = heterps.reduce_max %x : (tensor<?x4x8xf32>) -> tensor<1x1x1xf32>
  // CHECK: return %[[CAT]], %[[FLAT]], %[[T]], %[[SUM]], %[[MEAN]], %[[MAX]]
  return %cat, %flat, %t, %sum, %mean, %max : tensor<?x4x10xf32>, tensor<?x32xf32>, tensor<?x8x4xf32>, tensor<?x8xf32>, tensor<?x1x8xf32>, tensor<1x1x1xf32>
}

// CHECK-LABEL: func.func @cnn
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x32x32xf32>, %[[F:.*]]: tensor<16x3x3x3xf32>, %[[B:.*]]: tensor<16xf32>)
func.func @cnn(%x: tensor<?x3x32x32xf32>, %f: tensor<16x3x3x3xf32>, %b: tensor<16xf32>) -> (tensor<?x16x1x1xf32>, tensor<?x16x9x9xf32>, tensor<?x16x16x16xf32>) {
  // CHECK: %[[C:.*]] = heterps.conv %[[X]], %[[F]], %[[B]] {pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32>
  %c = heterps.conv %x, %f, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32>
  // CHECK: %[[C2:.*]] = heterps.conv %[[X]], %[[F]] {dilations = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x14x14xf32>
  %c2 = heterps.conv %x, %f {strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x14x14xf32>
  %s = heterps.load_param @running_mean : tensor<4xf32>
  // CHECK: %[[BN:.*]] = heterps.batch_norm %[[C]], %[[B]], %[[B]], %[[B]], %[[B]] {epsilon = 1.000000e-03 : f32} : (tensor<?x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32>
  %bn = heterps.batch_norm %c, %b, %b, %b, %b {epsilon = 1.0e-3 : f32} : (tensor<?x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32>
  // CHECK: %[[MP:.*]] = heterps.max_pool %[[BN]] {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x16x32x32xf32>) -> tensor<?x16x16x16xf32>
  %mp = heterps.max_pool %bn {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x16x32x32xf32>) -> tensor<?x16x16x16xf32>
  // CHECK: %[[AP:.*]] = heterps.avg_pool %[[MP]] {ceil_mode = true, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x16x16x16xf32>) -> tensor<?x16x9x9xf32>
  %ap = heterps.avg_pool %mp {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true, count_include_pad = true} : (tensor<?x16x16x16xf32>) -> tensor<?x16x9x9xf32>
  // A 3x3 window with dilation 2 spans 5 elements: (16 - 5) / 1 + 1 = 12.
  // CHECK: heterps.max_pool %[[MP]] {dilations = array<i64: 2, 2>, kernel_shape = array<i64: 3, 3>} : (tensor<?x16x16x16xf32>) -> tensor<?x16x12x12xf32>
  %dp = heterps.max_pool %mp {kernel_shape = array<i64: 3, 3>, dilations = array<i64: 2, 2>} : (tensor<?x16x16x16xf32>) -> tensor<?x16x12x12xf32>
  // CHECK: %[[GP:.*]] = heterps.global_avg_pool %[[AP]] : (tensor<?x16x9x9xf32>) -> tensor<?x16x1x1xf32>
  %gp = heterps.global_avg_pool %ap : (tensor<?x16x9x9xf32>) -> tensor<?x16x1x1xf32>
  // CHECK: return %[[GP]], %[[AP]], %[[MP]]
  return %gp, %ap, %mp : tensor<?x16x1x1xf32>, tensor<?x16x9x9xf32>, tensor<?x16x16x16xf32>
}

// CHECK-LABEL: func.func @norms
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x8xf32>, %[[G:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
func.func @norms(%x: tensor<?x4x8xf32>, %g: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8xf32>) {
  // CHECK: %[[LN:.*]] = heterps.layer_norm %[[X]], %[[G]] {axis = 1 : i64} : (tensor<?x4x8xf32>, tensor<4x8xf32>) -> tensor<?x4x8xf32>
  %ln = heterps.layer_norm %x, %g {axis = 1 : i64} : (tensor<?x4x8xf32>, tensor<4x8xf32>) -> tensor<?x4x8xf32>
  // CHECK: %[[LN2:.*]] = heterps.layer_norm %[[X]], %[[B]], %[[B]] {epsilon = 1.000000e-03 : f32} : (tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x4x8xf32>
  %ln2 = heterps.layer_norm %x, %b, %b {epsilon = 1.0e-3 : f32} : (tensor<?x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x4x8xf32>
  return %ln, %ln2 : tensor<?x4x8xf32>, tensor<?x4x8xf32>
}

// CHECK-LABEL: func.func @losses
// CHECK-SAME: (%[[P:.*]]: tensor<?x1xf32>, %[[Y:.*]]: tensor<?x1xf32>, %[[L:.*]]: tensor<?x10xf32>, %[[C:.*]]: tensor<?xi64>)
func.func @losses(%p: tensor<?x1xf32>, %y: tensor<?x1xf32>, %logits: tensor<?x10xf32>, %cls: tensor<?xi64>) -> (tensor<f32>, tensor<?x1xf32>, tensor<f32>, tensor<?xf32>, tensor<f32>) {
  // CHECK: %[[BCE:.*]] = heterps.bce_loss %[[P]], %[[Y]] {from_logits = true} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
  %bce = heterps.bce_loss %p, %y {from_logits = true} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
  // CHECK: %[[MSE:.*]] = heterps.mse_loss %[[P]], %[[Y]] {reduction = #heterps.reduction<none>} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %mse = heterps.mse_loss %p, %y {reduction = #heterps.reduction<none>} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  // CHECK: %[[CE:.*]] = heterps.softmax_ce_loss %[[L]], %[[C]] {reduction = #heterps.reduction<sum>} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  %ce = heterps.softmax_ce_loss %logits, %cls {reduction = #heterps.reduction<sum>} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  %lp = heterps.log_softmax %logits : tensor<?x10xf32>
  // CHECK: %[[NLL:.*]] = heterps.nll_loss %{{.*}}, %[[C]] {reduction = #heterps.reduction<none>} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<?xf32>
  %nll = heterps.nll_loss %lp, %cls {reduction = #heterps.reduction<none>} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<?xf32>
  // CHECK: %[[NLLM:.*]] = heterps.nll_loss %{{.*}}, %[[C]] : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  %nllm = heterps.nll_loss %lp, %cls : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  return %bce, %mse, %ce, %nll, %nllm : tensor<f32>, tensor<?x1xf32>, tensor<f32>, tensor<?xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @parameter_server
// CHECK-SAME: (%[[K:.*]]: tensor<?xi64>, %[[G:.*]]: tensor<?x8xf32>)
func.func @parameter_server(%keys: tensor<?xi64>, %grads: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK: %[[ROWS:.*]] = heterps.ps_pull @table[%[[K]]] : (tensor<?xi64>) -> tensor<?x8xf32>
  %rows = heterps.ps_pull @table[%keys] : (tensor<?xi64>) -> tensor<?x8xf32>
  // CHECK: heterps.ps_push @table[%[[K]]], %[[G]] : tensor<?xi64>, tensor<?x8xf32>
  heterps.ps_push @table[%keys], %grads : tensor<?xi64>, tensor<?x8xf32>
  return %rows : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @integer_arithmetic
// CHECK-SAME: (%[[A:.*]]: tensor<4xui8>, %[[B:.*]]: tensor<?x4xi32>)
func.func @integer_arithmetic(%a: tensor<4xui8>, %b: tensor<?x4xi32>) -> (tensor<4xui8>, tensor<?x4xi32>) {
  // CHECK: %[[D:.*]] = heterps.div %[[A]], %[[A]] : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %d = heterps.div %a, %a : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  // CHECK: %[[C:.*]] = heterps.clip %[[B]] {max = 1.000000e+01 : f32, min = 0.000000e+00 : f32} : tensor<?x4xi32>
  %c = heterps.clip %b {min = 0.0 : f32, max = 10.0 : f32} : tensor<?x4xi32>
  return %d, %c : tensor<4xui8>, tensor<?x4xi32>
}

// CHECK-LABEL: func.func @conv_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<?x16x8x8xf32>, %[[W:.*]]: tensor<16x4x3x3xf32>, %[[B:.*]]: tensor<8xf32>)
func.func @conv_transpose(%x: tensor<?x16x8x8xf32>, %w: tensor<16x4x3x3xf32>, %b: tensor<8xf32>)
    -> (tensor<?x8x16x16xf32>, tensor<?x4x10x10xf32>) {
  // 2 * (8 - 1) + 1 + 3 - 2 = 16; 8 output channels from 4 per group.
  // CHECK: %[[Y:.*]] = heterps.conv_transpose %[[X]], %[[W]], %[[B]] {group = 2 : i64, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x16x8x8xf32>, tensor<16x4x3x3xf32>, tensor<8xf32>) -> tensor<?x8x16x16xf32>
  %y = heterps.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>, group = 2 : i64}
      : (tensor<?x16x8x8xf32>, tensor<16x4x3x3xf32>, tensor<8xf32>) -> tensor<?x8x16x16xf32>
  // CHECK: %[[Z:.*]] = heterps.conv_transpose %[[X]], %[[W]] : (tensor<?x16x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<?x4x10x10xf32>
  %z = heterps.conv_transpose %x, %w : (tensor<?x16x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<?x4x10x10xf32>
  // CHECK: return %[[Y]], %[[Z]]
  return %y, %z : tensor<?x8x16x16xf32>, tensor<?x4x10x10xf32>
}
