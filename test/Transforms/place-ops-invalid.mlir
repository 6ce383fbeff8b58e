// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=dp throughput=1000000 batch=512"
// RUN: not heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/no-such-file.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%S/Inputs/cluster-2types.json solver=magic" 2>&1 | FileCheck %s --check-prefix=SOLVER
// RUN: not heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops 2>&1 | FileCheck %s --check-prefix=NOCLUSTER
// RUN: not heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-place-ops="cluster=%s" 2>&1 | FileCheck %s --check-prefix=BADJSON

// MISSING: cannot read cluster file '{{.*}}no-such-file.json'
// SOLVER: for the --solver option: Cannot find option named 'magic'!
// NOCLUSTER: error: heterps-place-ops: cluster=FILE is required
// BADJSON: error: heterps-place-ops: {{.*}}place-ops-invalid.mlir: not valid JSON

// The target is out of reach: the error names the bottleneck and the
// shortfall.
heterps.param @w : tensor<4096x4096xf32> = #heterps.init<xavier_uniform>
// expected-error @+1 {{heterps-place-ops: the throughput target of 1000000.0 samples/s cannot be met: stage 0 (ops 0..0 on gpu) reaches at most}}
func.func @too_fast(%x: tensor<?x4096xf32>) -> tensor<?x4096xf32> {
  %w = heterps.load_param @w : tensor<4096x4096xf32>
  %y = heterps.matmul %x, %w : (tensor<?x4096xf32>, tensor<4096x4096xf32>) -> tensor<?x4096xf32>
  return %y : tensor<?x4096xf32>
}

// -----

func.func @pinned_elsewhere(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{is pinned to "tpu", which the cluster file}}
  %y = heterps.relu %x {heterps.device = #heterps.device<"tpu", gpu>} : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// A pin keeps its kind: "gpu" declared a gpu in the cluster is no cpu.
func.func @pinned_as_another_kind(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{is pinned to "gpu" as a cpu but the cluster file}}
  %y = heterps.relu %x {heterps.device = #heterps.device<"gpu", cpu>} : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{heterps-place-ops: the module has 2 functions (@a, @b); name one with function=}}
module {
  func.func @a(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
  func.func @b(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

// 69 GB of weights and as many of gradients fit no unit (32 GB CPUs, 40 GB
// GPUs): the error names the stage, what it holds and the unit's memory.
heterps.param @huge : tensor<65536x262144xf32> = #heterps.init<zeros>
// expected-error @+1 {{heterps-place-ops: the plan does not fit in memory: stage 0 (ops 0..0 on gpu) needs 137.47 GB per unit (137.44 GB of parameters, gradients and optimizer state, 0.03 GB of activations with all 16 unit(s)) but a unit of gpu has 40.00 GB}}
func.func @out_of_memory(%x: tensor<?x65536xf32>) -> tensor<?x1xf32> {
  %w = heterps.load_param @huge : tensor<65536x262144xf32>
  %y = heterps.matmul %x, %w : (tensor<?x65536xf32>, tensor<65536x262144xf32>) -> tensor<?x262144xf32>
  %s = heterps.reduce_sum %y {axes = array<i64: 1>} : (tensor<?x262144xf32>) -> tensor<?x1xf32>
  return %s : tensor<?x1xf32>
}
