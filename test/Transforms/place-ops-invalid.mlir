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

// expected-error @+1 {{heterps-place-ops: the module has 2 functions (@a, @b); name one with function=}}
module {
  func.func @a(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
  func.func @b(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}
