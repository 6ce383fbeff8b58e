// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-insert-pipeline-comm

// A provisioned function that was not outlined: there are no stages to
// connect yet.
func.func @not_outlined(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'heterps.relu' op has a stage (heterps.stage) but is not in a heterps.pipeline; heterps-insert-pipeline-comm connects the stages that heterps-outline-stages builds, run it first}}
  %r = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 1>} : tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// The pipeline already uses the largest channel id, so the value between
// the stages has none left.
func.func @channels_exhausted(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %r = heterps.pipeline ins(%x : tensor<?x8xf32>) {
  ^bb0(%in: tensor<?x8xf32>):
    // expected-error @+1 {{'heterps.stage' op sends to stage 1 but the pipeline already uses channel 9223372036854775807, the largest id; no channel id is left}}
    %s0 = heterps.stage 0 on <"cpu", cpu> units 1 ins(%in : tensor<?x8xf32>) {
    ^bb0(%a: tensor<?x8xf32>):
      %n = heterps.neg %a : tensor<?x8xf32>
      heterps.send %n channel 9223372036854775807 : tensor<?x8xf32>
      %r = heterps.relu %a : tensor<?x8xf32>
      heterps.yield %r : tensor<?x8xf32>
    } -> tensor<?x8xf32>
    %s1 = heterps.stage 1 on <"gpu", gpu> units 1 ins(%s0 : tensor<?x8xf32>) {
    ^bb0(%b: tensor<?x8xf32>):
      %m = heterps.recv channel 9223372036854775807 : tensor<?x8xf32>
      %t = heterps.add %b, %m : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
      heterps.yield %t : tensor<?x8xf32>
    } -> tensor<?x8xf32>
    heterps.yield %s1 : tensor<?x8xf32>
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
