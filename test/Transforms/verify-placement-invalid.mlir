// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-verify-placement

func.func @unplaced(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{is not placed: it has no heterps.device and is not inside a heterps.stage}}
  %y = heterps.relu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

func.func @no_channels(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = heterps.pipeline ins(%x : tensor<?x4xf32>) {
  ^bb0(%a: tensor<?x4xf32>):
    %s0 = heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<?x4xf32>) {
    ^bb0(%b: tensor<?x4xf32>):
      %c = heterps.relu %b : tensor<?x4xf32>
      heterps.yield %c : tensor<?x4xf32>
    } -> tensor<?x4xf32>
    // expected-error @+1 {{takes a result of stage 0 as an input: stages exchange values through channels (run heterps-insert-pipeline-comm)}}
    %s1 = heterps.stage 1 on <"gpu", gpu> units 1 ins(%s0 : tensor<?x4xf32>) {
    ^bb0(%d: tensor<?x4xf32>):
      %e = heterps.tanh %d : tensor<?x4xf32>
      heterps.yield %e : tensor<?x4xf32>
    } -> tensor<?x4xf32>
    heterps.yield %s1 : tensor<?x4xf32>
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
