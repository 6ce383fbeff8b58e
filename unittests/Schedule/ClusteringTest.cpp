//===- ClusteringTest.cpp - Ops grouped before the search -----------------===//

#include "heterps/Schedule/Clustering.h"
#include "heterps/Schedule/RandomProblem.h"
#include "heterps/Schedule/Solver.h"

#include "SolveForTest.h"

#include <gtest/gtest.h>

#include <random>

using namespace heterps::schedule;

namespace {

TEST(ClusteringTest, GroupsCostEveryPlanAsTheirOpsDo) {
  for (int types = 2; types <= 3; ++types)
    for (bool dag : {false, true}) {
      PlacementProblem problem =
          makeRandomProblem({300, types, dag, 512}, 17 + types);
      CostModel model(problem);
      OpClustering clustering = clusterOps(model, 24);
      llvm::Error invalid = clustering.problem.validate();
      ASSERT_FALSE(static_cast<bool>(invalid))
          << llvm::toString(std::move(invalid));
      CostModel grouped(clustering.problem);
      int numGroups = clustering.getNumGroups();
      EXPECT_GE(numGroups, 2);
      EXPECT_LE(numGroups, 24);
      EXPECT_EQ(clustering.begin.front(), 0);
      EXPECT_EQ(clustering.begin.back(), 300);

      std::mt19937_64 rng(5);
      for (int trial = 0; trial < 200; ++trial) {
        // Few stages, as plans have: a type change at a tenth of the groups.
        std::vector<int> plan(numGroups, static_cast<int>(rng() % types));
        for (int g = 1; g < numGroups; ++g)
          plan[g] =
              rng() % 10 == 0 ? static_cast<int>(rng() % types) : plan[g - 1];
        Evaluation coarse = grouped.evaluate(plan);
        Evaluation fine = model.evaluate(clustering.expand(plan));
        ASSERT_EQ(coarse.stages.size(), fine.stages.size());
        for (size_t i = 0; i < fine.stages.size(); ++i) {
          EXPECT_EQ(coarse.stages[i].units, fine.stages[i].units);
          EXPECT_NEAR(coarse.stages[i].seconds, fine.stages[i].seconds,
                      1e-9 * fine.stages[i].seconds);
          EXPECT_NEAR(coarse.stages[i].memoryBytes(),
                      fine.stages[i].memoryBytes(),
                      1e-9 * fine.stages[i].memoryBytes() + 1e-6);
        }
        EXPECT_EQ(coarse.feasible, fine.feasible);
        EXPECT_NEAR(grouped.objective(coarse) / model.objective(fine), 1.0,
                    1e-9);
      }
    }
}

TEST(ClusteringTest, EveryChangeOfPinIsACut) {
  PlacementProblem problem = makeRandomProblem({400, 2, true, 512}, 3);
  for (int l = 0; l < 400; ++l)
    problem.ops[l].pinned = (l / 37) % 3 == 0 ? -1 : (l / 37) % 2;
  CostModel model(problem);
  OpClustering clustering = clusterOps(model, 16);
  for (int g = 0; g < clustering.getNumGroups(); ++g) {
    int pin = problem.ops[clustering.begin[g]].pinned;
    EXPECT_EQ(clustering.problem.ops[g].pinned, pin);
    for (int l = clustering.begin[g]; l < clustering.begin[g + 1]; ++l)
      EXPECT_EQ(problem.ops[l].pinned, pin) << "group " << g << " op " << l;
  }
}

TEST(ClusteringTest, RefiningRecoversTheOptimalBoundary) {
  // dp is exact on these chains: shifting one of its boundaries and refining
  // must come back to its cost.
  int checked = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PlacementProblem problem =
        makeRandomProblem({60, 2, false, 512}, 100 + seed);
    CostModel model(problem);
    SolverResult dp = solve("dp", model);
    const std::vector<StageEvaluation> &stages = dp.evaluation.stages;
    size_t i = 0;
    while (i + 1 < stages.size() &&
           stages[i].resource == stages[i + 1].resource)
      ++i;
    if (!dp.evaluation.feasible || i + 1 >= stages.size())
      continue;
    // Give the last third of a stage to the next stage's type.
    std::vector<int> shifted = dp.assignment;
    int from =
        stages[i].firstOp + 2 * (stages[i].lastOp - stages[i].firstOp + 1) / 3;
    for (int l = from; l <= stages[i].lastOp; ++l)
      shifted[l] = stages[i + 1].resource;
    double before = model.objective(shifted, dp.cuts);
    refineStageBoundaries(model, shifted, dp.cuts);
    double after = model.objective(shifted, dp.cuts);
    EXPECT_LE(after, before);
    EXPECT_NEAR(after / model.objective(dp.evaluation), 1.0, 1e-9)
        << "seed " << seed;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(ClusteringTest, LargeGraphsAreSearchedOnGroups) {
  PlacementProblem problem = makeRandomProblem({800, 2, true, 512}, 11);
  CostModel model(problem);
  SolverOptions grouped;
  grouped.maxSearchOps = 64;
  SolverOptions ungrouped;
  ungrouped.maxSearchOps = 0;
  SolverResult onGroups = solve("dp", model, grouped);
  SolverResult onOps = solve("dp", model, ungrouped);
  EXPECT_GT(onGroups.groups, 0);
  EXPECT_LE(onGroups.groups, 64);
  EXPECT_EQ(onOps.groups, 0);
  ASSERT_EQ(onGroups.assignment.size(), problem.ops.size());
  ASSERT_TRUE(onOps.evaluation.feasible);
  ASSERT_TRUE(onGroups.evaluation.feasible);
  // The evaluation is that of the ops, and not worse than dp on the ops by
  // more than grouping costs on this instance (bench/schedule measures it).
  EXPECT_NEAR(model.objective(onGroups.assignment),
              model.objective(onGroups.evaluation), 0);
  EXPECT_LE(onGroups.evaluation.costUsd, onOps.evaluation.costUsd * 1.02);

  SolverOptions negative;
  negative.maxSearchOps = -1;
  llvm::Expected<SolverResult> refused = solvePlacement("dp", model, negative);
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("negative"),
            std::string::npos);
}

TEST(ClusteringTest, MalformedTimesAndCrossingsAreRefused) {
  PlacementProblem problem = makeRandomProblem({5, 2, false, 512}, 1);
  problem.ops[2].seconds = {1.0};
  llvm::Error error = problem.validate();
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(llvm::toString(std::move(error))
                .find("has times for 1 resource types, expected 2"),
            std::string::npos);
  problem.ops[2].seconds = {1.0, -2.0};
  error = problem.validate();
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("non-finite time"),
            std::string::npos);
  problem.ops[2].seconds.clear();
  problem.crossingBytes = {1, 2, 3};
  error = problem.validate();
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("3 crossing figures for 5"),
            std::string::npos);
}

} // namespace
