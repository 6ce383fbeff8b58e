//===- Solver.cpp - The solver registry and the shared local search -------===//

#include "heterps/Schedule/Solver.h"

#include "llvm/ADT/StringSwitch.h"

#include <chrono>

using namespace heterps::schedule;

llvm::ArrayRef<llvm::StringRef> heterps::schedule::getSolverNames() {
  static const llvm::StringRef names[] = {"rl",       "exhaustive", "dp",
                                          "greedy",   "genetic",    "heuristic",
                                          "cpu-only", "gpu-only"};
  return names;
}

llvm::Expected<SolverResult>
heterps::schedule::solvePlacement(llvm::StringRef name, const CostModel &model,
                                  const SolverOptions &options) {
  if (llvm::Error error = model.getProblem().validate())
    return error;
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<SolverResult> result = [&]() -> llvm::Expected<SolverResult> {
    if (name == "rl")
      return solveRL(model, options);
    if (name == "exhaustive")
      return solveExhaustive(model, options);
    if (name == "dp")
      return solveDP(model, options);
    if (name == "greedy")
      return solveGreedy(model, options);
    if (name == "genetic")
      return solveGenetic(model, options);
    if (name == "heuristic")
      return solveHeuristic(model, options);
    if (name == "cpu-only")
      return solveSingleKind(model, options, ResourceKind::CPU);
    if (name == "gpu-only")
      return solveSingleKind(model, options, ResourceKind::GPU);
    std::string known;
    for (llvm::StringRef solver : getSolverNames())
      known += (known.empty() ? "" : ", ") + solver.str();
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "unknown solver '%s' (known: %s)",
                                   name.str().c_str(), known.c_str());
  }();
  if (!result)
    return result.takeError();
  result->solver = name.str();
  result->searchSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

uint64_t heterps::schedule::improveByLocalSearch(const CostModel &model,
                                                 std::vector<int> &assignment) {
  uint64_t evaluations = 0;
  double best = model.objective(assignment);
  ++evaluations;
  bool improved = true;
  while (improved) {
    improved = false;
    for (int l = 0; l < model.getNumOps(); ++l) {
      int original = assignment[l];
      for (int t = 0; t < model.getNumResources(); ++t) {
        if (t == original || !model.allowed(l, t))
          continue;
        assignment[l] = t;
        double objective = model.objective(assignment);
        ++evaluations;
        if (objective < best * (1 - 1e-12)) {
          best = objective;
          original = t;
          improved = true;
        }
      }
      assignment[l] = original;
    }
  }
  return evaluations;
}
