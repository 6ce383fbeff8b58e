//===- HeterPSAttrs.h - HeterPS attributes ----------------------*- C++ -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.h.inc"

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_H
