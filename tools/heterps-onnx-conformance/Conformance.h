//===- Conformance.h - ONNX node tests through the importer ----*- C++ -*-===//
//
// Runs the importer over ONNX's backend node tests
// (`<data-dir>/<case>/model.onnx` plus `test_data_set_*/{input,output}_N.pb`)
// and compares each outcome with the expectations kept in the repository.
// A case is in scope when every node of its graph has an op type the importer
// supports. Import and verification are checked now; the data set paths are
// kept with each case so that a runtime can later execute the imported
// module and compare outputs numerically.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_TOOLS_ONNX_CONFORMANCE_CONFORMANCE_H
#define HETERPS_TOOLS_ONNX_CONFORMANCE_CONFORMANCE_H

#include <map>
#include <set>
#include <string>
#include <vector>

namespace heterps {
namespace conformance {

/// One backend node test.
struct Case {
  std::string name;
  std::string modelPath;
  /// The op types of the graph's nodes, in order, and the first of them (the
  /// op the case is about).
  std::vector<std::string> opTypes;
  std::string mainOp;
  int opset = 0;
  /// `test_data_set_*` directories with `input_N.pb` / `output_N.pb`.
  std::vector<std::string> dataSets;
};

/// What importing a case gave.
struct Outcome {
  bool pass = false;
  /// Why it failed: the importer's first error, or a type mismatch with the
  /// outputs the model declares. Empty when it passes.
  std::string reason;
};

/// The cases under `dataDir` whose ops are all supported, sorted by name.
std::vector<Case> findCases(const std::string &dataDir);

/// Imports and verifies `c`, and checks the result types against the ONNX
/// graph outputs.
Outcome runCase(const Case &c, const std::string &dataDir);

/// Reads an expectations file: `name<TAB>pass|fail<TAB>reason` per line, `#`
/// starts a comment. Returns false when it cannot be read.
bool readExpected(const std::string &path,
                  std::map<std::string, Outcome> &expected);

/// Writes an expectations file.
bool writeExpected(const std::string &path, const std::vector<Case> &cases,
                   const std::vector<Outcome> &outcomes);

/// Writes docs/SupportedOps.md: per op the opsets, limits and passing cases.
bool writeSupportedOps(const std::string &path, const std::vector<Case> &cases,
                       const std::vector<Outcome> &outcomes);

/// Runs every case; compares with `expectedPath` (or rewrites it and the
/// doc when `update`). Prints a summary and every difference to stderr.
/// Returns 0 when the outcomes match.
int runAll(const std::string &dataDir, const std::string &expectedPath,
           const std::string &docPath, bool update, bool verbose);

} // namespace conformance
} // namespace heterps

#endif // HETERPS_TOOLS_ONNX_CONFORMANCE_CONFORMANCE_H
