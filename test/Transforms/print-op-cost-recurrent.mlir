// The cost of the recurrent layers and their gradients at a batch of 2
// samples, worked out by hand: T steps of the input and recurrent GEMMs of
// every gate, plus 8 FLOPs of gate arithmetic per gate element; a gradient
// reruns the forward pass and does both GEMMs twice more.
// RUN: heterps-opt %s --heterps-print-op-cost=batch-size=2 2>&1 >/dev/null | FileCheck %s

// CHECK: op cost for batch size 2
func.func @gru(%x: tensor<5x?x4xf32>, %w: tensor<1x24x4xf32>, %r: tensor<1x24x8xf32>, %b: tensor<1x48xf32>,
               %xs: tensor<3x?x2xf32>, %lw: tensor<2x12x2xf32>, %lr: tensor<2x12x3xf32>, %lb: tensor<2x24xf32>)
    -> tensor<1x?x8xf32> {
  // GEMMs 2 x 5 x 2 x 3 x 8 x (4 + 8) = 5760, gates 8 x 5 x 2 x 3 x 8 =
  // 1920; backward 3x. Bytes (40 + 96 + 192 + 48 + 80 + 16) x 4.
  // CHECK-NEXT: heterps.gru @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=7680 bwd_flops=23040 fwd_bytes=1888 bwd_bytes=5664 param_bytes=0 embedding_bytes=0
  %y, %yh = heterps.gru %x, %w, %r, %b {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x24x4xf32>, tensor<1x24x8xf32>, tensor<1x48xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  // A bidirectional LSTM: D = 2, G = 4, H = 3, I = 2, T = 3: GEMMs
  // 2 x 3 x 2 x 2 x 4 x 3 x 5 = 1440, gates 8 x 3 x 2 x 2 x 4 x 3 = 1152.
  // CHECK-NEXT: heterps.lstm @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=2592 bwd_flops=7776
  %ly, %lyh, %lyc = heterps.lstm %xs, %lw, %lr, %lb {hidden_size = 3 : i64, direction = "bidirectional"}
      : (tensor<3x?x2xf32>, tensor<2x12x2xf32>, tensor<2x12x3xf32>, tensor<2x24xf32>)
      -> (tensor<3x2x?x3xf32>, tensor<2x?x3xf32>, tensor<2x?x3xf32>)
  // The gradient does the backward's work in the backward pass.
  // CHECK-NEXT: heterps.gru_grad @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=23040 bwd_flops=0
  %g:5 = heterps.gru_grad %x, %w, %r, %b y_h_grad(%yh) {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x24x4xf32>, tensor<1x24x8xf32>, tensor<1x48xf32>, tensor<1x?x8xf32>)
      -> (tensor<5x?x4xf32>, tensor<1x24x4xf32>, tensor<1x24x8xf32>, tensor<1x48xf32>, tensor<1x?x8xf32>)
  return %g#4 : tensor<1x?x8xf32>
}
