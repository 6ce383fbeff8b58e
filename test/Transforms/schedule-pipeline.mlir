// The whole scheduling pipeline on the CTR model: place with dp, provision,
// outline, insert channels, verify.
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-schedule="cluster=%S/Inputs/cluster-2types.json solver=dp throughput=200000 batch=512 micro-batches=4 report=%t.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// The result round-trips.
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-schedule="cluster=%S/Inputs/cluster-2types.json solver=dp throughput=200000 batch=512" | heterps-opt --heterps-verify-placement | FileCheck %s --check-prefix=ROUNDTRIP
// The search options reach place-ops: rl with its own settings saves the
// policy it trained.
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-schedule="cluster=%S/Inputs/cluster-2types.json solver=rl rl-iterations=5 rl-samples=4 rl-hidden=8 rl-learning-rate=0.02 time-budget=60 seed=7 throughput=200000 batch=512 report=%t.rl.json rl-policy-out=%t.policy" | FileCheck %s --check-prefix=RL
// RUN: FileCheck %s --check-prefix=RL-REPORT < %t.rl.json
// RUN: FileCheck %s --check-prefix=RL-POLICY < %t.policy
// An unknown solver is refused by the option parser.
// RUN: not heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-schedule="cluster=%S/Inputs/cluster-2types.json solver=annealing" 2>&1 | FileCheck %s --check-prefix=BAD-SOLVER

// CHECK: module attributes {heterps.prediction = #heterps.prediction<{{.*}}>, heterps.resources = [#heterps.device<"cpu", cpu>, #heterps.device<"gpu", gpu>]}
// CHECK-LABEL: func.func @ctr
// CHECK-SAME: (%[[IDS0:.*]]: tensor<?x64xi64>, %[[IDS1:.*]]: tensor<?x64xi64>, %[[LABEL:.*]]: tensor<?x1xf32>)
// CHECK: %[[P:.*]] = heterps.pipeline ins(%[[IDS0]], %[[IDS1]], %[[LABEL]] : {{.*}}) attributes {micro_batches = 4 : i64} {
// CHECK: heterps.stage 0 on <"cpu", cpu> units 11 ins({{.*}} : tensor<?x64xi64>, tensor<?x64xi64>) {
// CHECK: %[[E0:.*]] = heterps.embedding_lookup @t0
// CHECK: %[[E1:.*]] = heterps.embedding_lookup @t1
// CHECK-DAG: heterps.send %[[E0]] channel {{[01]}} : tensor<?x64xf32>
// CHECK-DAG: heterps.send %[[E1]] channel {{[01]}} : tensor<?x64xf32>
// CHECK: %[[S1:.*]] = heterps.stage 1 on <"gpu", gpu> units 2 ins(%{{.*}} : tensor<?x1xf32>) {
// CHECK-DAG: heterps.recv channel 0 : tensor<?x64xf32>
// CHECK-DAG: heterps.recv channel 1 : tensor<?x64xf32>
// CHECK: heterps.concat
// CHECK: heterps.bce_loss
// CHECK: heterps.yield %[[S1]] : tensor<f32>
// CHECK: return %[[P]] : tensor<f32>

// REPORT: "feasible": true
// REPORT: "gap_to_bound": 0.4264
// REPORT: "lower_bound_usd": 1.4475
// REPORT: "micro_batches": 4
// REPORT: "solver": "dp"

// ROUNDTRIP: heterps.stage 1 on <"gpu", gpu> units 2

// RL: heterps.pipeline
// RL-REPORT: "seed": 7
// RL-REPORT: "solver": "rl"
// RL-POLICY: heterps-lstm-policy 2
// RL-POLICY-NEXT: features {{[0-9]+}} hidden 8

// BAD-SOLVER: for the --solver option: Cannot find option named 'annealing'!
