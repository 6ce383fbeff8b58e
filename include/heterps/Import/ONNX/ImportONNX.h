//===- ImportONNX.h - ONNX model importer -----------------------*- C++ -*-===//
//
// Imports an ONNX ModelProto into the HeterPS dialect: graph inputs become the
// arguments of `func.func @main`, initializers `heterps.param` symbols (or
// `heterps.embedding_table` when a Gather looks rows up by computed ids), and
// every node one or more HeterPS ops located at `loc("<node name>")`.
//
// Failures (unreadable file, checker findings, unsupported ops, unknown
// dimensions) are reported through the context's diagnostic engine and
// return failure; the importer never throws and never aborts.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_IMPORT_ONNX_IMPORTONNX_H
#define HETERPS_IMPORT_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class MLIRContext;
namespace heterps {

/// Whether the file at `path` is to be imported as ONNX rather than parsed
/// as MLIR text: its name ends in `.onnx` (any case), or it starts with a
/// byte no text starts with (a protobuf's first field tag, as ONNX files
/// named `.pb` or `.ONNX` do). A file that cannot be read is left to the
/// reader that reports it.
bool isONNXModelFile(StringRef path);

/// Imports the ONNX model in the file at `path`. Tensors stored as external
/// data are read relative to the directory of `path`.
FailureOr<OwningOpRef<ModuleOp>> importONNXFile(StringRef path,
                                                MLIRContext *context);

/// Imports a serialized ONNX ModelProto held in memory. `sourceName` names the
/// model in diagnostics and locations; external data is read relative to
/// `baseDir` (none can be read when it is empty).
FailureOr<OwningOpRef<ModuleOp>> importONNXModel(StringRef bytes,
                                                 StringRef sourceName,
                                                 StringRef baseDir,
                                                 MLIRContext *context);

/// An ONNX op type (default domain) the importer converts.
struct ONNXOpInfo {
  StringRef name;
  /// The opsets whose signature of the op the importer converts: from
  /// `minOpset` to the newest it imports (getMaxONNXOpset()).
  int64_t minOpset;
  /// What the importer requires of the op or does differently from ONNX;
  /// empty when nothing.
  StringRef limits;
};

/// The ops the importer converts, sorted by name (docs/SupportedOps.md is
/// generated from them).
ArrayRef<ONNXOpInfo> getSupportedONNXOps();

/// The newest opset of the default domain the importer imports.
int64_t getMaxONNXOpset();

} // namespace heterps
} // namespace mlir

#endif // HETERPS_IMPORT_ONNX_IMPORTONNX_H
