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
// The same DP polishes the rl solver's plans: restricted to the sequence of
// types of the plan's runs (CPU, then GPU, ...), it places the boundaries
// between the runs, and the cuts inside them, exactly.
//
//===----------------------------------------------------------------------===//

#include "heterps/Schedule/Solver.h"

#include <algorithm>
#include <limits>

using namespace heterps::schedule;

namespace {

struct Candidate {
  int first, last, resource, next;
  /// The DP's state where the stage starts and where the next one does: the
  /// resource types in the free search, the index in the sequence of runs
  /// in the restricted one.
  int state, nextState;
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
  for (const Candidate *c = last; c; c = from[c->first][c->state]) {
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
static bool cheapestPlan(int numOps, int numStates,
                         const std::vector<std::vector<Candidate>> &byFirst,
                         double threshold, bool allowCuts,
                         std::vector<int> &assignment, std::vector<int> &cuts) {
  const double inf = std::numeric_limits<double>::infinity();
  // price[i][s]: the cheapest ops 0..i-1 such that the stage starting at i
  // is in state s; from[i][s] the candidate that got there.
  std::vector<std::vector<double>> price(numOps + 1,
                                         std::vector<double>(numStates, inf));
  std::vector<std::vector<const Candidate *>> from(
      numOps + 1, std::vector<const Candidate *>(numStates, nullptr));
  for (const Candidate &c : byFirst[0])
    price[0][c.state] = 0;
  double bestTotal = inf;
  const Candidate *bestLast = nullptr;
  for (int i = 0; i < numOps; ++i) {
    for (const Candidate &c : byFirst[i]) {
      if (c.units == 0 || c.throughput < threshold ||
          (!allowCuts && c.next == c.resource))
        continue;
      double start = price[i][c.state];
      if (start == inf)
        continue;
      double total = start + c.pricePerHour;
      if (c.next < 0) {
        if (total < bestTotal) {
          bestTotal = total;
          bestLast = &c;
        }
      } else if (total < price[c.last + 1][c.nextState]) {
        price[c.last + 1][c.nextState] = total;
        from[c.last + 1][c.nextState] = &c;
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
static bool fastestPlan(int numOps, int numStates,
                        const std::vector<std::vector<Candidate>> &byFirst,
                        bool allowCuts, std::vector<int> &assignment,
                        std::vector<int> &cuts) {
  std::vector<std::vector<double>> best(numOps + 1,
                                        std::vector<double>(numStates, -1));
  std::vector<std::vector<const Candidate *>> from(
      numOps + 1, std::vector<const Candidate *>(numStates, nullptr));
  for (const Candidate &c : byFirst[0])
    best[0][c.state] = std::numeric_limits<double>::infinity();
  double bestTotal = -1;
  const Candidate *bestLast = nullptr;
  for (int i = 0; i < numOps; ++i)
    for (const Candidate &c : byFirst[i]) {
      if (best[i][c.state] < 0 || (!allowCuts && c.next == c.resource))
        continue;
      double rate = std::min(best[i][c.state], c.throughput);
      if (c.next < 0) {
        if (rate > bestTotal) {
          bestTotal = rate;
          bestLast = &c;
        }
      } else if (rate > best[c.last + 1][c.nextState]) {
        best[c.last + 1][c.nextState] = rate;
        from[c.last + 1][c.nextState] = &c;
      }
    }
  if (!bestLast)
    return false;
  tracePlan(numOps, bestLast, from, assignment, cuts);
  return true;
}

/// A stage from `first` to `last` on `resource`, followed by a stage on
/// `next` (-1: the last stage), priced for the DP.
static Candidate makeCandidate(const CostModel &model, int first, int last,
                               int resource, int next, int state,
                               int nextState) {
  StageEvaluation stage = model.evaluateStage(first, last, resource, next);
  return Candidate{
      first,
      last,
      resource,
      next,
      state,
      nextState,
      stage.units,
      static_cast<double>(stage.units) *
          model.getProblem().cluster.resources[resource].pricePerHour,
      stage.throughput};
}

/// The cheapest plan made of `byFirst`'s stages, over every throughput
/// threshold they reach; the plan whose slowest stage is fastest when none
/// meets the target. Returns false when the stages form no plan at all.
static bool
solveOverCandidates(const CostModel &model, bool searchCuts, int numStates,
                    const std::vector<std::vector<Candidate>> &byFirst,
                    SolverResult &result) {
  const int numOps = model.getNumOps();
  std::vector<double> thresholds;
  for (const std::vector<Candidate> &candidates : byFirst)
    for (const Candidate &c : candidates)
      if (c.units > 0)
        thresholds.push_back(c.throughput);
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

  double bestObjective = std::numeric_limits<double>::infinity();
  std::vector<int> plan, cuts;
  // The DP checks each stage against its type's units alone; with cuts, a
  // type's stages are more likely to need more units together than it has.
  // The plans without cuts are always searched, so that allowing cuts never
  // loses a plan the stricter search finds.
  std::vector<bool> searches{false};
  if (searchCuts)
    searches.push_back(true);
  for (bool allowCuts : searches)
    for (double threshold : thresholds) {
      ++result.evaluations;
      if (!cheapestPlan(numOps, numStates, byFirst, threshold, allowCuts, plan,
                        cuts))
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
  if (!result.evaluation.feasible &&
      fastestPlan(numOps, numStates, byFirst, searchCuts, plan, cuts)) {
    Evaluation evaluation = model.evaluate(plan, cuts);
    if (result.assignment.empty() ||
        model.objective(evaluation) < bestObjective) {
      result.assignment = plan;
      result.cuts = cuts;
      result.evaluation = evaluation;
    }
  }
  return !result.assignment.empty();
}

llvm::Expected<SolverResult>
heterps::schedule::solveDP(const CostModel &model,
                           const SolverOptions &options) {
  int numOps = model.getNumOps(), numResources = model.getNumResources();
  // Every stage that pins allow, with every possible next type; the state
  // is the stage's type.
  std::vector<std::vector<Candidate>> byFirst(numOps);
  for (int i = 0; i < numOps; ++i)
    for (int t = 0; t < numResources; ++t)
      for (int j = i; j < numOps && model.allowed(j, t); ++j)
        for (int next = -1; next < numResources; ++next) {
          if ((next < 0) != (j == numOps - 1))
            continue;
          if (next >= 0 && !model.allowed(j + 1, next))
            continue;
          byFirst[i].push_back(
              makeCandidate(model, i, j, t, next, t, std::max(next, 0)));
        }
  SolverResult result;
  solveOverCandidates(model, options.searchCuts, numResources, byFirst, result);
  return result;
}

bool heterps::schedule::placeRunsExactly(const CostModel &model,
                                         llvm::ArrayRef<int> runTypes,
                                         bool searchCuts,
                                         SolverResult &result) {
  int numOps = model.getNumOps(), numRuns = static_cast<int>(runTypes.size());
  // State k: the stage belongs to the k-th run. A stage of run k is
  // followed by another of run k (a cut) or by the first of run k + 1; the
  // plan ends in the last run.
  std::vector<std::vector<Candidate>> byFirst(numOps);
  for (int i = 0; i < numOps; ++i)
    for (int k = 0; k < numRuns && k <= i; ++k) {
      int t = runTypes[k];
      for (int j = i; j < numOps && model.allowed(j, t); ++j) {
        if (j == numOps - 1) {
          if (k == numRuns - 1)
            byFirst[i].push_back(makeCandidate(model, i, j, t, -1, k, 0));
          break;
        }
        // Every later run needs at least one op.
        if (numOps - 1 - j < numRuns - 1 - k)
          break;
        if (searchCuts && model.allowed(j + 1, t))
          byFirst[i].push_back(makeCandidate(model, i, j, t, t, k, k));
        if (k + 1 < numRuns && model.allowed(j + 1, runTypes[k + 1]))
          byFirst[i].push_back(
              makeCandidate(model, i, j, t, runTypes[k + 1], k, k + 1));
      }
    }
  return solveOverCandidates(model, searchCuts, numRuns, byFirst, result);
}
