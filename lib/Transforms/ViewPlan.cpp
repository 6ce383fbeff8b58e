//===- ViewPlan.cpp - Write the plan as a Graphviz graph ------------------===//

#include "heterps/Plan/PlanGraph.h"
#include "heterps/Target/Plan/PlanEmitter.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_VIEWPLANPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

struct ViewPlanPass
    : public mlir::heterps::impl::ViewPlanPassBase<ViewPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      module.emitError() << getArgument()
                         << ": give the DOT file to write, file=PATH";
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
    std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(file, &error);
    if (!output) {
      module.emitError() << getArgument() << ": " << error;
      return signalPassFailure();
    }
    output->os() << ::heterps::plan::printPlanDot(plan);
    output->os().flush();
    if (output->os().has_error()) {
      module.emitError() << getArgument() << ": cannot write '" << file
                         << "': " << output->os().error().message();
      output->os().clear_error();
      return signalPassFailure();
    }
    output->keep();
  }
};

} // namespace
