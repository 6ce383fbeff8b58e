//===- SolversTest.cpp - The placement solvers against the oracle ---------===//

#include "heterps/Schedule/RandomProblem.h"
#include "heterps/Schedule/Report.h"
#include "heterps/Schedule/Solver.h"

#include "SolveForTest.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace heterps::schedule;

namespace {

TEST(SolversTest, EverySolverGivesAValidPlan) {
  PlacementProblem problem =
      makeRandomProblem({/*numOps=*/10, /*numResources=*/3, false, 512}, 7);
  CostModel model(problem);
  double oracle = model.objective(solve("exhaustive", model).evaluation);
  for (llvm::StringRef name : getSolverNames()) {
    SolverResult result = solve(name, model);
    ASSERT_EQ(result.assignment.size(), problem.ops.size()) << name.str();
    for (int t : result.assignment)
      EXPECT_TRUE(t >= 0 && t < 3) << name.str();
    EXPECT_EQ(result.solver, name.str());
    // Nothing beats the oracle.
    EXPECT_GE(model.objective(result.evaluation), oracle * (1 - 1e-12))
        << name.str();
  }
}

TEST(SolversTest, DPEqualsExhaustiveOnChains) {
  int instances = 0, feasible = 0;
  for (int numOps = 2; numOps <= 12; ++numOps)
    for (int numResources = 2; numResources <= 3; ++numResources) {
      // With the cuts inside runs of one type, T (T + 1)^(n - 1) plans: 3
      // types up to 8 ops keep the test to seconds.
      if (numResources == 3 && numOps > 8)
        continue;
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        PlacementProblem problem = makeRandomProblem(
            {numOps, numResources, false, 512}, seed * 1000 + numOps);
        CostModel model(problem);
        SolverOptions withCuts;
        withCuts.searchCuts = true;
        SolverResult exact = solve("exhaustive", model, withCuts);
        SolverResult dp = solve("dp", model, withCuts);
        double a = model.objective(exact.evaluation);
        double b = model.objective(dp.evaluation);
        // Where no plan meets the target, dp returns the plan whose slowest
        // stage is fastest, which is not always the smallest shortfall once
        // the stages of one type together exceed its units.
        EXPECT_EQ(dp.evaluation.feasible, exact.evaluation.feasible);
        if (exact.evaluation.feasible) {
          EXPECT_NEAR(b / a, 1.0, 1e-9)
              << numOps << " ops, " << numResources << " types, seed " << seed;
          ++feasible;
          // No plan, the optimum included, beats the lower bound.
          EXPECT_LE(model.lowerBoundUsd(),
                    exact.evaluation.costUsd * (1 + 1e-12))
              << numOps << " ops, " << numResources << " types, seed " << seed;
        }
        ++instances;
      }
    }
  EXPECT_EQ(instances, 3 * (11 + 7));
  EXPECT_GE(feasible, 40);
}

TEST(SolversTest, DPIsExactOnDAGsInTheirTopologicalOrder) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    PlacementProblem problem =
        makeRandomProblem({11, 2, /*dag=*/true, 512}, seed);
    CostModel model(problem);
    double a = model.objective(solve("exhaustive", model).evaluation);
    double b = model.objective(solve("dp", model).evaluation);
    EXPECT_NEAR(b / a, 1.0, 1e-9) << "seed " << seed;
  }
}

TEST(SolversTest, SameSeedSamePlan) {
  PlacementProblem problem = makeRandomProblem({16, 3, true, 512}, 11);
  CostModel model(problem);
  SolverOptions options;
  options.seed = 42;
  options.iterations = 30;
  for (llvm::StringRef name : getSolverNames()) {
    if (name == "exhaustive")
      continue;
    SolverResult first = solve(name, model, options);
    SolverResult second = solve(name, model, options);
    EXPECT_EQ(first.assignment, second.assignment) << name.str();
  }
}

