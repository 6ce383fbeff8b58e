//===- HeterPSModelFunction.cpp - The function a pass works on ------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSModelFunction.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::heterps;

FailureOr<func::FuncOp> mlir::heterps::findModelFunction(ModuleOp module,
                                                         StringRef name,
                                                         StringRef passName) {
  SmallVector<func::FuncOp> candidates;
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() &&
        (name.empty() || function.getSymName() == name))
      candidates.push_back(function);
  if (candidates.size() == 1)
    return candidates.front();
  if (!name.empty())
    return module.emitError()
           << passName << ": the module has no function @" << name;
  if (candidates.empty())
    return module.emitError() << passName << ": the module has no function";
  InFlightDiagnostic diag = module.emitError()
                            << passName << ": the module has "
                            << candidates.size() << " functions (";
  llvm::interleaveComma(candidates, diag, [&](func::FuncOp function) {
    diag << "@" << function.getSymName();
  });
  diag << "); name one with function=";
  return diag;
}
