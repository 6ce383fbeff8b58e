// A misspelled or unknown option is an error that names it, with the
// nearest option where one is close; LLVM's parser alone would read any
// unknown option starting with `h` as `-h` and print the help, exit code 0.
// RUN: not heterps-opt %s --heterps-autodif=optimizer=adam -o %t.mlir 2>&1 | FileCheck %s --check-prefix=MISSPELLED
// RUN: not heterps-opt %s --hxyz 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not heterps-opt %s -heterps-plac-ops 2>&1 | FileCheck %s --check-prefix=SINGLE-DASH
// MISSPELLED: heterps-opt: unknown option '--heterps-autodif=optimizer=adam'; did you mean '--heterps-autodiff'? (--help lists the options)
// MISSPELLED-NOT: OVERVIEW
// UNKNOWN: heterps-opt: unknown option '--hxyz' (--help lists the options)
// SINGLE-DASH: did you mean '--heterps-place-ops'?

// Known options, spelled either way, still work.
// RUN: heterps-opt %s --heterps-print-op-cost=batch-size=4 -split-input-file -o /dev/null

// A pass error is one diagnostic, without the module dumped in generic form;
// --mlir-print-op-on-diagnostic brings the dump back.
// RUN: not heterps-opt %s --heterps-place-ops=cluster=%t.missing.json 2>&1 | FileCheck %s --check-prefix=QUIET
// RUN: not heterps-opt %s --heterps-place-ops=cluster=%t.missing.json --mlir-print-op-on-diagnostic 2>&1 | FileCheck %s --check-prefix=DUMP
// QUIET: error: heterps-place-ops: cannot read cluster file '{{.*}}missing.json'
// QUIET-NOT: see current operation
// DUMP: note: see current operation

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = heterps.relu %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
