//===- ExhaustiveSolver.cpp - Every placement, the oracle -----------------===//
//
// Every plan: a type per op and, with SolverOptions::searchCuts, where an op
// runs on the type of the op before it, whether a stage starts there (a
// pipeline cut inside a run of one type). Enumerated depth-first in op
// order.
//
//===----------------------------------------------------------------------===//

#include "heterps/Schedule/Solver.h"

#include <chrono>
#include <limits>

using namespace heterps::schedule;

namespace {

class Enumeration {
public:
  Enumeration(const CostModel &model, const SolverOptions &options,
              SolverResult &result)
      : model(model), options(options), result(result),
        numOps(model.getNumOps()), numResources(model.getNumResources()),
        assignment(numOps),
        deadline(
            std::chrono::steady_clock::now() +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                std::chrono::duration<double>(options.timeBudgetSeconds))) {}

  /// The number of plans, counted the way they are enumerated.
  double countPlans() const {
    // endingOn[t]: plans of the ops so far whose last op runs on t.
    std::vector<double> endingOn(numResources, 0);
    for (int t = 0; t < numResources; ++t)
      endingOn[t] = model.allowed(0, t) ? 1 : 0;
    for (int l = 1; l < numOps; ++l) {
      double total = 0;
      for (double count : endingOn)
        total += count;
      for (int t = 0; t < numResources; ++t)
        endingOn[t] = model.allowed(l, t)
                          ? total + (options.searchCuts ? endingOn[t] : 0)
                          : 0;
    }
    double plans = 0;
    for (double count : endingOn)
      plans += count;
    return plans;
  }

  void run() { place(0); }

  std::vector<int> best, bestCuts;

private:
  /// Chooses op l's type (and whether it starts a stage) and recurses;
  /// false once the time budget is spent.
  bool place(int l) {
    if (l == numOps)
      return evaluate();
    for (int t = 0; t < numResources; ++t) {
      if (!model.allowed(l, t))
        continue;
      assignment[l] = t;
      if (!place(l + 1))
        return false;
      if (options.searchCuts && l > 0 && assignment[l - 1] == t) {
        cuts.push_back(l);
        bool more = place(l + 1);
        cuts.pop_back();
        if (!more)
          return false;
      }
    }
    return true;
  }

  bool evaluate() {
    double objective = model.objective(assignment, cuts);
    ++result.evaluations;
    if (objective < bestObjective) {
      bestObjective = objective;
      best = assignment;
      bestCuts = cuts;
    }
    return !(options.timeBudgetSeconds > 0 &&
             (result.evaluations & 4095) == 0 &&
             std::chrono::steady_clock::now() > deadline);
  }

  const CostModel &model;
  const SolverOptions &options;
  SolverResult &result;
  int numOps, numResources;
  std::vector<int> assignment, cuts;
  std::chrono::steady_clock::time_point deadline;
  double bestObjective = std::numeric_limits<double>::infinity();
};

} // namespace

llvm::Expected<SolverResult>
heterps::schedule::solveExhaustive(const CostModel &model,
                                   const SolverOptions &options) {
  SolverResult result;
  Enumeration enumeration(model, options, result);
  double plans = enumeration.countPlans();
  if (plans > static_cast<double>(options.maxPlans))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "exhaustive: %.0f candidate plans exceed the limit of %llu; use the "
        "dp or rl solver for a problem of %d ops",
        plans, static_cast<unsigned long long>(options.maxPlans),
        model.getNumOps());
  enumeration.run();
  result.assignment = enumeration.best;
  result.cuts = enumeration.bestCuts;
  result.evaluation = model.evaluate(result.assignment, result.cuts);
  return result;
}
