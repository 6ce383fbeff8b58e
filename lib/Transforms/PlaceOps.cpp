//===- PlaceOps.cpp - Place every op on a resource type -------------------===//

#include "ScheduleAdaptor.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"
#include "heterps/Schedule/Report.h"
#include "heterps/Transforms/Passes.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_PLACEOPSPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

struct PlaceOpsPass
    : public mlir::heterps::impl::PlaceOpsPassBase<PlaceOpsPass> {
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

    schedule::SolverOptions solverOptions;
    solverOptions.seed = seed;
    solverOptions.timeBudgetSeconds = timeBudget;
    solverOptions.maxSearchOps = maxSearchOps;
    solverOptions.searchCuts = searchCuts;
    solverOptions.iterations = rlIterations;
    solverOptions.samplesPerIteration = rlSamples;
    solverOptions.learningRate = rlLearningRate;
    solverOptions.hiddenSize = rlHiddenSize;
    solverOptions.policyIn = rlPolicyIn;
    solverOptions.policyOut = rlPolicyOut;
    solverOptions.population = geneticPopulation;
    solverOptions.generations = geneticGenerations;

    schedule::CostModel model(problem);
    llvm::Expected<schedule::SolverResult> result =
        schedule::solvePlacement(solver, model, solverOptions);
    if (!result) {
      scheduled->function.emitError()
          << getArgument() << ": " << llvm::toString(result.takeError());
      return signalPassFailure();
    }

    MLIRContext *context = &getContext();
    SmallVector<Attribute> resources =
        getResourceAttrs(context, problem.cluster);
    module->setAttr(HeterPSDialect::getResourcesAttrName(),
                    ArrayAttr::get(context, resources));
    for (auto [index, type] : llvm::enumerate(result->assignment))
      scheduled->setAttr(index, HeterPSDialect::getDeviceAttrName(),
                         resources[type]);
    // Cuts of an earlier placement are replaced by this one's.
    for (Operation *op : scheduled->ops)
      op->removeAttr(HeterPSDialect::getStageCutAttrName());
    for (int cut : result->cuts)
      scheduled->ops[cut]->setAttr(HeterPSDialect::getStageCutAttrName(),
                                   UnitAttr::get(context));

    if (!reportFile.empty())
      if (llvm::Error error =
              schedule::writeReport(reportFile, model, *result, seed)) {
        module.emitError() << getArgument() << ": "
                           << llvm::toString(std::move(error));
        return signalPassFailure();
      }
    if (!result->evaluation.feasible) {
      emitInfeasible(scheduled->function, getArgument(), result->evaluation,
                     problem);
      return signalPassFailure();
    }
  }
};

} // namespace
