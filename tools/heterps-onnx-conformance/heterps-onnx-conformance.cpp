//===- heterps-onnx-conformance.cpp - ONNX node tests, imported and run ---===//
//
//   heterps-onnx-conformance [--data-dir=DIR] --expected=FILE
//                            [--update --doc=docs/SupportedOps.md] [-v]
//
// Imports every backend node test of the supported ops, runs its plan on the
// CPU runtime, compares the outputs with the test's, and compares the
// outcomes (pass, import-fails, runtime-error, wrong-result) with FILE (exit
// 1 on a difference); --update rewrites FILE and the supported-ops page
// instead.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::opt<std::string> dataDir(
      "data-dir", cl::desc("ONNX backend node tests (one directory per case)"),
      cl::init("/usr/share/libonnx-testdata/data/node"));
  cl::opt<std::string> expected(
      "expected", cl::desc("expected outcomes, one line per case"),
      cl::Required);
  cl::opt<std::string> doc("doc",
                           cl::desc("with --update: the SupportedOps.md to "
                                    "write"));
  cl::opt<bool> update("update",
                       cl::desc("rewrite the expectations (and --doc) from "
                                "this run"));
  cl::opt<bool> verbose("v", cl::desc("print every case's outcome"));
  cl::ParseCommandLineOptions(
      argc, argv, "ONNX node-test conformance of the importer and runtime\n");
  return heterps::conformance::runAll(dataDir, expected, doc, update, verbose);
}
