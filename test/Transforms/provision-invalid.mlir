// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-provision="cluster=%S/Inputs/cluster-2types.json throughput=100000 batch=512"

func.func @unplaced(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{is not placed: run heterps-place-ops before heterps-provision}}
  %y = heterps.relu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

heterps.param @w : tensor<4096x4096xf32> = #heterps.init<xavier_uniform>
// Dense parameters of 64 MiB all-reduced over 1.5625 GB/s between CPUs: no
// number of CPUs reaches the target.
// expected-error @+1 {{heterps-provision: the throughput target of 100000.0 samples/s cannot be met: stage 0 (ops 0..0 on cpu) reaches at most}}
func.func @cpu_bound(%x: tensor<?x4096xf32>) -> tensor<?x4096xf32> {
  %w = heterps.load_param @w {heterps.device = #heterps.device<"cpu", cpu>} : tensor<4096x4096xf32>
  %y = heterps.matmul %x, %w {heterps.device = #heterps.device<"cpu", cpu>} : (tensor<?x4096xf32>, tensor<4096x4096xf32>) -> tensor<?x4096xf32>
  return %y : tensor<?x4096xf32>
}

// -----

// heterps.stage_cut marks where a stage starts; it carries no value.
func.func @valued_cut(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'heterps.stage_cut' is a unit attribute, found 1 : i64}}
  %y = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>, heterps.stage_cut = 1} : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
