// An MLP classifier for Fashion-MNIST (28x28 grey images, 10 classes):
// 784 -> 256 -> 128 -> 10 logits. scripts/train-fashion-mnist.sh compiles it
// into a training plan (softmax cross-entropy, Adam) and trains it on
// Debian's dataset-fashion-mnist, evaluating on the 10,000 test images.

module {
  heterps.param @fc1.weight : tensor<784x256xf32> = #heterps.init<kaiming_uniform>
  heterps.param @fc1.bias : tensor<256xf32> = #heterps.init<zeros>
  heterps.param @fc2.weight : tensor<256x128xf32> = #heterps.init<kaiming_uniform>
  heterps.param @fc2.bias : tensor<128xf32> = #heterps.init<zeros>
  heterps.param @out.weight : tensor<128x10xf32> = #heterps.init<xavier_uniform>
  heterps.param @out.bias : tensor<10xf32> = #heterps.init<zeros>

  func.func @main(%image: tensor<?x784xf32> {heterps.name = "image"})
      -> (tensor<?x10xf32> {heterps.name = "logits"}) {
    %w1 = heterps.load_param @fc1.weight : tensor<784x256xf32>
    %b1 = heterps.load_param @fc1.bias : tensor<256xf32>
    %h1 = heterps.gemm %image, %w1, %b1 : (tensor<?x784xf32>, tensor<784x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
    %a1 = heterps.relu %h1 : tensor<?x256xf32>
    %w2 = heterps.load_param @fc2.weight : tensor<256x128xf32>
    %b2 = heterps.load_param @fc2.bias : tensor<128xf32>
    %h2 = heterps.gemm %a1, %w2, %b2 : (tensor<?x256xf32>, tensor<256x128xf32>, tensor<128xf32>) -> tensor<?x128xf32>
    %a2 = heterps.relu %h2 : tensor<?x128xf32>
    %w3 = heterps.load_param @out.weight : tensor<128x10xf32>
    %b3 = heterps.load_param @out.bias : tensor<10xf32>
    %logits = heterps.gemm %a2, %w3, %b3 : (tensor<?x128xf32>, tensor<128x10xf32>, tensor<10xf32>) -> tensor<?x10xf32>
    return %logits : tensor<?x10xf32>
  }
}
