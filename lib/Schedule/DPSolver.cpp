//===- DPSolver.cpp - Dynamic programming over stage boundaries -----------===//
//
// Stages are contiguous runs of the topological order, so a plan is a
// sequence of (first op, last op, resource type) with consecutive stages on
// different types; a stage's time depends only on its ops, its type and the
// type of the next stage (the link its outputs cross). The hourly price of a
// plan is a sum over its stages, but its throughput is the minimum over them.
// For a throughput threshold R, a DP finds the cheapest plan whose every
// stage reaches R; the job cost of that plan is at most price / R. Running
// the DP for every stage throughput that occurs (the optimum's throughput is
// one of them) and keeping the cheapest job gives the optimum. See
// docs/Scheduling.md for when this is exact and when it is a bound.
//
//===----------------------------------------------------------------------===//

#include "heterps/Schedule/Solver.h"

#include <algorithm>
#include <limits>

using namespace heterps::schedule;

namespace {

struct Candidate {
  int first, last, resource, next;
  /// Units provisioned (0: the stage cannot reach the target).
  int64_t units;
  double pricePerHour;
  double throughput;
};

} // namespace

/// Runs the DP over `candidates` (grouped by first op) keeping only stages
/// with throughput >= `threshold`; returns the cheapest plan by hourly price.
static std::vector<int>
cheapestPlan(int numOps, int numResources,
             const std::vector<std::vector<Candidate>> &byFirst,
             double threshold) {
  const double inf = std::numeric_limits<double>::infinity();
  // price[i][t]: the cheapest ops 0..i-1 such that the stage starting at i
  // is on type t; from[i][t] the candidate that got there.
  std::vector<std::vector<double>> price(
      numOps + 1, std::vector<double>(numResources, inf));
  std::vector<std::vector<const Candidate *>> from(
      numOps + 1, std::vector<const Candidate *>(numResources, nullptr));
  for (int t = 0; t < numResources; ++t)
    price[0][t] = 0;
  double bestTotal = inf;
  const Candidate *bestLast = nullptr;
  for (int i = 0; i < numOps; ++i) {
    for (const Candidate &c : byFirst[i]) {
      if (c.units == 0 || c.throughput < threshold)
        continue;
      double start = price[i][c.resource];
      if (start == inf)
        continue;
      double total = start + c.pricePerHour;
      if (c.next < 0) {
        if (total < bestTotal) {
          bestTotal = total;
          bestLast = &c;
        }
      } else if (total < price[c.last + 1][c.next]) {
        price[c.last + 1][c.next] = total;
        from[c.last + 1][c.next] = &c;
      }
    }
  }
  std::vector<int> assignment;
  if (!bestLast)
    return assignment;
  assignment.assign(numOps, -1);
  for (const Candidate *c = bestLast; c; c = from[c->first][c->resource]) {
    for (int l = c->first; l <= c->last; ++l)
      assignment[l] = c->resource;
    if (c->first == 0)
      break;
  }
  return assignment;
}

/// The plan whose slowest stage is fastest (with every stage at its maximum
/// units): what an infeasible target comes closest to.
static std::vector<int>
fastestPlan(int numOps, int numResources,
            const std::vector<std::vector<Candidate>> &byFirst) {
  std::vector<std::vector<double>> best(numOps + 1,
                                        std::vector<double>(numResources, -1));
  std::vector<std::vector<const Candidate *>> from(
      numOps + 1, std::vector<const Candidate *>(numResources, nullptr));
  for (int t = 0; t < numResources; ++t)
    best[0][t] = std::numeric_limits<double>::infinity();
  double bestTotal = -1;
  const Candidate *bestLast = nullptr;
  for (int i = 0; i < numOps; ++i)
    for (const Candidate &c : byFirst[i]) {
      if (best[i][c.resource] < 0)
        continue;
      double rate = std::min(best[i][c.resource], c.throughput);
      if (c.next < 0) {
        if (rate > bestTotal) {
          bestTotal = rate;
          bestLast = &c;
        }
      } else if (rate > best[c.last + 1][c.next]) {
        best[c.last + 1][c.next] = rate;
        from[c.last + 1][c.next] = &c;
      }
    }
  std::vector<int> assignment(numOps, 0);
  for (const Candidate *c = bestLast; c; c = from[c->first][c->resource]) {
    for (int l = c->first; l <= c->last; ++l)
      assignment[l] = c->resource;
    if (c->first == 0)
      break;
  }
  return assignment;
}

llvm::Expected<SolverResult>
heterps::schedule::solveDP(const CostModel &model,
                           const SolverOptions &options) {
  int numOps = model.getNumOps(), numResources = model.getNumResources();
  const PlacementProblem &problem = model.getProblem();

  // Every stage that pins allow, with every possible next type.
  std::vector<std::vector<Candidate>> byFirst(numOps);
  std::vector<double> thresholds;
  for (int i = 0; i < numOps; ++i)
    for (int t = 0; t < numResources; ++t)
      for (int j = i; j < numOps && model.allowed(j, t); ++j)
        for (int next = -1; next < numResources; ++next) {
          if (next == t || (next < 0) != (j == numOps - 1))
            continue;
          if (next >= 0 && !model.allowed(j + 1, next))
            continue;
          StageEvaluation stage = model.evaluateStage(i, j, t, next);
          Candidate c{i,
                      j,
                      t,
                      next,
                      stage.units,
                      static_cast<double>(stage.units) *
                          problem.cluster.resources[t].pricePerHour,
                      stage.throughput};
          byFirst[i].push_back(c);
          if (c.units > 0)
            thresholds.push_back(c.throughput);
        }

  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()),
                   thresholds.end());
  // Above this many thresholds the DP runs on quantiles of them and is a
  // heuristic rather than exact (documented).
  constexpr size_t kExactThresholds = 4096, kSampledThresholds = 512;
  if (thresholds.size() > kExactThresholds) {
    std::vector<double> sampled;
    for (size_t q = 0; q < kSampledThresholds; ++q)
      sampled.push_back(
          thresholds[q * (thresholds.size() - 1) / (kSampledThresholds - 1)]);
    thresholds = std::move(sampled);
  }

  SolverResult result;
  double bestObjective = std::numeric_limits<double>::infinity();
  for (double threshold : thresholds) {
    std::vector<int> plan =
        cheapestPlan(numOps, numResources, byFirst, threshold);
    ++result.evaluations;
    if (plan.empty())
      break; // Higher thresholds admit fewer stages: none will work.
    Evaluation evaluation = model.evaluate(plan);
    double objective = model.objective(evaluation);
    if (objective < bestObjective) {
      bestObjective = objective;
      result.assignment = plan;
      result.evaluation = evaluation;
    }
  }
  if (result.assignment.empty()) {
    result.assignment = fastestPlan(numOps, numResources, byFirst);
    result.evaluation = model.evaluate(result.assignment);
  }
  (void)options;
  return result;
}
