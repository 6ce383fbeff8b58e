// RUN: heterps-opt %s --heterps-autodiff='loss=bce optimizer=adam learning-rate=0.01' --heterps-emit-plan='file=%t.plan batch=64' | FileCheck %s
// RUN: heterps-run %t.plan --print-plan | FileCheck %s --check-prefix=PLAN
// RUN: heterps-run %t.plan --steps=20 --log-every=10 | FileCheck %s --check-prefix=TRAIN

// The pass writes the plan and leaves the IR as it is.
// CHECK-LABEL: func.func @main
// CHECK: heterps.gemm {{.*}}user.note = "from the notebook"
// CHECK: heterps.update_param adam @w

// PLAN: plan: function @main, {{[0-9]+}} values, 2 dense parameters, 1 embedding tables, 1 stages, 0 channels
// PLAN-NEXT: inputs: dense f32[?x4], ids i64[?x2], label f32[?x1] (label)
// PLAN-NEXT: stage 0 on cpu (cpu) x1: {{[0-9]+}} ops
// PLAN-NEXT: table 0 t: 50 x 4, optimizer adam
// PLAN-NEXT: training: loss bce (output 1), optimizer adam

// TRAIN: training {{.*}} on synthetic 65536 examples, seed 1, batch 64, 1 thread
// TRAIN: step 10  epoch 1  samples/s {{[0-9]+}}  loss {{[0-9.]+}}  auc {{[0-9.]+}}
// TRAIN: step 20
// TRAIN: trained 20 steps, 1280 samples in

heterps.embedding_table @t {vocab = 50 : i64, dim = 4 : i64, initializer = #heterps.init<uniform(-0.1, 0.1)>}
heterps.param @w : tensor<8x1xf32> = #heterps.init<xavier_uniform>
heterps.param @b : tensor<1xf32> = #heterps.init<zeros>

func.func @main(%dense: tensor<?x4xf32> {heterps.name = "dense"},
                %ids: tensor<?x2xi64> {heterps.name = "ids"}) -> (tensor<?x1xf32> {heterps.name = "click"}) {
  %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>} : (tensor<?x2xi64>) -> tensor<?x4xf32>
  %x = heterps.concat %dense, %e {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  %w = heterps.load_param @w : tensor<8x1xf32>
  %b = heterps.load_param @b : tensor<1xf32>
  // A note of another dialect stays in the IR and out of the plan (the
  // runtime refuses attributes an op does not take).
  %z = heterps.gemm %x, %w, %b {user.note = "from the notebook"} : (tensor<?x8xf32>, tensor<8x1xf32>, tensor<1xf32>) -> tensor<?x1xf32>
  %p = heterps.sigmoid %z : tensor<?x1xf32>
  return %p : tensor<?x1xf32>
}
