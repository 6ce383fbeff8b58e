//===- HeterPSDialect.h - HeterPS dialect -----------------------*- C++ -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSDIALECT_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h.inc"

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSDIALECT_H