TEST(SolversTest, PinsAreHonouredByEverySolver) {
  PlacementProblem problem = makeRandomProblem({9, 2, false, 512}, 5);
  // Force the first op onto the GPU and the last onto the CPU.
  problem.ops.front().pinned = 1;
  problem.ops.back().pinned = 0;
  CostModel model(problem);
  SolverOptions options;
  options.iterations = 20;
  for (llvm::StringRef name : getSolverNames()) {
    llvm::Expected<SolverResult> result = solvePlacement(name, model, options);
    if (name == "cpu-only" || name == "gpu-only") {
      // A single-kind plan cannot honour pins to both kinds: it says so.
      ASSERT_FALSE(static_cast<bool>(result)) << name.str();
      EXPECT_NE(llvm::toString(result.takeError()).find("is pinned to"),
                std::string::npos);
      continue;
    }
    ASSERT_TRUE(static_cast<bool>(result))
        << name.str() << ": " << llvm::toString(result.takeError());
    EXPECT_EQ(result->assignment.front(), 1) << name.str();
    EXPECT_EQ(result->assignment.back(), 0) << name.str();
  }
}

TEST(SolversTest, UnknownSolverAndOversizeExhaustive) {
  PlacementProblem problem = makeRandomProblem({30, 3, false, 512}, 1);
  CostModel model(problem);
  llvm::Expected<SolverResult> unknown = solvePlacement("magic", model, {});
  ASSERT_FALSE(static_cast<bool>(unknown));
  EXPECT_EQ(llvm::toString(unknown.takeError()),
            "unknown solver 'magic' (known: rl, exhaustive, dp, greedy, "
            "genetic, heuristic, cpu-only, gpu-only)");
  llvm::Expected<SolverResult> big = solvePlacement("exhaustive", model, {});
  ASSERT_FALSE(static_cast<bool>(big));
  EXPECT_NE(llvm::toString(big.takeError()).find("exceed the limit"),
            std::string::npos);
}

TEST(SolversTest, OptionsOutOfRangeOrOfAnotherSolverAreErrors) {
  PlacementProblem problem = makeRandomProblem({6, 2, false, 512}, 1);
  CostModel model(problem);
  auto errorOf = [&](llvm::StringRef solver, SolverOptions options) {
    llvm::Expected<SolverResult> r = solvePlacement(solver, model, options);
    return r ? std::string("solved") : llvm::toString(r.takeError());
  };
  SolverOptions o;
  o.timeBudgetSeconds = -1;
  EXPECT_EQ(errorOf("dp", o), "time-budget -1 is not a non-negative number "
                              "of seconds (0: none)");
  o.timeBudgetSeconds = std::nan("");
  EXPECT_EQ(errorOf("rl", o), "time-budget nan is not a non-negative number "
                              "of seconds (0: none)");
  o = SolverOptions();
  o.policyIn = "policy.txt";
  EXPECT_EQ(errorOf("dp", o),
            "rl-policy-in and rl-policy-out are the rl solver's; this is dp");
  o = SolverOptions();
  o.population = 1;
  EXPECT_EQ(errorOf("genetic", o),
            "genetic-population 1 is below 4, the genetic solver's smallest");
  EXPECT_EQ(errorOf("dp", o), "solved");
  o.population = 4;
  o.generations = -1;
  EXPECT_EQ(errorOf("genetic", o), "genetic-generations -1 is negative");
}

TEST(SolversTest, ReportHasTheDocumentedKeys) {
  PlacementProblem problem = makeRandomProblem({6, 2, false, 512}, 3);
  CostModel model(problem);
  SolverResult result = solve("dp", model);
  llvm::json::Value report = buildReport(model, result, 9);
  const llvm::json::Object *object = report.getAsObject();
  ASSERT_TRUE(object);
  for (const char *key :
       {"solver", "seed", "search_seconds", "feasible", "throughput",
        "cost_usd", "cost_per_hour", "stages", "lower_bound_usd",
        "gap_to_bound", "tables", "micro_batches"})
    EXPECT_TRUE(object->get(key)) << key;
  ASSERT_TRUE(result.evaluation.feasible);
  EXPECT_GE(*object->getNumber("gap_to_bound"), 0);
  const llvm::json::Array *stages = object->getArray("stages");
  ASSERT_TRUE(stages && !stages->empty());
  for (const char *key : {"index", "resource", "units", "ops", "time_ms"})
    EXPECT_TRUE((*stages)[0].getAsObject()->get(key)) << key;
  EXPECT_EQ(object->getInteger("seed"), 9);
}

} // namespace
