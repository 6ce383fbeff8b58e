//===- Conformance.h - ONNX node tests through the importer ----*- C++ -*-===//
//
// Runs ONNX's backend node tests (`<data-dir>/<case>/model.onnx` plus
// `test_data_set_*/{input,output}_N.pb`) through the importer, the plan
// emitter and the CPU runtime, and compares each outcome with the
// expectations kept in the repository. A case is in scope when every node of
// its graph has an op type the importer supports. A case passes when it
// imports and verifies, its result types match the outputs the model
// declares, and running the plan on every data set's inputs gives the
// expected outputs: same shapes and element types, integers and bools
// exactly, floats within ONNX's backend tolerance
// (|actual - expected| <= atol + rtol * |expected|).
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

/// The tolerance of onnx/backend/test/runner (np.testing.assert_allclose).
constexpr double kRelativeTolerance = 1e-3;
constexpr double kAbsoluteTolerance = 1e-7;

/// How far a case gets. In the expectations file: pass, import-fails,
/// runtime-error, wrong-result.
enum class Status { Pass, ImportFails, RuntimeError, WrongResult };

const char *statusName(Status status);

/// What running a case gave.
struct Outcome {
  Status status = Status::ImportFails;
  /// Why it failed: the importer's first error or a type mismatch with the
  /// outputs the model declares (ImportFails); the plan emitter's or the
  /// runtime's message (RuntimeError); the output, its worst element, the
  /// expected and the actual value (WrongResult). Empty when it passes.
  std::string reason;

  bool passes() const { return status == Status::Pass; }
  bool imports() const { return status != Status::ImportFails; }
  /// "pass", or the status and the reason.
  std::string describe() const;
  bool operator==(const Outcome &o) const {
    return status == o.status && reason == o.reason;
  }
  bool operator!=(const Outcome &o) const { return !(*this == o); }
};

/// The cases under `dataDir` whose ops are all supported, sorted by name.
std::vector<Case> findCases(const std::string &dataDir);

/// Imports and verifies `c` and checks the result types against the ONNX
/// graph outputs; then, when `execute`, emits the plan, runs it on each data
/// set's inputs and compares the outputs. Never throws: runtime errors and
/// other exceptions become the outcome.
Outcome runCase(const Case &c, const std::string &dataDir, bool execute = true);

/// Reads an expectations file: `name<TAB>status<TAB>reason` per line (status
/// as statusName gives it), `#` starts a comment. Returns false when it
/// cannot be read.
bool readExpected(const std::string &path,
                  std::map<std::string, Outcome> &expected);

/// Writes an expectations file.
bool writeExpected(const std::string &path, const std::vector<Case> &cases,
                   const std::vector<Outcome> &outcomes);

/// docs/SupportedOps.md: per op of the importer's table its opsets and
/// limits, the cases that import and the cases that run correctly; then
/// every failing case.
std::string renderSupportedOps(const std::vector<Case> &cases,
                               const std::vector<Outcome> &outcomes);

/// Writes renderSupportedOps() to `path`.
bool writeSupportedOps(const std::string &path, const std::vector<Case> &cases,
                       const std::vector<Outcome> &outcomes);

/// Runs every case; compares with `expectedPath` and, when `docPath` is
/// given, the doc with what renderSupportedOps() gives (or rewrites both
/// when `update`). Prints a summary and every difference to stderr.
/// Returns 0 when the outcomes and the doc match.
int runAll(const std::string &dataDir, const std::string &expectedPath,
           const std::string &docPath, bool update, bool verbose);

} // namespace conformance
} // namespace heterps

#endif // HETERPS_TOOLS_ONNX_CONFORMANCE_CONFORMANCE_H
