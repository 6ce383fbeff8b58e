// A staged, placed training step (autodiff, then the scheduling pipeline)
// becomes a plan with one stage per pipeline stage (its parts joined) and a
// channel per heterps.send; a GPU stage runs only where there is a GPU, or
// on the CPU with --fallback=cpu, pipelined by default.
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-autodiff --heterps-schedule="cluster=%S/Inputs/cluster-2types.json solver=dp throughput=200000 batch=512 micro-batches=2" --heterps-emit-plan=file=%t.plan -o %t.mlir
// RUN: FileCheck %s --input-file=%t.mlir
// RUN: heterps-run %t.plan --print-plan | FileCheck %s --check-prefix=PLAN
// RUN: heterps-opt %t.mlir --heterps-emit-plan="file=%t.same.plan batch=512"
// RUN: not heterps-opt %t.mlir --heterps-emit-plan="file=%t.other.plan batch=256" 2>&1 | FileCheck %s --check-prefix=OTHER-BATCH
// RUN: not heterps-run %t.plan --steps=2 2>&1 | FileCheck %s --check-prefix=NOGPU
// RUN: heterps-run %t.plan --steps=2 --batch=16 --log-every=0 --fallback=cpu --max-workers=2 | FileCheck %s --check-prefix=FALLBACK

// The paper's layout: each stage owns the forward and the backward of its
// layers. Stage 0 (the embedding lookups) sends the rows to stage 1 (the
// MLP, its loss, its backward and its updates), which sends their gradients
// back to the second part of stage 0 (the table pushes).
// CHECK: heterps.pipeline
// CHECK: heterps.stage 0 on <"cpu", cpu> units [[UNITS:[0-9]+]]
// CHECK: heterps.embedding_lookup
// CHECK: heterps.send {{.*}} channel [[ROWS:[0-9]+]]
// CHECK: heterps.stage 1 on <"gpu", gpu>
// CHECK: heterps.recv channel [[ROWS]]
// CHECK: heterps.bce_loss
// CHECK: heterps.update_param
// CHECK: heterps.send {{.*}} channel [[GRAD:[0-9]+]]
// CHECK: heterps.stage 0 on <"cpu", cpu> units [[UNITS]]
// CHECK-DAG: heterps.recv channel [[GRAD]]
// CHECK-DAG: heterps.embedding_grad
// CHECK: heterps.ps_push

// The plan's batch is the one it was scheduled for.
// PLAN: plan: function @ctr, {{.*}} 2 stages, 4 channels, batch 512, micro-batches 2
// PLAN: stage 0 on cpu (cpu)
// PLAN: stage 1 on gpu (gpu)
// PLAN: training: loss bce_loss (output 0), optimizer sgd

// NOGPU: heterps-run: error: stage 1 is placed on GPU resource '{{.*}}', but {{.*}}; run with --fallback=cpu to execute it on the CPU

// FALLBACK: pipeline: 2 stages, 2 workers, 2 micro-batches per step, 1f1b
// FALLBACK-NEXT: stage 0 on cpu (cpu) x{{[0-9]+}}: 1 replica, 2 segments
// FALLBACK-NEXT: stage 1 on gpu (gpu) x{{[0-9]+}}: 1 replica, 1 segment
// FALLBACK: trained 2 steps

// OTHER-BATCH: error: heterps-emit-plan: batch=256 is not the batch the plan was scheduled for (512, heterps.prediction): its predicted figures are for that batch; give batch=512, or schedule again with batch=256
