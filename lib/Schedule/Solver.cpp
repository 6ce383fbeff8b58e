//===- Solver.cpp - The solver registry and the shared local search -------===//

#include "heterps/Schedule/Solver.h"

#include "llvm/Support/ErrorHandling.h"

#include <chrono>

using namespace heterps::schedule;

namespace {
struct SolverInfo {
  SolverKind kind;
  llvm::StringRef name;
  llvm::StringRef summary;
};
} // namespace

static const SolverInfo kSolvers[] = {
    {SolverKind::RL, "rl",
     "the paper's scheduler: an LSTM policy trained with REINFORCE"},
    {SolverKind::Exhaustive, "exhaustive",
     "every plan; the oracle on small problems"},
    {SolverKind::DP, "dp", "dynamic programming over stage boundaries"},
    {SolverKind::Greedy, "greedy",
     "op by op, the type that gives the cheapest plan"},
    {SolverKind::Genetic, "genetic", "genetic algorithm"},
    {SolverKind::Heuristic, "heuristic",
     "PS ops on CPU, arithmetic-intensive ops on GPU"},
    {SolverKind::CPUOnly, "cpu-only", "every op on the best CPU type"},
    {SolverKind::GPUOnly, "gpu-only", "every op on the best GPU type"},
};

static const SolverInfo &getInfo(SolverKind kind) {
  for (const SolverInfo &info : kSolvers)
    if (info.kind == kind)
      return info;
  llvm_unreachable("every SolverKind is in kSolvers");
}

llvm::ArrayRef<SolverKind> heterps::schedule::getSolverKinds() {
  static const std::vector<SolverKind> kinds = [] {
    std::vector<SolverKind> all;
    for (const SolverInfo &info : kSolvers)
      all.push_back(info.kind);
    return all;
  }();
  return kinds;
}

llvm::ArrayRef<llvm::StringRef> heterps::schedule::getSolverNames() {
  static const std::vector<llvm::StringRef> names = [] {
    std::vector<llvm::StringRef> all;
    for (const SolverInfo &info : kSolvers)
      all.push_back(info.name);
    return all;
  }();
  return names;
}

llvm::StringRef heterps::schedule::getSolverName(SolverKind kind) {
  return getInfo(kind).name;
}

llvm::StringRef heterps::schedule::getSolverSummary(SolverKind kind) {
  return getInfo(kind).summary;
}

std::optional<SolverKind>
heterps::schedule::parseSolverKind(llvm::StringRef name) {
  for (const SolverInfo &info : kSolvers)
    if (info.name == name)
      return info.kind;
  return std::nullopt;
}

llvm::Expected<SolverResult>
heterps::schedule::solvePlacement(llvm::StringRef name, const CostModel &model,
                                  const SolverOptions &options) {
  if (std::optional<SolverKind> kind = parseSolverKind(name))
    return solvePlacement(*kind, model, options);
  std::string known;
  for (llvm::StringRef solver : getSolverNames())
    known += (known.empty() ? "" : ", ") + solver.str();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown solver '%s' (known: %s)",
                                 name.str().c_str(), known.c_str());
}

llvm::Expected<SolverResult>
heterps::schedule::solvePlacement(SolverKind kind, const CostModel &model,
                                  const SolverOptions &options) {
  if (llvm::Error error = model.getProblem().validate())
    return error;
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<SolverResult> result = [&]() -> llvm::Expected<SolverResult> {
    switch (kind) {
    case SolverKind::RL:
      return solveRL(model, options);
    case SolverKind::Exhaustive:
      return solveExhaustive(model, options);
    case SolverKind::DP:
      return solveDP(model, options);
    case SolverKind::Greedy:
      return solveGreedy(model, options);
    case SolverKind::Genetic:
      return solveGenetic(model, options);
    case SolverKind::Heuristic:
      return solveHeuristic(model, options);
    case SolverKind::CPUOnly:
      return solveSingleKind(model, options, ResourceKind::CPU);
    case SolverKind::GPUOnly:
      return solveSingleKind(model, options, ResourceKind::GPU);
    }
    llvm_unreachable("unhandled SolverKind");
  }();
  if (!result)
    return result.takeError();
  result->solver = getSolverName(kind).str();
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
