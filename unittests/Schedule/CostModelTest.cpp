//===- CostModelTest.cpp - The cost model against hand-computed values ----===//

#include "heterps/Schedule/CostModel.h"

#include <gtest/gtest.h>

using namespace heterps::schedule;

namespace {

/// A CPU (100 GFLOP/s, 10 GB/s, $1/h, 8 units) and a GPU (1000 GFLOP/s,
/// 100 GB/s, $10/h, 4 units), no latencies and no dispatch overhead, so that
/// every figure below can be worked out by hand. Three ops, trained at batch
/// 100 towards 20000 samples/s over 1e8 samples:
///   0 lookup: 1e7 bytes, 1e6 embedding bytes, 1e6 bytes of output
///   1 gemm:   1e9 + 2e9 FLOPs, 4e6 parameter bytes, 1e5 bytes of output
///   2 loss:   1e6 FLOPs
PlacementProblem makeProblem() {
  PlacementProblem problem;
  Cluster &cluster = problem.cluster;
  cluster.resources = {{"cpu", ResourceKind::CPU, 100, 10, 16, 1, 8, 0},
                       {"gpu", ResourceKind::GPU, 1000, 100, 40, 10, 4, 0}};
  cluster.links = {{Link{1, 0}, Link{1, 0}}, {Link{1, 0}, Link{10, 0}}};
  cluster.psLinks = {Link{1, 0}, Link{1, 0}};
  OpInfo lookup;
  lookup.name = "lookup";
  lookup.forwardBytes = 1e7;
  lookup.embeddingBytes = 1e6;
  lookup.outputBytes = 1e6;
  OpInfo gemm;
  gemm.name = "gemm";
  gemm.forwardFlops = 1e9;
  gemm.backwardFlops = 2e9;
  gemm.parameterBytes = 4e6;
  gemm.outputBytes = 1e5;
  gemm.operands = {0};
  OpInfo loss;
  loss.name = "loss";
  loss.forwardFlops = 1e6;
  loss.operands = {1};
  problem.ops = {lookup, gemm, loss};
  problem.batchSize = 100;
  problem.throughput = 20000;
  problem.samples = 1e8;
  return problem;
}

TEST(CostModelTest, OpTimesAreRooflinePlusParameterServerTraffic) {
  PlacementProblem problem = makeProblem();
  CostModel model(problem);
  // Lookup: 1e7 B / 10 GB/s, plus 1e6 B pulled and pushed at 1 GB/s.
  EXPECT_DOUBLE_EQ(model.opSeconds(0, 0), 1e-3 + 2e-3);
  EXPECT_DOUBLE_EQ(model.opSeconds(0, 1), 1e-4 + 2e-3);
  // Gemm: 3e9 FLOPs.
  EXPECT_DOUBLE_EQ(model.opSeconds(1, 0), 0.03);
  EXPECT_DOUBLE_EQ(model.opSeconds(1, 1), 0.003);
  EXPECT_DOUBLE_EQ(model.opSeconds(2, 1), 1e-6);
}

TEST(CostModelTest, MixedPlan) {
  PlacementProblem problem = makeProblem();
  CostModel model(problem);
  Evaluation e = model.evaluate({0, 1, 1});
  ASSERT_TRUE(e.feasible) << e.reason;
  ASSERT_EQ(e.stages.size(), 2u);
  // Stage 0: 3e-3 s of compute, the lookup's 1e6 B output forward and its
  // gradient back at 1 GB/s: ET(1) = 5e-3 s = B / target exactly.
  EXPECT_DOUBLE_EQ(e.stages[0].computeSeconds, 3e-3);
  EXPECT_DOUBLE_EQ(e.stages[0].transferSeconds, 2e-3);
  EXPECT_EQ(e.stages[0].units, 1);
  EXPECT_DOUBLE_EQ(e.stages[0].throughput, 20000);
  // Stage 1: 3.001e-3 s on one GPU, the last stage sends nothing.
  EXPECT_EQ(e.stages[1].units, 1);
  EXPECT_DOUBLE_EQ(e.stages[1].seconds, 3.001e-3);
  EXPECT_DOUBLE_EQ(e.throughput, 20000);
  EXPECT_DOUBLE_EQ(e.costPerHour, 11);
  EXPECT_NEAR(e.costUsd, 1e8 / 20000 / 3600 * 11, 1e-9);
}

TEST(CostModelTest, DataParallelUnitsPayForSynchronisation) {
  PlacementProblem problem = makeProblem();
  CostModel model(problem);
  Evaluation e = model.evaluate({1, 1, 1});
  ASSERT_TRUE(e.feasible) << e.reason;
  ASSERT_EQ(e.stages.size(), 1u);
  // One GPU needs 5.101e-3 s > 5e-3 s; two need 5.101e-3 / 2 plus a ring
  // all-reduce of 4e6 B: 2 * (1/2) * 4e6 / 10 GB/s = 4e-4 s.
  EXPECT_EQ(e.stages[0].units, 2);
  EXPECT_DOUBLE_EQ(e.stages[0].syncSeconds, 4e-4);
  EXPECT_DOUBLE_EQ(e.stages[0].seconds, 5.101e-3 / 2 + 4e-4);
  EXPECT_DOUBLE_EQ(e.costPerHour, 20);
  EXPECT_NEAR(e.costUsd, 1e8 / (100 / (5.101e-3 / 2 + 4e-4)) / 3600 * 20, 1e-9);
}

TEST(CostModelTest, UnreachableTargetNamesTheBottleneck) {
  PlacementProblem problem = makeProblem();
  CostModel model(problem);
  Evaluation e = model.evaluate({0, 0, 0});
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.bottleneckStage, 0);
  // 0.03301 s of compute over k CPUs plus 8e-3 (k-1)/k s of all-reduce never
  // gets under 5e-3 s; the best is k = 8.
  double best = 0.03301 / 8 + 8e-3 * 7 / 8;
  EXPECT_NEAR(e.stages[0].seconds, best, 1e-12);
  EXPECT_NEAR(e.shortfall, 20000 - 100 / best, 1e-6);
  EXPECT_NE(e.reason.find("stage 0 (ops 0..2 on cpu)"), std::string::npos)
      << e.reason;
  EXPECT_GT(model.objective(e), model.objective(model.evaluate({0, 1, 1})));
}

