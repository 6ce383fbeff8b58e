// The shipped example verifies, round-trips and reports its cost.
// RUN: heterps-opt %heterps_src_root/examples/ctr.mlir | heterps-opt | FileCheck %s
// RUN: heterps-opt %heterps_src_root/examples/ctr.mlir --heterps-print-op-cost=batch-size=512 2>&1 >/dev/null | FileCheck %s --check-prefix=COST

// CHECK-LABEL: func.func @train_step
// CHECK-COUNT-4: heterps.embedding_lookup
// CHECK-COUNT-4: heterps.gemm
// CHECK: heterps.bce_loss

// COST: op cost for batch size 512
// COST: total: fwd_flops={{[0-9]+}} bwd_flops={{[0-9]+}} fwd_bytes={{[0-9]+}} bwd_bytes={{[0-9]+}} param_bytes=215940 embedding_bytes=360448
