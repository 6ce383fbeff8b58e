//===- HeterPSAttrs.h - HeterPS attributes ----------------------*- C++ -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.h.inc"

namespace mlir {
namespace heterps {

/// How many tensors of a parameter's shape the optimizer keeps besides the
/// parameter (momentum's buffer, Adam's two moments, Adagrad's sum).
int getOptimizerStateTensors(OptimizerKind kind);

} // namespace heterps
} // namespace mlir

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_H
