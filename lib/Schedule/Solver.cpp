//===- Solver.cpp - The solver registry and the shared local search -------===//

#include "heterps/Schedule/Solver.h"
#include "heterps/Schedule/Clustering.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <chrono>
#include <cmath>

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

static llvm::Expected<SolverResult> runSolver(SolverKind kind,
                                              const CostModel &model,
                                              const SolverOptions &options) {
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
}

llvm::Expected<SolverResult>
heterps::schedule::solvePlacement(SolverKind kind, const CostModel &model,
                                  const SolverOptions &options) {
  if (llvm::Error error = model.getProblem().validate())
    return error;
  if (options.maxSearchOps < 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "max-search-ops %d is negative",
                                   options.maxSearchOps);
  if (!(options.timeBudgetSeconds >= 0) ||
      !std::isfinite(options.timeBudgetSeconds))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "time-budget %g is not a non-negative number of seconds (0: none)",
        options.timeBudgetSeconds);
  // Options of another solver than the one that runs would be ignored.
  if (kind != SolverKind::RL &&
      (!options.policyIn.empty() || !options.policyOut.empty()))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "rl-policy-in and rl-policy-out are the rl solver's; this is %s",
        getSolverName(kind).str().c_str());
  if (kind == SolverKind::Genetic && options.population < 4)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "genetic-population %d is below 4, the genetic solver's smallest",
        options.population);
  if (kind == SolverKind::Genetic && options.generations < 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "genetic-generations %d is negative",
                                   options.generations);
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<SolverResult> result = [&]() -> llvm::Expected<SolverResult> {
    if (options.maxSearchOps == 0 || model.getNumOps() <= options.maxSearchOps)
      return runSolver(kind, model, options);
    // Search the groups, then place each boundary of the plan at the op
    // where it costs least.
    OpClustering clustering = clusterOps(model, options.maxSearchOps);
    CostModel groupedModel(clustering.problem);
    llvm::Expected<SolverResult> grouped =
        runSolver(kind, groupedModel, options);
    if (!grouped)
      return grouped.takeError();
    SolverResult expanded = std::move(*grouped);
    expanded.assignment = clustering.expand(expanded.assignment);
    for (int &cut : expanded.cuts)
      cut = clustering.begin[cut];
    expanded.evaluations +=
        refineStageBoundaries(model, expanded.assignment, expanded.cuts);
    expanded.groups = clustering.getNumGroups();
    return expanded;
  }();
  if (!result)
    return result.takeError();
  // Every solver's plan may gain from cutting a run of one type in two (dp
  // and exhaustive consider it already, the others choose types only).
  if (options.searchCuts)
    result->evaluations += improveCuts(model, result->assignment, result->cuts);
  result->evaluation = model.evaluate(result->assignment, result->cuts);
  // The cuts the cost model made for memory become the plan's own.
  result->cuts.clear();
  const std::vector<StageEvaluation> &stages = result->evaluation.stages;
  for (size_t i = 1; i < stages.size(); ++i)
    if (stages[i].resource == stages[i - 1].resource)
      result->cuts.push_back(stages[i].firstOp);
  if (!result)
    return result.takeError();
  result->solver = getSolverName(kind).str();
  result->searchSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

uint64_t heterps::schedule::improveByLocalSearch(const CostModel &model,
                                                 std::vector<int> &assignment,
                                                 llvm::ArrayRef<int> cuts) {
  // Two neighbourhoods: moving one op to another type, and moving a
  // contiguous run of ops to one type. The second shifts a stage boundary or
  // merges and splits stages in one step, which single-op moves cannot do
  // when every intermediate plan is worse (an extra stage costs a transfer
  // and its own units). First improvement, repeated until no move helps.
  int numOps = model.getNumOps(), numResources = model.getNumResources();
  uint64_t evaluations = 0;
  double best = model.objective(assignment, cuts);
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
          double objective = model.objective(candidate, cuts);
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

uint64_t heterps::schedule::improveCuts(const CostModel &model,
                                        llvm::ArrayRef<int> assignment,
                                        std::vector<int> &cuts) {
  const int numOps = model.getNumOps();
  uint64_t evaluations = 1;
  double best = model.objective(assignment, cuts);
  std::vector<int> candidate;
  bool improved = true;
  while (improved) {
    improved = false;
    // Each cut removed.
    for (size_t i = 0; i < cuts.size();) {
      candidate = cuts;
      candidate.erase(candidate.begin() + i);
      double objective = model.objective(assignment, candidate);
      ++evaluations;
      if (objective < best * (1 - 1e-12)) {
        best = objective;
        cuts.swap(candidate);
        improved = true;
        continue;
      }
      ++i;
    }
    // The best cut added inside each run of one type.
    int bestCut = -1;
    for (int l = 1; l < numOps; ++l) {
      if (assignment[l] != assignment[l - 1] ||
          std::binary_search(cuts.begin(), cuts.end(), l))
        continue;
      candidate = cuts;
      candidate.insert(std::lower_bound(candidate.begin(), candidate.end(), l),
                       l);
      double objective = model.objective(assignment, candidate);
      ++evaluations;
      if (objective < best * (1 - 1e-12)) {
        best = objective;
        bestCut = l;
      }
    }
    if (bestCut >= 0) {
      cuts.insert(std::lower_bound(cuts.begin(), cuts.end(), bestCut), bestCut);
      improved = true;
    }
  }
  return evaluations;
}
