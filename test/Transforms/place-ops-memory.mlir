// Each unit's memory bounds what its stage holds. The wide layer's 4.3 GB of
// weights train with SGD in 8.6 GB (weights and gradients), which fits the
// 16 GB GPU; with Adam's two moments they need 17.2 GB, which only the 24 GB
// CPU holds, whichever solver searches.
// RUN: heterps-opt %S/Inputs/wide-layer.mlir --heterps-autodiff='loss=mse optimizer=sgd' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=dp throughput=100 batch=512 report=%t.sgd.json" | FileCheck %s --check-prefix=SGD
// RUN: FileCheck %s --check-prefix=SGD-REPORT < %t.sgd.json
// RUN: heterps-opt %S/Inputs/wide-layer.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=dp throughput=100 batch=512 report=%t.adam.json" | FileCheck %s --check-prefix=ADAM
// RUN: FileCheck %s --check-prefix=ADAM-REPORT < %t.adam.json
// RUN: heterps-opt %S/Inputs/wide-layer.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=rl throughput=100 batch=512" | FileCheck %s --check-prefix=ADAM
// RUN: heterps-opt %S/Inputs/wide-layer.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=exhaustive throughput=100 batch=512" | FileCheck %s --check-prefix=ADAM
// RUN: heterps-opt %S/Inputs/wide-layer.mlir --heterps-autodiff='loss=mse optimizer=adam' --heterps-place-ops="cluster=%S/Inputs/cluster-memory.json solver=heuristic throughput=100 batch=512" | FileCheck %s --check-prefix=ADAM

// SGD-LABEL: func.func @wide
// SGD: heterps.matmul {{.*}}heterps.device = #heterps.device<"gpu16", gpu>
// SGD: heterps.update_param sgd @w{{.*}}heterps.device = #heterps.device<"gpu16", gpu>

// SGD-REPORT: "feasible": true
// SGD-REPORT: "activation_gb": 0.537
// SGD-REPORT: "memory_gb": 9.12
// SGD-REPORT: "memory_limit_gb": 16
// SGD-REPORT: "resident_gb": 8.589934592
// SGD-REPORT: "resource": "gpu16"

// ADAM-LABEL: func.func @wide
// ADAM: heterps.matmul {{.*}}heterps.device = #heterps.device<"cpu", cpu>
// ADAM: heterps.update_param adam @w{{.*}}heterps.device = #heterps.device<"cpu", cpu>

// The 768 GB table is the parameter server's, as every table is; the report
// says it would not fit any unit.
// ADAM-REPORT: "feasible": true
// ADAM-REPORT: "memory_limit_gb": 24
// ADAM-REPORT: "resident_gb": 17.179869184
// ADAM-REPORT: "resource": "cpu"
// ADAM-REPORT: "tables": [
// ADAM-REPORT-NEXT: {
// ADAM-REPORT-NEXT: "exceeds_every_unit": true,
// ADAM-REPORT-NEXT: "gb": 768,
// ADAM-REPORT-NEXT: "location": "ps",
// ADAM-REPORT-NEXT: "name": "ids"
