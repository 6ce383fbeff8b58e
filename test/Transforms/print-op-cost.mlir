// The cost every op reports, at a batch of 2 samples; the figures are worked
// out by hand next to each op.
// RUN: heterps-opt %s --heterps-print-op-cost=batch-size=2 2>&1 >/dev/null | FileCheck %s
// The IR is unchanged.
// RUN: heterps-opt %s --heterps-print-op-cost | FileCheck %s --check-prefix=IR

heterps.embedding_table @t {vocab = 100 : i64, dim = 8 : i64, initializer = #heterps.init<zeros>}
heterps.param @w : tensor<13x64xf32> = #heterps.init<xavier_uniform>

// CHECK: op cost for batch size 2
// IR-LABEL: func.func @mixed
func.func @mixed(%x: tensor<?x13xf32>, %ids: tensor<?x3xi64>, %img: tensor<?x3x8x8xf32>, %f: tensor<4x3x3x3xf32>) -> (tensor<?x64xf32>, tensor<?x8xf32>, tensor<?x64xf32>) {
  // 13 x 64 x 4 bytes of parameters.
  // CHECK-NEXT: heterps.load_param @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=0 bwd_flops=0 fwd_bytes=0 bwd_bytes=0 param_bytes=3328 embedding_bytes=0
  %w = heterps.load_param @w : tensor<13x64xf32>
  // 2 x 128 outputs x 13; bytes (26 + 832 + 128) x 4.
  // CHECK-NEXT: heterps.matmul @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=3328 bwd_flops=6656 fwd_bytes=3944 bwd_bytes=7888 param_bytes=0 embedding_bytes=0
  %y = heterps.matmul %x, %w : (tensor<?x13xf32>, tensor<13x64xf32>) -> tensor<?x64xf32>
  // 128 elements; 2 x 128 x 4 bytes.
  // CHECK-NEXT: heterps.relu @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=128 bwd_flops=256 fwd_bytes=1024 bwd_bytes=2048 param_bytes=0 embedding_bytes=0
  %r = heterps.relu %y : tensor<?x64xf32>
  // 6 rows of 8 floats pulled and summed; ids 6 x 8 bytes, result 16 x 4.
  // CHECK-NEXT: heterps.embedding_lookup @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=48 bwd_flops=48 fwd_bytes=112 bwd_bytes=112 param_bytes=0 embedding_bytes=192
  %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>} : (tensor<?x3xi64>) -> tensor<?x8xf32>
  // 512 outputs x 27 multiply-adds; bytes (384 + 108 + 512) x 4.
  // CHECK-NEXT: heterps.conv @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=27648 bwd_flops=55296 fwd_bytes=4016 bwd_bytes=8032 param_bytes=0 embedding_bytes=0
  %c = heterps.conv %img, %f {pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x8x8xf32>
  // 128 outputs x 4-element windows; bytes (512 + 128) x 4.
  // CHECK-NEXT: heterps.max_pool @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=512 bwd_flops=512 fwd_bytes=2560 bwd_bytes=5120 param_bytes=0 embedding_bytes=0
  %p = heterps.max_pool %c {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>) -> tensor<?x4x4x4xf32>
  // A view: no work.
  // CHECK-NEXT: heterps.reshape @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=0 bwd_flops=0 fwd_bytes=0 bwd_bytes=0 param_bytes=0 embedding_bytes=0
  %flat = heterps.reshape %p : (tensor<?x4x4x4xf32>) -> tensor<?x64xf32>
  // IR: heterps.reshape
  return %r, %e, %flat : tensor<?x64xf32>, tensor<?x8xf32>, tensor<?x64xf32>
}

// Backward ops cost the backward work they do, as forward work: nothing
// differentiates them again.
// IR-LABEL: func.func @backward
func.func @backward(%x: tensor<?x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %dy: tensor<?x4x8x8xf32>, %y: tensor<?x4x8x8xf32>, %p: tensor<?x4x4x4xf32>, %dp: tensor<?x4x4x4xf32>, %s: tensor<4xf32>, %h: tensor<?x64xf32>, %dh: tensor<?x64xf32>, %ln: tensor<64xf32>) {
  // 512 outputs x 27-element windows, twice 2 FLOPs (input and filter
  // gradients), plus the bias sum of 512; (384 + 108 + 512 + 384 + 108 + 4) x 4 bytes.
  // CHECK-NEXT: heterps.conv_grad @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=55808 bwd_flops=0 fwd_bytes=6000 bwd_bytes=0 param_bytes=0 embedding_bytes=0
  %dx, %df, %db = heterps.conv_grad %x, %f, %dy {pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  // 128 outputs x 4-element windows; (512 + 128 + 128 + 512) x 4 bytes.
  // CHECK-NEXT: heterps.pool_grad @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=512 bwd_flops=0 fwd_bytes=5120 bwd_bytes=0 param_bytes=0 embedding_bytes=0
  %dpool = heterps.pool_grad max %y, %p, %dp {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
  // 10 x 512 input elements; (512 + 4 + 512 + 512 + 4 + 4) x 4 bytes.
  // CHECK-NEXT: heterps.batch_norm_grad @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=5120 bwd_flops=0 fwd_bytes=6192 bwd_bytes=0 param_bytes=0 embedding_bytes=0
  %dbn, %dscale, %dbias = heterps.batch_norm_grad %y, %s, %dy : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  // 12 x 128; (128 + 64 + 128 + 128 + 64 + 64) x 4 bytes.
  // CHECK-NEXT: heterps.layer_norm_grad @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=1536 bwd_flops=0 fwd_bytes=2304 bwd_bytes=0 param_bytes=0 embedding_bytes=0
  %dln, %dls, %dlb = heterps.layer_norm_grad %h, %ln, %dh {axis = -1 : i64} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>)
  // 4 x 128; 3 x 128 x 4 bytes.
  // CHECK-NEXT: heterps.softmax_grad @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=512 bwd_flops=0 fwd_bytes=1536 bwd_bytes=0 param_bytes=0 embedding_bytes=0
  %dsm = heterps.softmax_grad %h, %dh {axis = 1 : i64} : tensor<?x64xf32>
  // 3 x 128 for sigmoid's y (1 - y) dy; 4 x 128 x 4 bytes.
  // CHECK-NEXT: heterps.unary_grad @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=384 bwd_flops=0 fwd_bytes=2048 bwd_bytes=0 param_bytes=0 embedding_bytes=0
  %dsig = heterps.unary_grad sigmoid %h, %h, %dh : tensor<?x64xf32>
  // The module's total: @mixed's (31664, 62768, 11656, 23200, 3328, 192)
  // and these.
  // CHECK-NEXT: total: fwd_flops=95536 bwd_flops=62768 fwd_bytes=34856 bwd_bytes=23200 param_bytes=3328 embedding_bytes=192
  return
}
