// One instance through every solver; the exhaustive solver is the oracle.
// At 200000 samples/s the optimum keeps the two lookups on CPUs and
// everything from the concat on GPUs.
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=exhaustive throughput=200000 batch=512 report=%t.exhaustive.json" | FileCheck %s --check-prefixes=CHECK,OPT
// RUN: FileCheck %s --check-prefix=REPORT < %t.exhaustive.json
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=dp throughput=200000 batch=512" | FileCheck %s --check-prefixes=CHECK,OPT
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=rl throughput=200000 batch=512 seed=3" | FileCheck %s --check-prefixes=CHECK,OPT
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=genetic throughput=200000 batch=512" | FileCheck %s --check-prefixes=CHECK,OPT
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=heuristic throughput=200000 batch=512" | FileCheck %s --check-prefixes=CHECK,HEURISTIC
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=greedy throughput=200000 batch=512" | FileCheck %s --check-prefixes=CHECK,GPU
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=gpu-only throughput=200000 batch=512" | FileCheck %s --check-prefixes=CHECK,GPU
// A user pin is honoured: the concat is forced onto the CPU.
// RUN: sed 's/{axis = 1 : i64}/{axis = 1 : i64, heterps.device = #heterps.device<"cpu", cpu>}/' %S/Inputs/ctr-mlp.mlir | heterps-opt --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=dp throughput=200000 batch=512" | FileCheck %s --check-prefixes=CHECK,PINNED

// CHECK: module attributes {heterps.resources = [#heterps.device<"cpu", cpu>, #heterps.device<"gpu", gpu>]}
// CHECK-LABEL: func.func @ctr
// OPT: heterps.embedding_lookup @t0{{.*}}heterps.device = #heterps.device<"cpu", cpu>
// OPT-NEXT: heterps.embedding_lookup @t1{{.*}}heterps.device = #heterps.device<"cpu", cpu>
// OPT-NEXT: heterps.concat {{.*}}heterps.device = #heterps.device<"gpu", gpu>
// OPT-COUNT-9: heterps.device = #heterps.device<"gpu", gpu>
// OPT-NOT: heterps.device

// The heuristic keeps the concat with the lookups.
// HEURISTIC: heterps.embedding_lookup @t0{{.*}}heterps.device = #heterps.device<"cpu", cpu>
// HEURISTIC-NEXT: heterps.embedding_lookup @t1{{.*}}heterps.device = #heterps.device<"cpu", cpu>
// HEURISTIC-NEXT: heterps.concat {{.*}}heterps.device = #heterps.device<"cpu", cpu>
// HEURISTIC-COUNT-9: heterps.device = #heterps.device<"gpu", gpu>

// GPU-COUNT-12: heterps.device = #heterps.device<"gpu", gpu>
// GPU-NOT: heterps.device<"cpu", cpu>

// PINNED: heterps.embedding_lookup @t0{{.*}}heterps.device = #heterps.device<"cpu", cpu>
// PINNED-NEXT: heterps.embedding_lookup @t1{{.*}}heterps.device = #heterps.device<"cpu", cpu>
// PINNED-NEXT: heterps.concat {{.*}}heterps.device = #heterps.device<"cpu", cpu>
// PINNED-NEXT: heterps.load_param @w1 {heterps.device = #heterps.device<"gpu", gpu>}

// REPORT: "cost_per_hour": 15.672
// REPORT: "cost_usd": 2.0648
// REPORT: "feasible": true
// REPORT: "seed": 1
// REPORT: "solver": "exhaustive"
// REPORT: "stages": [
// REPORT: "index": 0,
// REPORT-NEXT: "memory_gb": {{.*}},
// REPORT-NEXT: "memory_limit_gb": 32,
// REPORT-NEXT: "ops": [
// REPORT-NEXT: "lookup0",
// REPORT-NEXT: "lookup1"
// REPORT-NEXT: ],
// REPORT-NEXT: "resident_gb": 0,
// REPORT-NEXT: "resource": "cpu",
// REPORT: "units": 11
// REPORT: "index": 1,
// REPORT: "resource": "gpu",
// REPORT: "units": 2
// REPORT: "throughput": 210832.5