TEST(CostModelTest, UnitLimitsAcrossStagesOfOneType) {
  PlacementProblem problem = makeProblem();
  // Fast links, a light gemm and a target of 1e6 samples/s (1e-4 s a batch):
  // the first GPU stage needs 1.2e-4 / k + 2e-5 <= 1e-4, two units; the CPU
  // stage and the second GPU stage one each. Three GPUs, two available.
  for (auto &row : problem.cluster.links)
    for (Link &link : row)
      link = Link{100, 0};
  problem.cluster.psLinks = {Link{100, 0}, Link{100, 0}};
  problem.ops[1].forwardFlops = 1e5;
  problem.ops[1].backwardFlops = 2e5;
  problem.throughput = 1e6;
  problem.cluster.resources[1].units = 2;
  CostModel model(problem);
  Evaluation e = model.evaluate({1, 0, 1});
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.bottleneckStage, 0);
  EXPECT_EQ(e.stages[0].units, 2);
  EXPECT_EQ(e.reason, "the stages on gpu need 3 units to reach 1000000.0 "
                      "samples/s but 2 are available; stage 0 alone needs 2 "
                      "(about 333333.3 samples/s short)");
}

TEST(CostModelTest, ResidentBytesBeyondAUnitAreRefused) {
  PlacementProblem problem = makeProblem();
  // 50 GB of parameters, gradients and optimizer state: more than a GPU's
  // 40 GB whatever the units, less than a 64 GB CPU.
  problem.ops[1].residentBytes = 50e9;
  problem.cluster.resources[0].memoryGB = 64;
  CostModel model(problem);
  Evaluation e = model.evaluate({0, 1, 1});
  EXPECT_FALSE(e.feasible);
  EXPECT_TRUE(e.outOfMemory);
  EXPECT_EQ(e.bottleneckStage, 1);
  EXPECT_TRUE(e.stages[1].outOfMemory);
  EXPECT_EQ(e.stages[1].units, 0);
  // The op that holds too much is cut from the op after it, which fits.
  ASSERT_EQ(e.stages.size(), 3u);
  EXPECT_EQ(e.reason,
            "stage 1 (ops 1..1 on gpu) needs 50.00 GB per unit (50.00 GB of "
            "parameters, gradients and optimizer state, 0.00 GB of "
            "activations with all 4 unit(s)) but a unit of gpu has 40.00 GB");
  // Out of memory ranks below missing the target (all on CPUs).
  Evaluation slow = model.evaluate({0, 0, 0});
  EXPECT_FALSE(slow.outOfMemory);
  EXPECT_GT(model.objective(e), model.objective(slow));
}

