//===- HeterPSOps.h - HeterPS operations ------------------------*- C++ -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSOPS_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSOPS_H

#include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSInterfaces.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::heterps {
/// The dense parameters: load_param reads them and update_param writes
/// them, so CSE keeps a load after an update apart from one before it.
struct ParameterResource
    : public SideEffects::Resource::Base<ParameterResource> {
  StringRef getName() final { return "heterps::Parameter"; }
};
/// The random stream dropout draws its mask from in training: two dropouts
/// of one value are two draws.
struct RandomResource : public SideEffects::Resource::Base<RandomResource> {
  StringRef getName() final { return "heterps::Random"; }
};
} // namespace mlir::heterps

#define GET_OP_CLASSES
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h.inc"

namespace mlir::heterps {
/// Attaches the GradientOpInterface models of the differentiable ops
/// (HeterPSGradients.cpp); called when the dialect is loaded.
void attachGradientModels(MLIRContext *context);
} // namespace mlir::heterps

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSOPS_H
