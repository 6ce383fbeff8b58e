//===- FuzzONNXImport.cpp - The ONNX importer -------------------*- C++ -*-===//
//
// The input is a serialized ModelProto, imported as heterps-opt imports a
// model file (no directory for external data: an input cannot reach files).
// An imported module must verify; a refused one must have said why.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Import/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *c = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    c->loadDialect<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect>();
    return c;
  }();
  bool diagnosed = false;
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    diagnosed |= d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto module = mlir::heterps::importONNXModel(bytes, "fuzz.onnx", "", context);
  if (mlir::failed(module)) {
    if (!diagnosed) {
      std::fprintf(stderr, "the importer failed without an error message\n");
      std::abort();
    }
    return 0;
  }
  if (mlir::failed(mlir::verify(**module))) {
    std::fprintf(stderr, "the importer produced IR that does not verify\n");
    std::abort();
  }
  return 0;
}
