//===- GreedySolver.cpp - Op by op, the best type for each ----------------===//

#include "heterps/Schedule/Solver.h"

#include <limits>

using namespace heterps::schedule;

llvm::Expected<SolverResult>
heterps::schedule::solveGreedy(const CostModel &model, const SolverOptions &) {
  int numOps = model.getNumOps(), numResources = model.getNumResources();
  SolverResult result;
  std::vector<int> assignment(numOps, -1);
  // Op by op in topological order, pick the type that gives the cheapest
  // plan when the ops not yet placed follow it (pins permitting): a choice
  // is judged by a complete plan, never revisited.
  for (int l = 0; l < numOps; ++l) {
    double best = std::numeric_limits<double>::infinity();
    int bestType = -1;
    for (int t = 0; t < numResources; ++t) {
      if (!model.allowed(l, t))
        continue;
      std::vector<int> plan = assignment;
      plan[l] = t;
      for (int rest = l + 1; rest < numOps; ++rest) {
        int pin = model.getProblem().ops[rest].pinned;
        plan[rest] = pin >= 0 ? pin : t;
      }
      double objective = model.objective(plan);
      ++result.evaluations;
      if (objective < best) {
        best = objective;
        bestType = t;
      }
    }
    assignment[l] = bestType;
  }
  result.assignment = assignment;
  result.evaluation = model.evaluate(assignment);
  return result;
}
