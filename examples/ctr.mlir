// A small CTR model in the HeterPS dialect: 4 sparse slots (embedding tables
// in the parameter server), 13 dense features, bottom and top MLPs, a sigmoid
// click probability and a binary cross-entropy loss. The ONNX frontend
// produces the same structure from a PyTorch export.
//
//   heterps-opt examples/ctr.mlir --heterps-print-op-cost=batch-size=512

module attributes {heterps.resources = [#heterps.device<"cpu", cpu>,
                                        #heterps.device<"gpu", gpu>]} {
  heterps.embedding_table @slot0 {vocab = 1000000 : i64, dim = 16 : i64, initializer = #heterps.init<uniform(-0.01, 0.01)>}
  heterps.embedding_table @slot1 {vocab = 1000000 : i64, dim = 16 : i64, initializer = #heterps.init<uniform(-0.01, 0.01)>}
  heterps.embedding_table @slot2 {vocab = 100000 : i64, dim = 16 : i64, initializer = #heterps.init<uniform(-0.01, 0.01)>}
  heterps.embedding_table @slot3 {vocab = 10000 : i64, dim = 16 : i64, initializer = #heterps.init<uniform(-0.01, 0.01)>}

  heterps.param @bottom.weight : tensor<13x16xf32> = #heterps.init<xavier_uniform>
  heterps.param @bottom.bias : tensor<16xf32> = #heterps.init<zeros>
  heterps.param @top1.weight : tensor<80x256xf32> = #heterps.init<xavier_uniform>
  heterps.param @top1.bias : tensor<256xf32> = #heterps.init<zeros>
  heterps.param @top2.weight : tensor<256x128xf32> = #heterps.init<xavier_uniform>
  heterps.param @top2.bias : tensor<128xf32> = #heterps.init<zeros>
  heterps.param @out.weight : tensor<128x1xf32> = #heterps.init<xavier_uniform>
  heterps.param @out.bias : tensor<1xf32> = #heterps.init<zeros>

  func.func @train_step(%dense: tensor<?x13xf32>, %slot0: tensor<?x1xi64>,
                        %slot1: tensor<?x1xi64>, %history: tensor<?x8xi64>,
                        %slot3: tensor<?x1xi64>,
                        %label: tensor<?x1xf32>)
      -> (tensor<?x1xf32> {heterps.name = "logit"},
          tensor<f32> {heterps.name = "loss"}) {
    // Sparse features: one id per slot, and a bag of 8 ids averaged.
    %e0 = heterps.embedding_lookup @slot0[%slot0] {combiner = #heterps.combiner<sum>} : (tensor<?x1xi64>) -> tensor<?x16xf32>
    %e1 = heterps.embedding_lookup @slot1[%slot1] {combiner = #heterps.combiner<sum>} : (tensor<?x1xi64>) -> tensor<?x16xf32>
    %e2 = heterps.embedding_lookup @slot2[%history] {combiner = #heterps.combiner<mean>} : (tensor<?x8xi64>) -> tensor<?x16xf32>
    %e3 = heterps.embedding_lookup @slot3[%slot3] : (tensor<?x1xi64>) -> tensor<?x1x16xf32>
    %e3f = heterps.reshape %e3 : (tensor<?x1x16xf32>) -> tensor<?x16xf32>

    // Bottom MLP over the dense features.
    %bw = heterps.load_param @bottom.weight : tensor<13x16xf32>
    %bb = heterps.load_param @bottom.bias : tensor<16xf32>
    %b0 = heterps.gemm %dense, %bw, %bb : (tensor<?x13xf32>, tensor<13x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
    %b1 = heterps.relu %b0 : tensor<?x16xf32>

    // Interaction: concatenate dense and sparse representations.
    %x = heterps.concat %b1, %e0, %e1, %e2, %e3f {axis = 1 : i64} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x80xf32>

    // Top MLP.
    %w1 = heterps.load_param @top1.weight : tensor<80x256xf32>
    %c1 = heterps.load_param @top1.bias : tensor<256xf32>
    %h1 = heterps.gemm %x, %w1, %c1 : (tensor<?x80xf32>, tensor<80x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
    %a1 = heterps.relu %h1 : tensor<?x256xf32>
    %w2 = heterps.load_param @top2.weight : tensor<256x128xf32>
    %c2 = heterps.load_param @top2.bias : tensor<128xf32>
    %h2 = heterps.gemm %a1, %w2, %c2 : (tensor<?x256xf32>, tensor<256x128xf32>, tensor<128xf32>) -> tensor<?x128xf32>
    %a2 = heterps.relu %h2 : tensor<?x128xf32>
    %w3 = heterps.load_param @out.weight : tensor<128x1xf32>
    %c3 = heterps.load_param @out.bias : tensor<1xf32>
    %logit = heterps.gemm %a2, %w3, %c3 : (tensor<?x128xf32>, tensor<128x1xf32>, tensor<1xf32>) -> tensor<?x1xf32>
    %loss = heterps.bce_loss %logit, %label {from_logits = true} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
    return %logit, %loss : tensor<?x1xf32>, tensor<f32>
  }
}
