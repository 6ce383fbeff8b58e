// A run of ops on one type may be cut into several pipeline stages. With
// Adam the two wide layers need 17.2 GB on one unit, more than a 16 GB GPU,
// and the CPUs cannot all-reduce 4.3 GB fast enough for the target: every
// solver puts both layers on GPUs, one stage each, and marks the op that
// starts the second stage with heterps.stage_cut.
// RUN: heterps-opt %S/Inputs/two-wide-layers.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=dp throughput=1000 batch=512 report=%t.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: heterps-opt %S/Inputs/two-wide-layers.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=rl throughput=1000 batch=512" | FileCheck %s
// RUN: heterps-opt %S/Inputs/two-wide-layers.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=exhaustive throughput=1000 batch=512" | FileCheck %s
// RUN: heterps-opt %S/Inputs/two-wide-layers.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=genetic throughput=1000 batch=512" | FileCheck %s
// RUN: heterps-opt %S/Inputs/two-wide-layers.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-schedule="cluster=%S/Inputs/cluster-memory.json solver=dp throughput=1000 batch=512" | FileCheck %s --check-prefix=STAGES

// CHECK-LABEL: func.func @wide
// CHECK: %[[W1:.*]] = heterps.load_param @w1 {{{.*}}heterps.device = #heterps.device<"gpu16", gpu>
// CHECK-NOT: heterps.stage_cut
// CHECK: %[[H:.*]] = heterps.matmul %{{.*}}, %[[W1]] {{{.*}}heterps.device = #heterps.device<"gpu16", gpu>
// CHECK-NOT: heterps.stage_cut
// CHECK: %[[W2:.*]] = heterps.load_param @w2 {{{.*}}heterps.device = #heterps.device<"gpu16", gpu>
// CHECK: heterps.matmul %[[H]], %[[W2]] {{{.*}}heterps.device = #heterps.device<"gpu16", gpu>, {{.*}}heterps.stage_cut}

// REPORT: "feasible": true
// REPORT: "stages": [
// REPORT: "ops": [
// REPORT-NEXT: "fc1"
// REPORT-NEXT: ],
// REPORT: "resident_gb": 8.58993459{{[0-9]*}},
// REPORT-NEXT: "resource": "gpu16",
// REPORT: "ops": [
// REPORT-NEXT: "fc2",
// REPORT: "resident_gb": 8.58993459{{[0-9]*}},
// REPORT-NEXT: "resource": "gpu16",

// The pipeline: two stages on gpu16, the activations sent forward and their
// gradients back.
// STAGES: heterps.pipeline
// STAGES: heterps.stage 0 on <"gpu16", gpu> units 1
// STAGES: heterps.send %{{.*}} channel [[FWD:[0-9]+]] : tensor<?x131072xf32>
// STAGES: heterps.stage 1 on <"gpu16", gpu> units 1
// STAGES: heterps.recv channel [[FWD]] : tensor<?x131072xf32>
// STAGES: heterps.update_param adam @w2
// STAGES: heterps.send %{{.*}} channel [[BWD:[0-9]+]] : tensor<?x131072xf32>
// STAGES: heterps.stage 0 on <"gpu16", gpu> units 1
// STAGES: heterps.recv channel [[BWD]] : tensor<?x131072xf32>
// STAGES: heterps.update_param adam @w1

// The same at a size that runs here: two stages of one type train exactly
// as one stage does (same losses step by step).
// RUN: heterps-opt %S/Inputs/two-layers.mlir --heterps-autodiff='loss=mse optimizer=adam learning-rate=0.0001' --heterps-schedule="cluster=%S/Inputs/cluster-small-gpu.json solver=rl throughput=200000 batch=512" --heterps-emit-plan=file=%t.two.plan -o /dev/null
// RUN: heterps-run %t.two.plan --print-plan | FileCheck %s --check-prefix=PLAN
// RUN: heterps-run %t.two.plan --steps=3 --batch=16 --log-every=1 --fallback=cpu --max-workers=2 > %t.two.log
// RUN: heterps-opt %S/Inputs/two-layers.mlir --heterps-autodiff='loss=mse optimizer=adam learning-rate=0.0001' --heterps-schedule="cluster=%S/Inputs/cluster-memory.json solver=cpu-only throughput=1000 batch=512" --heterps-emit-plan=file=%t.one.plan -o /dev/null
// RUN: heterps-run %t.one.plan --steps=3 --batch=16 --log-every=1 > %t.one.log
// RUN: grep -o 'loss [0-9.]*' %t.two.log > %t.two.loss
// RUN: grep -o 'loss [0-9.]*' %t.one.log > %t.one.loss
// RUN: diff %t.one.loss %t.two.loss
// RUN: FileCheck %s --check-prefix=LOSSES < %t.two.loss

// PLAN: 2 stages, 2 channels
// PLAN: stage 0 on gpu16 (gpu) x1
// PLAN: stage 1 on gpu16 (gpu) x1
// LOSSES-COUNT-3: loss {{[0-9]+\.[0-9]+}}
