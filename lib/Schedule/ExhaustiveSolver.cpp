//===- ExhaustiveSolver.cpp - Every placement, the oracle -----------------===//

#include "heterps/Schedule/Solver.h"

#include <chrono>
#include <limits>

using namespace heterps::schedule;

llvm::Expected<SolverResult>
heterps::schedule::solveExhaustive(const CostModel &model,
                                   const SolverOptions &options) {
  int numOps = model.getNumOps(), numResources = model.getNumResources();
  // The choices of every op (one when it is pinned).
  std::vector<std::vector<int>> choices(numOps);
  double plans = 1;
  for (int l = 0; l < numOps; ++l) {
    for (int t = 0; t < numResources; ++t)
      if (model.allowed(l, t))
        choices[l].push_back(t);
    plans *= static_cast<double>(choices[l].size());
  }
  if (plans > static_cast<double>(options.maxPlans))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "exhaustive: %.0f candidate plans exceed the limit of %llu; use the "
        "dp or rl solver for a problem of %d ops",
        plans, static_cast<unsigned long long>(options.maxPlans), numOps);

  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(options.timeBudgetSeconds);
  std::vector<size_t> digit(numOps, 0);
  std::vector<int> assignment(numOps), best;
  for (int l = 0; l < numOps; ++l)
    assignment[l] = choices[l][0];
  double bestObjective = std::numeric_limits<double>::infinity();
  SolverResult result;
  while (true) {
    double objective = model.objective(assignment);
    ++result.evaluations;
    if (objective < bestObjective) {
      bestObjective = objective;
      best = assignment;
    }
    // Next plan: a mixed-radix counter over the choices, last op fastest.
    int l = numOps - 1;
    while (l >= 0 && ++digit[l] == choices[l].size()) {
      digit[l] = 0;
      assignment[l] = choices[l][0];
      --l;
    }
    if (l < 0)
      break;
    assignment[l] = choices[l][digit[l]];
    if (options.timeBudgetSeconds > 0 && (result.evaluations & 4095) == 0 &&
        std::chrono::steady_clock::now() > deadline)
      break;
  }
  result.assignment = best;
  result.evaluation = model.evaluate(best);
  return result;
}
