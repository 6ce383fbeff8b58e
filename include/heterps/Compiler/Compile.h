//===- Compile.h - A model to a plan, in process ----------------*- C++ -*-===//
//
// The compiler as a library: loads a model (an ONNX file or bytes, or
// HeterPS IR), runs a textual pass pipeline on it (the syntax and passes of
// heterps-opt's --pass-pipeline, parsed by the same registry, so options
// are checked the same way) and translates the result into a plan. The
// diagnostics are collected rather than printed, for front ends that raise
// them (the Python package) or print them (heterps-opt).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_COMPILER_COMPILE_H
#define HETERPS_COMPILER_COMPILE_H

#include "heterps/plan.pb.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
namespace heterps {

/// The dialects a HeterPS module holds, for a context that parses one.
void registerCompilerDialects(DialectRegistry &registry);

/// Loads `path`: a file ending in `.onnx` is imported, anything else is
/// parsed as IR. Errors go to the context's diagnostic handlers.
FailureOr<OwningOpRef<ModuleOp>> loadModel(StringRef path,
                                           MLIRContext *context);

struct CompileRequest {
  /// The model file (.onnx or IR), or, when `modelBytes` is set, the name
  /// that errors give the ONNX bytes.
  std::string modelPath;
  /// An ONNX model in memory; its external data is looked up in `baseDir`.
  std::string modelBytes;
  std::string baseDir = ".";
  /// A pass pipeline as heterps-opt's --pass-pipeline takes it, e.g.
  /// "builtin.module(heterps-autodiff{optimizer=adam},heterps-schedule{...})";
  /// empty: none.
  std::string pipeline;
  /// The function to emit (empty: the only one) and the plan's batch size.
  std::string function;
  int64_t batchSize = 256;
};

struct CompileResult {
  /// Whether a plan was produced.
  bool succeeded = false;
  ::heterps::plan::Plan plan;
  /// Every diagnostic, "LOCATION: error: MESSAGE" with its notes, in order.
  std::vector<std::string> diagnostics;
};

/// Runs a request in a context of its own; never prints.
CompileResult compileModel(const CompileRequest &request);

} // namespace heterps
} // namespace mlir

#endif // HETERPS_COMPILER_COMPILE_H