TEST(CostModelTest, StagesTooLargeForAUnitAreCutWhereTheyFit) {
  PlacementProblem problem = makeProblem();
  // 25 GB on each GPU op: 50 GB together exceed a 40 GB GPU, each fits.
  problem.ops[1].residentBytes = 25e9;
  problem.ops[2].residentBytes = 25e9;
  CostModel model(problem);
  Evaluation e = model.evaluate({0, 1, 1});
  EXPECT_FALSE(e.outOfMemory);
  ASSERT_EQ(e.stages.size(), 3u);
  EXPECT_EQ(e.stages[1].resource, 1);
  EXPECT_EQ(e.stages[1].firstOp, 1);
  EXPECT_EQ(e.stages[1].lastOp, 1);
  EXPECT_EQ(e.stages[2].resource, 1);
  EXPECT_EQ(e.stages[2].firstOp, 2);
  // An explicit cut gives the same stages; cuts where the types change
  // anyway change nothing.
  Evaluation cut = model.evaluate({0, 1, 1}, {1, 2});
  ASSERT_EQ(cut.stages.size(), 3u);
  EXPECT_EQ(model.objective(cut), model.objective(e));
}

TEST(CostModelTest, ActivationsSpreadOverUnitsAndMicroBatches) {
  PlacementProblem problem = makeProblem();
  // 30 GB resident on the GPU stage leaves 10 GB for 25 GB of activations
  // per batch: three units, though one meets the target.
  problem.ops[1].residentBytes = 30e9;
  problem.ops[2].outputBytes = 25e9;
  {
    CostModel model(problem);
    Evaluation e = model.evaluate({0, 1, 1});
    ASSERT_TRUE(e.feasible) << e.reason;
    EXPECT_EQ(e.stages[1].units, 3);
    EXPECT_DOUBLE_EQ(e.stages[1].residentBytes, 30e9);
    EXPECT_NEAR(e.stages[1].activationBytes, (25e9 + 1e5) / 3, 1);
    EXPECT_DOUBLE_EQ(e.stages[1].memoryLimitBytes, 40e9);
  }
  // With 4 micro-batches, 1F1B keeps one micro-batch in flight on the last
  // stage: a quarter of the activations, one unit. A stage evaluated
  // without its depth is charged every micro-batch.
  problem.microBatches = 4;
  CostModel model(problem);
  Evaluation e = model.evaluate({0, 1, 1});
  ASSERT_TRUE(e.feasible) << e.reason;
  EXPECT_EQ(e.stages[1].units, 1);
  EXPECT_NEAR(e.stages[1].activationBytes, (25e9 + 1e5) / 4, 1);
  EXPECT_EQ(model.evaluateStage(1, 2, 1, -1).units, 3);
  // Inference keeps no activations for a backward pass.
  problem.training = false;
  CostModel inference(problem);
  EXPECT_EQ(inference.evaluateStage(1, 2, 1, -1).units, 1);
}

