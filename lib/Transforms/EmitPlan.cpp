//===- EmitPlan.cpp - Write the plan file ---------------------------------===//

#include "heterps/Plan/PlanFile.h"
#include "heterps/Target/Plan/PlanEmitter.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_EMITPLANPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

struct EmitPlanPass
    : public mlir::heterps::impl::EmitPlanPassBase<EmitPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      module.emitError() << getArgument() << ": give the plan file, file=PATH";
      return signalPassFailure();
    }
    PlanEmitterOptions options;
    options.passName = getArgument().str();
    options.functionName = functionName;
    if (batchSize.hasValue())
      options.batchSize = batchSize;
    ::heterps::plan::Plan plan;
    if (failed(emitPlan(module, options, plan)))
      return signalPassFailure();
    std::string error;
    if (!::heterps::plan::writePlanFile(plan, file, error)) {
      module.emitError() << getArgument() << ": " << error;
      return signalPassFailure();
    }
  }
};

} // namespace
