//===- Provision.cpp - Units per stage ------------------------------------===//

#include "ScheduleAdaptor.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"
#include "heterps/Schedule/CostModel.h"
#include "heterps/Transforms/Passes.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_PROVISIONPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

struct ProvisionPass
    : public mlir::heterps::impl::ProvisionPassBase<ProvisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ScheduleOptions options{
        getArgument().str(), clusterFile, functionName, throughput,
        batchSize,           samples,     training,     profileFile,
        microBatches};
    FailureOr<ScheduledFunction> scheduled =
        buildScheduledFunction(module, options);
    if (failed(scheduled))
      return signalPassFailure();
    const schedule::PlacementProblem &problem = scheduled->problem;

    // Placed ops are exactly the pinned ones of the problem.
    std::vector<int> assignment;
    for (auto [op, info] : llvm::zip_equal(scheduled->ops, problem.ops)) {
      if (info.pinned < 0) {
        op->emitOpError() << "is not placed: run heterps-place-ops before "
                          << getArgument();
        return signalPassFailure();
      }
      assignment.push_back(info.pinned);
    }
    schedule::CostModel model(problem);
    schedule::Evaluation evaluation =
        model.evaluate(assignment, scheduled->cuts);
    if (!evaluation.feasible) {
      emitInfeasible(scheduled->function, getArgument(), evaluation, problem);
      return signalPassFailure();
    }

    MLIRContext *context = &getContext();
    SmallVector<APFloat> stageThroughputs;
    for (auto [index, stage] : llvm::enumerate(evaluation.stages)) {
      auto attr = StageAssignmentAttr::get(context, index, stage.units);
      for (int l = stage.firstOp; l <= stage.lastOp; ++l)
        scheduled->setAttr(l, HeterPSDialect::getStageAttrName(), attr);
      stageThroughputs.push_back(APFloat(stage.throughput));
    }
    module->setAttr(HeterPSDialect::getPredictionAttrName(),
                    PredictionAttr::get(context, APFloat(evaluation.throughput),
                                        APFloat(evaluation.costUsd),
                                        APFloat(evaluation.costPerHour),
                                        stageThroughputs, batchSize));
  }
};

} // namespace
