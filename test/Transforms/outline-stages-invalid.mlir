// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-outline-stages

func.func @unplaced(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{is not placed: run heterps-place-ops before heterps-outline-stages}}
  %y = heterps.relu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

func.func @interleaved(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %a = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 1>} : tensor<?x4xf32>
  %b = heterps.tanh %a {heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 1>} : tensor<?x4xf32>
  // expected-error @+1 {{is in stage 0 after an op of stage 1: stages must be numbered 0, 1, ... along the op order}}
  %c = heterps.exp %b {heterps.device = #heterps.device<"cpu", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 1>} : tensor<?x4xf32>
  return %c : tensor<?x4xf32>
}

// -----

func.func @mixed_devices(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %a = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 1>} : tensor<?x4xf32>
  // expected-error @+1 {{is placed on "gpu" but stage 0 is on "cpu"}}
  %b = heterps.tanh %a {heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 1>} : tensor<?x4xf32>
  return %b : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{has no ops to outline}}
func.func @empty(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{is already outlined into a heterps.pipeline}}
func.func @outlined(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = heterps.pipeline ins(%x : tensor<?x4xf32>) {
  ^bb0(%a: tensor<?x4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 {
    }
    heterps.yield %a : tensor<?x4xf32>
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
