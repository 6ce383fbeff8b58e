// heterps-opt lists the HeterPS passes with their options and MLIR's own
// options; libLLVM's backend options stay out of --help (and work, and
// --help-hidden lists them).
// RUN: heterps-opt --help | FileCheck %s
// RUN: heterps-opt --help | FileCheck %s --check-prefix=TRIMMED
// RUN: heterps-opt --help-hidden | FileCheck %s --check-prefix=HIDDEN
// RUN: heterps-opt %s --dwarf-version=4 | FileCheck %s --check-prefix=WORKS

// CHECK-DAG: --heterps-print-op-cost
// CHECK-DAG: --batch-size=<long>
// CHECK-DAG: --pass-pipeline
// CHECK-DAG: --split-input-file
// CHECK-DAG: --mlir-print-ir-after-all
// CHECK-DAG: --mlir-print-op-on-diagnostic
// CHECK-DAG: --version

// TRIMMED-NOT: --amdgpu-
// TRIMMED-NOT: --instcombine-
// TRIMMED-NOT: Polly Options

// HIDDEN: --amdgpu-

// WORKS: module
module {}
