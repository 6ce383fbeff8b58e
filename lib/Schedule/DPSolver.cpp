//===- DPSolver.cpp - Dynamic programming over stage boundaries -----------===//
//
// Stages are contiguous runs of the topological order, so a plan is a
// sequence of (first op, last op, resource type); consecutive stages may run
// on one type (a pipeline cut inside a run of ops of that type, which pays
// when one stage would not fit a unit's memory). A stage's time depends only
// on its ops, its type and the type of the next stage (the link its outputs
// cross). The hourly price of a
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

/// The plan that ends with `last`, followed back through `from`: a type
/// per op, and the ops where a stage starts on the type of the stage before.
static void tracePlan(int numOps, const Candidate *last,
                      const std::vector<std::vector<const Candidate *>> &from,
                      std::vector<int> &assignment, std::vector<int> &cuts) {
  assignment.assign(numOps, 0);
  cuts.clear();
  for (const Candidate *c = last; c; c = from[c->first][c->resource]) {
    for (int l = c->first; l <= c->last; ++l)
      assignment[l] = c->resource;
    if (c->next == c->resource)
      cuts.push_back(c->last + 1);
    if (c->first == 0)
      break;
  }
  std::reverse(cuts.begin(), cuts.end());
}

/// Runs the DP over `candidates` (grouped by first op) keeping only stages
/// with throughput >= `threshold` (and, unless `allowCuts`, followed by a
/// stage on another type); returns the cheapest plan by hourly price (false
/// when there is none).
static bool cheapestPlan(int numOps, int numResources,
                         const std::vector<std::vector<Candidate>> &byFirst,
                         double threshold, bool allowCuts,
                         std::vector<int> &assignment, std::vector<int> &cuts) {
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
      if (c.units == 0 || c.throughput < threshold ||
          (!allowCuts && c.next == c.resource))
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
  if (!bestLast)
    return false;
  tracePlan(numOps, bestLast, from, assignment, cuts);
  return true;
}

/// The plan whose slowest stage is fastest (with every stage at its maximum
/// units): what an infeasible target comes closest to.
static void fastestPlan(int numOps, int numResources,
                        const std::vector<std::vector<Candidate>> &byFirst,
                        bool allowCuts, std::vector<int> &assignment,
                        std::vector<int> &cuts) {
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
      if (best[i][c.resource] < 0 || (!allowCuts && c.next == c.resource))
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
  tracePlan(numOps, bestLast, from, assignment, cuts);
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
          if ((next < 0) != (j == numOps - 1))
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
  std::vector<int> plan, cuts;
  // The DP checks each stage against its type's units alone; with cuts, a
  // type's stages are more likely to need more units together than it has.
  // The plans without cuts are always searched, so that allowing cuts never
  // loses a plan the stricter search finds.
  std::vector<bool> searches{false};
  if (options.searchCuts)
    searches.push_back(true);
  for (bool allowCuts : searches)
    for (double threshold : thresholds) {
      ++result.evaluations;
      if (!cheapestPlan(numOps, numResources, byFirst, threshold, allowCuts,
                        plan, cuts))
        break; // Higher thresholds admit fewer stages: none will work.
      Evaluation evaluation = model.evaluate(plan, cuts);
      double objective = model.objective(evaluation);
      if (objective < bestObjective) {
        bestObjective = objective;
        result.assignment = plan;
        result.cuts = cuts;
        result.evaluation = evaluation;
      }
    }
  // No threshold gave a feasible plan (none reaches the target, or the
  // stages of one type together need more units than it has): the plan
  // that comes closest.
  if (!result.evaluation.feasible) {
    fastestPlan(numOps, numResources, byFirst, options.searchCuts, plan, cuts);
    Evaluation evaluation = model.evaluate(plan, cuts);
    if (result.assignment.empty() ||
        model.objective(evaluation) < bestObjective) {
      result.assignment = plan;
      result.cuts = cuts;
      result.evaluation = evaluation;
    }
  }
  return result;
}
