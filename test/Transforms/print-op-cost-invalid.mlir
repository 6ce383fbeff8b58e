// RUN: heterps-opt %s --heterps-print-op-cost=batch-size=0 -verify-diagnostics

// expected-error @+1 {{heterps-print-op-cost: batch-size must be positive, got 0}}
module {
  func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %y = heterps.relu %x : tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}
