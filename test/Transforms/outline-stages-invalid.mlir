// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-outline-stages

func.func @unplaced(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{is not placed: run heterps-place-ops before heterps-outline-stages}}
  %y = heterps.relu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

func.func @skipped_stage(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %a = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 1>} : tensor<?x4xf32>
  // expected-error @+1 {{is in stage 2 after ops of stages 0..0: stages are numbered 0, 1, ... in order of their first op}}
  %b = heterps.tanh %a {heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 2, units = 1>} : tensor<?x4xf32>
  return %b : tensor<?x4xf32>
}

// -----

func.func @units_differ(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %a = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 2>} : tensor<?x4xf32>
  %b = heterps.tanh %a {heterps.device = #heterps.device<"gpu", gpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 1>} : tensor<?x4xf32>
  // expected-error @+1 {{gives stage 0 3 units, an earlier op 2}}
  %c = heterps.exp %b {heterps.device = #heterps.device<"cpu", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 3>} : tensor<?x4xf32>
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
