// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-emit-plan=file=%t.plan
// RUN: not heterps-opt %s -split-input-file --heterps-emit-plan 2>&1 | FileCheck %s --check-prefix=NOFILE

// NOFILE: heterps-emit-plan: give the plan file, file=PATH

module attributes {heterps.resources = [#heterps.device<"cpu", cpu>, #heterps.device<"gpu", gpu>]} {
  func.func @placed(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-error @+1 {{heterps-emit-plan: the op is placed on "gpu" but the function is not staged; run --heterps-schedule (or heterps-outline-stages and heterps-insert-pipeline-comm) first}}
    %y = heterps.relu %x {heterps.device = #heterps.device<"gpu", gpu>} : tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}

// -----

// expected-error @+1 {{heterps-emit-plan: the plan cannot hold 'tensor<?x4xcomplex<f32>>'}}
func.func @complex(%x: tensor<?x4xcomplex<f32>>) -> tensor<?x4xcomplex<f32>> {
  return %x : tensor<?x4xcomplex<f32>>
}
