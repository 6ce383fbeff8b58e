//===- HeterPSModelFunction.h - The function a pass works on ----*- C++ -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSMODELFUNCTION_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSMODELFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace heterps {

/// The model function a pass (scheduling, autodiff, plan emission) works
/// on: `name`, or the module's only function with a body. Errors name the
/// pass and the candidates.
FailureOr<func::FuncOp> findModelFunction(ModuleOp module, StringRef name,
                                          StringRef passName);

} // namespace heterps
} // namespace mlir

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSMODELFUNCTION_H
