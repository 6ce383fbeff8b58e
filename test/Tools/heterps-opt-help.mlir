// heterps-opt lists the HeterPS passes with their options.
// RUN: heterps-opt --help | FileCheck %s

// CHECK: --heterps-print-op-cost
// CHECK-NEXT: --batch-size=<long>
