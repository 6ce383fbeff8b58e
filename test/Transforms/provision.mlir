// RUN: heterps-opt %s --heterps-provision="cluster=%S/Inputs/cluster-2types.json throughput=200000 batch=512" | FileCheck %s

// The lookups on CPUs need 11 units to pull and push their rows at 200000
// samples/s; the MLP on GPUs needs 2.
// The CPU stage is the bottleneck: its throughput is the plan's.
// CHECK: module attributes {heterps.prediction = #heterps.prediction<throughput = 210832.5{{[0-9]*}}, cost_usd = 2.0648{{[0-9]*}}, cost_per_hour = 1.567200e+01, stage_throughputs = [210832.5{{[0-9]*}}, 303577.5{{[0-9]*}}], batch = 512>
module {
  heterps.embedding_table @t0 {vocab = 1000000 : i64, dim = 64 : i64, initializer = #heterps.init<zeros>}
  heterps.embedding_table @t1 {vocab = 1000000 : i64, dim = 64 : i64, initializer = #heterps.init<zeros>}
  heterps.param @w1 : tensor<128x4096xf32> = #heterps.init<xavier_uniform>
  heterps.param @w2 : tensor<4096x4096xf32> = #heterps.init<xavier_uniform>
  heterps.param @w3 : tensor<4096x1xf32> = #heterps.init<xavier_uniform>
  // CHECK-LABEL: func.func @ctr
  func.func @ctr(%ids0: tensor<?x64xi64>, %ids1: tensor<?x64xi64>, %label: tensor<?x1xf32>) -> tensor<f32> {
    // CHECK: heterps.embedding_lookup @t0{{.*}}heterps.stage = #heterps.stage_assignment<index = 0, units = 11>
    %e0 = heterps.embedding_lookup @t0[%ids0] {combiner = #heterps.combiner<sum>, heterps.device = #heterps.device<"cpu", cpu>} : (tensor<?x64xi64>) -> tensor<?x64xf32>
    // CHECK: heterps.embedding_lookup @t1{{.*}}heterps.stage = #heterps.stage_assignment<index = 0, units = 11>
    %e1 = heterps.embedding_lookup @t1[%ids1] {combiner = #heterps.combiner<sum>, heterps.device = #heterps.device<"cpu", cpu>} : (tensor<?x64xi64>) -> tensor<?x64xf32>
    // CHECK: heterps.concat {{.*}}heterps.stage = #heterps.stage_assignment<index = 1, units = 2>
    %x = heterps.concat %e0, %e1 {axis = 1 : i64, heterps.device = #heterps.device<"gpu", gpu>} : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x128xf32>
    %w1 = heterps.load_param @w1 {heterps.device = #heterps.device<"gpu", gpu>} : tensor<128x4096xf32>
    %h1 = heterps.matmul %x, %w1 {heterps.device = #heterps.device<"gpu", gpu>} : (tensor<?x128xf32>, tensor<128x4096xf32>) -> tensor<?x4096xf32>
    %a1 = heterps.relu %h1 {heterps.device = #heterps.device<"gpu", gpu>} : tensor<?x4096xf32>
    %w2 = heterps.load_param @w2 {heterps.device = #heterps.device<"gpu", gpu>} : tensor<4096x4096xf32>
    %h2 = heterps.matmul %a1, %w2 {heterps.device = #heterps.device<"gpu", gpu>} : (tensor<?x4096xf32>, tensor<4096x4096xf32>) -> tensor<?x4096xf32>
    %a2 = heterps.relu %h2 {heterps.device = #heterps.device<"gpu", gpu>} : tensor<?x4096xf32>
    %w3 = heterps.load_param @w3 {heterps.device = #heterps.device<"gpu", gpu>} : tensor<4096x1xf32>
    %y = heterps.matmul %a2, %w3 {heterps.device = #heterps.device<"gpu", gpu>} : (tensor<?x4096xf32>, tensor<4096x1xf32>) -> tensor<?x1xf32>
    // CHECK: heterps.bce_loss {{.*}}heterps.stage = #heterps.stage_assignment<index = 1, units = 2>
    %l = heterps.bce_loss %y, %label {from_logits = true, heterps.device = #heterps.device<"gpu", gpu>} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
