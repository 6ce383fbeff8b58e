// A staged, placed training step (autodiff, then the scheduling pipeline)
// becomes a plan with one stage per pipeline stage and a channel per
// heterps.send; a GPU stage runs only where there is a GPU, or on the CPU
// with --fallback=cpu.
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-autodiff --heterps-schedule="cluster=%S/Inputs/cluster-2types.json solver=dp throughput=200000 batch=512 micro-batches=2" --heterps-emit-plan=file=%t.plan -o %t.mlir
// RUN: FileCheck %s --input-file=%t.mlir
// RUN: heterps-run %t.plan --print-plan | FileCheck %s --check-prefix=PLAN
// RUN: not heterps-run %t.plan --steps=2 2>&1 | FileCheck %s --check-prefix=NOGPU
// RUN: heterps-run %t.plan --steps=2 --batch=16 --log-every=0 --fallback=cpu | FileCheck %s --check-prefix=FALLBACK

// CHECK: heterps.pipeline
// CHECK: heterps.stage 0 on <"cpu", cpu>
// CHECK: heterps.send
// CHECK: heterps.stage 1 on <"gpu", gpu>
// CHECK: heterps.recv

// PLAN: plan: function @ctr, {{.*}} 2 stages, {{[1-9][0-9]*}} channels, micro-batches 2
// PLAN: stage 0 on cpu (cpu)
// PLAN: stage 1 on gpu (gpu)
// PLAN: training: loss bce_loss (output 0), optimizer sgd

// NOGPU: heterps-run: error: stage 1 is placed on GPU resource '{{.*}}', but {{.*}}; run with --fallback=cpu to execute it on the CPU

// FALLBACK: trained 2 steps
