//===- PlanEmitter.h - HeterPS IR to the plan file --------------*- C++ -*-===//
//
// Translates a module (its parameters, tables and one function, staged or
// not) into the plan that heterps-run executes. Used by heterps-emit-plan
// and by tools that run IR in-process (the ONNX conformance runner).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_TARGET_PLAN_PLANEMITTER_H
#define HETERPS_TARGET_PLAN_PLANEMITTER_H

#include "heterps/plan.pb.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir::heterps {

struct PlanEmitterOptions {
  /// Prefixes error messages.
  std::string passName = "heterps-emit-plan";
  /// The function to emit; empty: the only one.
  std::string functionName;
  /// The default batch size recorded in the plan; none: the batch of the
  /// module's `heterps.prediction`, else 256. One that differs from the
  /// prediction's is an error (the figures would be for another batch).
  std::optional<int64_t> batchSize;
};

LogicalResult emitPlan(ModuleOp module, const PlanEmitterOptions &options,
                       ::heterps::plan::Plan &plan);

} // namespace mlir::heterps

#endif // HETERPS_TARGET_PLAN_PLANEMITTER_H
