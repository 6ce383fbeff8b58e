//===- PlaceOps.cpp - Place every op on a resource type -------------------===//

#include "ScheduleAdaptor.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"
#include "heterps/Schedule/Report.h"
#include "heterps/Transforms/Passes.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

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
    // A search that runs longer than a second shows where it stands, on a
    // terminal: one line on stderr, rewritten at most four times a second.
    bool shown = false;
    double lastShown = 0;
    if (llvm::sys::Process::StandardErrIsDisplayed())
      solverOptions.progress = [&](const schedule::SearchProgress &p) {
        if (p.seconds < 1 || (shown && p.seconds - lastShown < 0.25))
          return;
        llvm::errs() << llvm::formatv("\r{0}: rl iteration {1}/{2}, best "
                                      "objective {3:f4}, {4:f1} s\x1b[K",
                                      getArgument(), p.iteration, p.iterations,
                                      p.bestObjective, p.seconds);
        llvm::errs().flush();
        shown = true;
        lastShown = p.seconds;
      };

    schedule::CostModel model(problem);
    llvm::Expected<schedule::SolverResult> result =
        schedule::solvePlacement(solver, model, solverOptions);
    if (shown)
      llvm::errs() << "\n";
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
