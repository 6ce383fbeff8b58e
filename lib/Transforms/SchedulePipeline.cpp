//===- SchedulePipeline.cpp - The scheduling pass pipeline ----------------===//

#include "heterps/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::heterps;

namespace {

struct SchedulePipelineOptions
    : public PassPipelineOptions<SchedulePipelineOptions> {
  Option<std::string> cluster{*this, "cluster",
                              llvm::cl::desc("Cluster file (JSON)")};
  Option<std::string> function{
      *this, "function",
      llvm::cl::desc("The function to schedule (default: the only one)")};
  Option<std::string> solver{*this, "solver", llvm::cl::desc("Solver name"),
                             llvm::cl::init("rl")};
  Option<double> throughput{*this, "throughput",
                            llvm::cl::desc("Throughput target, samples/s"),
                            llvm::cl::init(1000.0)};
  Option<int64_t> batch{*this, "batch", llvm::cl::desc("Samples per batch"),
                        llvm::cl::init(256)};
  Option<double> samples{*this, "samples",
                         llvm::cl::desc("Samples the job processes"),
                         llvm::cl::init(1.0e8)};
  Option<bool> training{*this, "training",
                        llvm::cl::desc("Schedule a training step"),
                        llvm::cl::init(true)};
  Option<uint64_t> seed{*this, "seed", llvm::cl::desc("Random seed"),
                        llvm::cl::init(1)};
  Option<std::string> report{*this, "report",
                             llvm::cl::desc("Write the placement report here")};
  Option<std::string> profile{*this, "profile",
                              llvm::cl::desc("Measured op times (JSON)")};
  Option<int64_t> microBatches{*this, "micro-batches",
                               llvm::cl::desc("Micro-batches per batch"),
                               llvm::cl::init(1)};
};

void buildSchedulePipeline(OpPassManager &pm,
                           const SchedulePipelineOptions &options) {
  PlaceOpsPassOptions place;
  place.clusterFile = options.cluster;
  place.functionName = options.function;
  place.solver = options.solver;
  place.throughput = options.throughput;
  place.batchSize = options.batch;
  place.samples = options.samples;
  place.training = options.training;
  place.seed = options.seed;
  place.reportFile = options.report;
  place.profileFile = options.profile;
  pm.addPass(createPlaceOpsPass(place));

  ProvisionPassOptions provision;
  provision.clusterFile = options.cluster;
  provision.functionName = options.function;
  provision.throughput = options.throughput;
  provision.batchSize = options.batch;
  provision.samples = options.samples;
  provision.training = options.training;
  provision.profileFile = options.profile;
  pm.addPass(createProvisionPass(provision));

  OutlineStagesPassOptions outline;
  outline.functionName = options.function;
  outline.microBatches = options.microBatches;
  pm.addPass(createOutlineStagesPass(outline));
  pm.addPass(createInsertPipelineCommPass());
  pm.addPass(createVerifyPlacementPass());
}

} // namespace

void mlir::heterps::registerHeterPSPipelines() {
  PassPipelineRegistration<SchedulePipelineOptions>(
      "heterps-schedule",
      "Place, provision, outline stages, insert channels and verify: "
      "heterps-place-ops, heterps-provision, heterps-outline-stages, "
      "heterps-insert-pipeline-comm, heterps-verify-placement",
      buildSchedulePipeline);
}
