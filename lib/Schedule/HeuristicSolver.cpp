//===- HeuristicSolver.cpp - Rules of thumb: IO to CPU, compute to GPU ----===//

#include "heterps/Schedule/Solver.h"

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
      const ResourceType &type = problem.cluster.resources[cpu];
      // An op is IO-bound when it talks to the parameter server or when its
      // arithmetic intensity is below the CPU's ridge point (there the CPU
      // is memory-bound too, and the cheaper unit wins).
      double ridge = type.peakGflops / type.memoryGBps;
      std::vector<int> plan(numOps);
      for (int l = 0; l < numOps; ++l) {
        const OpInfo &op = problem.ops[l];
        double flops = op.forwardFlops + op.backwardFlops;
        double bytes = op.forwardBytes + op.backwardBytes;
        if (op.pinned >= 0)
          plan[l] = op.pinned;
        else if (flops == 0 && bytes == 0 && op.embeddingBytes == 0)
          // Views and parameter reads stay with their neighbour rather than
          // cutting a stage.
          plan[l] = l > 0 ? plan[l - 1] : cpu;
        else if (op.embeddingBytes > 0 || flops < ridge * bytes)
          plan[l] = cpu;
        else
          plan[l] = gpu;
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