TEST(CostModelTest, LowerBoundIsTheCheapestUnitSecondsOfEveryOp) {
  PlacementProblem problem = makeProblem();
  CostModel model(problem);
  // Per op, min over types of time * price: lookup 3e-3 * $1 (CPU), gemm
  // 0.03 on either, loss 1e-5 on either; per batch of 100, over 1e8 samples.
  EXPECT_NEAR(model.lowerBoundUsd(), 1e8 / 3600.0 * 0.03301 / 100, 1e-9);
  // No plan beats it.
  for (int plan = 0; plan < 8; ++plan) {
    Evaluation e = model.evaluate({plan & 1, (plan >> 1) & 1, (plan >> 2) & 1});
    if (e.feasible) {
      EXPECT_LE(model.lowerBoundUsd(), e.costUsd) << plan;
    }
  }
}

TEST(CostModelTest, InferenceSkipsBackwardWork) {
  PlacementProblem problem = makeProblem();
  problem.training = false;
  CostModel model(problem);
  EXPECT_DOUBLE_EQ(model.opSeconds(1, 1), 1e-3);
  EXPECT_DOUBLE_EQ(model.opSeconds(0, 0), 1e-3 + 1e-3);
}

TEST(CostModelTest, CrossingBytesFollowTheLastUse) {
  PlacementProblem problem = makeProblem();
  // A skip connection: the loss also reads the lookup's output.
  problem.ops[2].operands = {0, 1};
  CostModel model(problem);
  EXPECT_DOUBLE_EQ(model.crossingBytes(0), 1e6);
  EXPECT_DOUBLE_EQ(model.crossingBytes(1), 1e6 + 1e5);
  EXPECT_DOUBLE_EQ(model.crossingBytes(2), 0);
}

TEST(CostModelTest, ProfileReplacesTheRoofline) {
  PlacementProblem problem = makeProblem();
  ProfileTable profile;
  profile.batchSize = 50;
  profile.seconds["gemm"]["gpu"] = 0.001;
  problem.profile = profile;
  CostModel model(problem);
  // Measured at batch 50, scaled to batch 100.
  EXPECT_DOUBLE_EQ(model.opSeconds(1, 1), 0.002);
  EXPECT_DOUBLE_EQ(model.opSeconds(1, 0), 0.03);
  // Its names are the problem's.
  EXPECT_FALSE(static_cast<bool>(problem.validate()));
}

TEST(CostModelTest, TargetsAndCountsAreChecked) {
  PlacementProblem problem = makeProblem();
  problem.throughput = std::numeric_limits<double>::infinity();
  EXPECT_EQ(llvm::toString(problem.validate()),
            "invalid placement problem: throughput target INF samples/s is "
            "not a positive finite number");
  problem = makeProblem();
  problem.microBatches = problem.batchSize + 1;
  EXPECT_EQ(llvm::toString(problem.validate()),
            "invalid placement problem: 101 micro-batches of a batch of 100 "
            "samples: a micro-batch needs at least one sample");
  problem.microBatches = problem.batchSize;
  EXPECT_FALSE(static_cast<bool>(problem.validate()));
}

TEST(CostModelTest, AProfileOfOtherOpsOrTypesIsAnError) {
  // A misspelled name would leave the roofline estimate in silence.
  PlacementProblem problem = makeProblem();
  problem.profile = ProfileTable();
  problem.profile->batchSize = 50;
  problem.profile->seconds["gemmm"]["gpu"] = 0.001;
  EXPECT_EQ(llvm::toString(problem.validate()),
            "invalid placement problem: the profile table times op 'gemmm', "
            "which the model does not have (did you mean 'gemm'?)");
  problem.profile->seconds.clear();
  problem.profile->seconds["gemm"]["gpus"] = 0.001;
  EXPECT_EQ(llvm::toString(problem.validate()),
            "invalid placement problem: the profile table times op 'gemm' on "
            "'gpus', which the cluster does not have (did you mean 'gpu'?)");
  // Another cluster's type is left out.
  problem.profile->seconds.clear();
  problem.profile->seconds["gemm"]["a100-40g"] = 0.001;
  EXPECT_FALSE(static_cast<bool>(problem.validate()));
}

} // namespace
