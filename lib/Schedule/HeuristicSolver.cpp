//===- HeuristicSolver.cpp - Rules of thumb: IO to CPU, compute to GPU ----===//

#include "heterps/Schedule/Solver.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace heterps::schedule;

/// Evaluates `plan` and keeps it in `result` when it is the best so far.
static void keepBest(const CostModel &model, const std::vector<int> &plan,
                     SolverResult &result, double &best) {
  Evaluation evaluation = model.evaluate(plan);
  double objective = model.objective(evaluation);
  ++result.evaluations;
  if (objective < best) {
    best = objective;
    result.assignment = plan;
    result.evaluation = evaluation;
  }
}

llvm::Expected<SolverResult>
heterps::schedule::solveHeuristic(const CostModel &model,
                                  const SolverOptions &options) {
  const PlacementProblem &problem = model.getProblem();
  std::vector<int> cpus = problem.cluster.ofKind(ResourceKind::CPU);
  std::vector<int> gpus = problem.cluster.ofKind(ResourceKind::GPU);
  if (cpus.empty())
    return solveSingleKind(model, options, ResourceKind::GPU);
  if (gpus.empty())
    return solveSingleKind(model, options, ResourceKind::CPU);

  int numOps = model.getNumOps();
  SolverResult result;
  double best = std::numeric_limits<double>::infinity();
  for (int cpu : cpus)
    for (int gpu : gpus) {
      // IO-bound ops (those that talk to the parameter server) go to the
      // CPU, compute-bound ones (arithmetic intensity above the GPU's ridge
      // point divided by 8, i.e. GEMM- and conv-like) to the GPU; the rest
      // (elementwise ops, views, parameter reads) stay with their first
      // producer rather than cutting a stage. An op whose parameters and
      // optimizer state alone fill a GPU stays on the CPU.
      const ResourceType &type = problem.cluster.resources[gpu];
      double ridge = type.peakGflops / type.memoryGBps / 8;
      double gpuBytes = type.memoryGB * 1e9;
      std::vector<int> plan(numOps);
      for (int l = 0; l < numOps; ++l) {
        const OpInfo &op = problem.ops[l];
        double flops = op.forwardFlops + op.backwardFlops;
        double bytes = op.forwardBytes + op.backwardBytes;
        if (op.pinned >= 0)
          plan[l] = op.pinned;
        else if (op.embeddingBytes > 0)
          plan[l] = cpu;
        else if (flops > ridge * bytes && op.residentBytes < gpuBytes)
          plan[l] = gpu;
        else if (!op.operands.empty())
          plan[l] = plan[op.operands.front()];
        else
          plan[l] = -1;
      }
      // Ops without operands (parameter reads, constants) go with their
      // first user.
      for (int l = numOps - 1; l >= 0; --l) {
        if (plan[l] >= 0)
          continue;
        plan[l] = cpu;
        for (int user = l + 1; user < numOps; ++user)
          if (llvm::is_contained(problem.ops[user].operands, l)) {
            plan[l] = plan[user] >= 0 ? plan[user] : cpu;
            break;
          }
      }
      keepBest(model, plan, result, best);
    }
  return result;
}

llvm::Expected<SolverResult>
heterps::schedule::solveSingleKind(const CostModel &model,
                                   const SolverOptions &, ResourceKind kind) {
  const PlacementProblem &problem = model.getProblem();
  std::vector<int> types = problem.cluster.ofKind(kind);
  llvm::StringRef name = stringifyResourceKind(kind);
  if (types.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s-only: the cluster has no %s resource "
                                   "type",
                                   name.str().c_str(), name.str().c_str());
  for (const OpInfo &op : problem.ops)
    if (op.pinned >= 0 && problem.cluster.resources[op.pinned].kind != kind)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "%s-only: op '%s' is pinned to '%s', which is not a %s",
          name.str().c_str(), op.name.c_str(),
          problem.cluster.resources[op.pinned].name.c_str(),
          name.str().c_str());
  SolverResult result;
  double best = std::numeric_limits<double>::infinity();
  for (int t : types) {
    std::vector<int> plan(model.getNumOps(), t);
    // Pins to another type of the same kind are honoured.
    for (int l = 0; l < model.getNumOps(); ++l)
      if (problem.ops[l].pinned >= 0)
        plan[l] = problem.ops[l].pinned;
    keepBest(model, plan, result, best);
  }
  return result;
}
