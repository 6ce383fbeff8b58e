//===- Schedule.cpp - heterps-schedule: the scheduling passes in one ------===//
//
// A pass rather than a registered pipeline, so that its options are declared
// once in Passes.td with the passes it runs (and appear in the generated
// docs), and every option of place-ops reaches place-ops.
//
//===----------------------------------------------------------------------===//

#include "heterps/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_SCHEDULEPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

struct SchedulePass
    : public mlir::heterps::impl::SchedulePassBase<SchedulePass> {
  using Base::Base;

  /// The options of the cost model, which place-ops and provision share.
  template <typename Options> void copyCostModelOptions(Options &to) const {
    to.clusterFile = clusterFile;
    to.functionName = functionName;
    to.throughput = throughput;
    to.batchSize = batchSize;
    to.samples = samples;
    to.training = training;
    to.profileFile = profileFile;
    to.microBatches = microBatches;
  }

  PlaceOpsPassOptions placeOptions() const {
    PlaceOpsPassOptions place;
    copyCostModelOptions(place);
    place.solver = solver;
    place.seed = seed;
    place.reportFile = reportFile;
    place.timeBudget = timeBudget;
    place.maxSearchOps = maxSearchOps;
    place.searchCuts = searchCuts;
    place.rlIterations = rlIterations;
    place.rlSamples = rlSamples;
    place.rlLearningRate = rlLearningRate;
    place.rlHiddenSize = rlHiddenSize;
    place.rlPolicyIn = rlPolicyIn;
    place.rlPolicyOut = rlPolicyOut;
    place.geneticPopulation = geneticPopulation;
    place.geneticGenerations = geneticGenerations;
    return place;
  }

  void buildPipeline(OpPassManager &pm) const {
    pm.addPass(createPlaceOpsPass(placeOptions()));
    ProvisionPassOptions provision;
    copyCostModelOptions(provision);
    pm.addPass(createProvisionPass(provision));
    OutlineStagesPassOptions outline;
    outline.functionName = functionName;
    outline.microBatches = microBatches;
    pm.addPass(createOutlineStagesPass(outline));
    pm.addPass(createInsertPipelineCommPass());
    VerifyPlacementPassOptions verify;
    verify.functionName = functionName;
    pm.addPass(createVerifyPlacementPass(verify));
  }

  // The passes run in a nested pipeline load their dialects only if this
  // pass declares them: a nested pipeline may not load dialects while the
  // outer one is running.
  void getDependentDialects(DialectRegistry &registry) const override {
    OpPassManager pm(ModuleOp::getOperationName());
    buildPipeline(pm);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    OpPassManager pm(ModuleOp::getOperationName());
    buildPipeline(pm);
    if (failed(runPipeline(pm, getOperation())))
      signalPassFailure();
  }
};

} // namespace
