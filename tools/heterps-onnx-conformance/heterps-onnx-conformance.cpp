//===- heterps-onnx-conformance.cpp - ONNX node tests, imported and run ---===//
//
//   heterps-onnx-conformance [--data-dir=DIR] --expected=FILE
//                            [--doc=docs/SupportedOps.md] [--update] [-v]
//
// Imports every backend node test of the supported ops, runs its plan on the
// CPU runtime, compares the outputs with the test's, and compares the
// outcomes (pass, import-fails, runtime-error, wrong-result) with FILE and
// the supported-ops page with what the outcomes and the importer's op table
// give (exit 1 on a difference); --update rewrites both instead.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include "heterps/Support/Flags.h"

int main(int argc, char **argv) {
  std::string dataDir = "/usr/share/libonnx-testdata/data/node", expected, doc;
  bool update = false, verbose = false;
  heterps::Flags flags(
      "heterps-onnx-conformance",
      "usage: heterps-onnx-conformance [--data-dir=DIR] --expected=FILE\n"
      "                                [--doc=docs/SupportedOps.md] [--update] "
      "[-v]\n\n"
      "ONNX node-test conformance of the importer and runtime: imports every "
      "backend\nnode test of the supported ops, runs its plan on the CPU "
      "runtime, and compares\nthe outcomes with FILE and the --doc page with "
      "what they and the importer's op\ntable give (exit 1 on a "
      "difference).\n");
  flags.option("--data-dir", dataDir, "DIR",
               "ONNX backend node tests, one directory per case (default "
               "/usr/share/libonnx-testdata/data/node)");
  flags.option("--expected", expected, "FILE",
               "expected outcomes, one line per case (required)");
  flags.flag("--update", update,
             "rewrite the expectations (and --doc) from this run");
  flags.option("--doc", doc, "FILE",
               "the SupportedOps.md to check (or, with --update, write)");
  flags.flag("-v,--verbose", verbose, "print every case's outcome");
  flags.parse(argc, argv);
  if (expected.empty())
    flags.fail("--expected=FILE is required");
  return heterps::conformance::runAll(dataDir, expected, doc, update, verbose);
}
