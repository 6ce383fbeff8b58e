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
  // Two neighbourhoods: moving one op to another type, and moving a
  // contiguous run of ops to one type. The second shifts a stage boundary or
  // merges and splits stages in one step, which single-op moves cannot do
  // when every intermediate plan is worse (an extra stage costs a transfer
  // and its own units). First improvement, repeated until no move helps.
  int numOps = model.getNumOps(), numResources = model.getNumResources();
  uint64_t evaluations = 0;
  double best = model.objective(assignment);
  ++evaluations;
  std::vector<int> candidate;
  bool improved = true;
  while (improved) {
    improved = false;
    for (int first = 0; first < numOps; ++first)
      for (int last = first; last < numOps; ++last)
        for (int t = 0; t < numResources; ++t) {
          bool changes = false, allowed = true;
          for (int l = first; l <= last && allowed; ++l) {
            allowed = model.allowed(l, t);
            changes = changes || assignment[l] != t;
          }
          if (!allowed || !changes)
            continue;
          candidate = assignment;
          for (int l = first; l <= last; ++l)
            candidate[l] = t;
          double objective = model.objective(candidate);
          ++evaluations;
          if (objective < best * (1 - 1e-12)) {
            best = objective;
            assignment.swap(candidate);
            improved = true;
          }
        }
  }
  return evaluations;
}
