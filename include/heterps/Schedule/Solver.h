//===- Solver.h - Placement solvers -----------------------------*- C++ -*-===//
//
// Every solver takes the same problem and returns a placement (a resource
// type per op) with its evaluation. Same seed, same plan. Pins are honoured.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SCHEDULE_SOLVER_H
#define HETERPS_SCHEDULE_SOLVER_H

#include "heterps/Schedule/CostModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace heterps {
namespace schedule {

/// Where an iterating search stands, for a front end that shows it.
struct SearchProgress {
  int iteration = 0, iterations = 0;
  /// The objective of the best plan so far (the job cost, or the penalty
  /// of an infeasible plan).
  double bestObjective = 0;
  double seconds = 0;
};

struct SolverOptions {
  uint64_t seed = 1;
  /// Called after every rl iteration; may be empty.
  std::function<void(const SearchProgress &)> progress;
  /// Stop searching after this many seconds (0: no limit). Solvers that
  /// iterate return the best plan found so far.
  double timeBudgetSeconds = 0;
  /// Problems with more ops than this are searched on about this many
  /// contiguous groups of ops (Clustering.h), whose plan's stage boundaries
  /// are then moved op by op; 0 always searches the ops themselves.
  int maxSearchOps = 256;
  /// Also search cuts inside runs of one type where they lower the cost (dp
  /// and exhaustive exactly, rl with its cut action and exact polish, the
  /// others by adding and removing cuts after their search). Cuts that
  /// memory requires are made either way.
  bool searchCuts = true;

  // rl
  int iterations = 200;
  int samplesPerIteration = 32;
  double learningRate = 0.01;
  int hiddenSize = 32;
  double entropyWeight = 0.01;
  double baselineDecay = 0.9;
  /// A policy saved by an earlier run to start from (warm start), and where
  /// to save the trained policy; empty for none.
  std::string policyIn;
  std::string policyOut;

  // genetic
  int population = 64;
  int generations = 150;
  double mutationRate = 0.05;

  // exhaustive
  /// Refuse problems with more candidate plans than this.
  uint64_t maxPlans = 20'000'000;
};

struct SolverResult {
  std::string solver;
  std::vector<int> assignment;
  /// Ops (ascending) where a stage starts on the same type as the stage
  /// before it: pipeline cuts inside a run of one type.
  std::vector<int> cuts;
  Evaluation evaluation;
  double searchSeconds = 0;
  /// Plans evaluated.
  uint64_t evaluations = 0;
  /// The groups of ops the search ran on; 0 when it ran on the ops.
  int groups = 0;
};

/// The solvers, in the order the documentation lists them.
enum class SolverKind {
  RL,
  Exhaustive,
  DP,
  Greedy,
  Genetic,
  Heuristic,
  CPUOnly,
  GPUOnly
};

llvm::ArrayRef<SolverKind> getSolverKinds();
/// The name users write (`rl`, `dp`, `cpu-only`, ...).
llvm::StringRef getSolverName(SolverKind kind);
/// One line on what the solver does, for `--help`.
llvm::StringRef getSolverSummary(SolverKind kind);
std::optional<SolverKind> parseSolverKind(llvm::StringRef name);

/// The solver names, in the order of getSolverKinds().
llvm::ArrayRef<llvm::StringRef> getSolverNames();

/// Runs the solver `kind` on `model`'s problem.
llvm::Expected<SolverResult> solvePlacement(SolverKind kind,
                                            const CostModel &model,
                                            const SolverOptions &options);
/// Runs the solver named `name`; an unknown name is an error listing the
/// known ones.
llvm::Expected<SolverResult> solvePlacement(llvm::StringRef name,
                                            const CostModel &model,
                                            const SolverOptions &options);

// The solvers, one per file.
llvm::Expected<SolverResult> solveExhaustive(const CostModel &model,
                                             const SolverOptions &options);
llvm::Expected<SolverResult> solveDP(const CostModel &model,
                                     const SolverOptions &options);
llvm::Expected<SolverResult> solveGreedy(const CostModel &model,
                                         const SolverOptions &options);
llvm::Expected<SolverResult> solveGenetic(const CostModel &model,
                                          const SolverOptions &options);
llvm::Expected<SolverResult> solveHeuristic(const CostModel &model,
                                            const SolverOptions &options);
llvm::Expected<SolverResult> solveSingleKind(const CostModel &model,
                                             const SolverOptions &options,
                                             ResourceKind kind);
llvm::Expected<SolverResult> solveRL(const CostModel &model,
                                     const SolverOptions &options);

/// Improves `assignment` by moving single ops, or contiguous runs of ops, to
/// another resource type while that lowers the objective (first
/// improvement, in op order), with the stages also cut at `cuts`. Returns
/// the number of plans evaluated.
uint64_t improveByLocalSearch(const CostModel &model,
                              std::vector<int> &assignment,
                              llvm::ArrayRef<int> cuts = {});

/// The cheapest plan whose runs of one type have the types `runTypes`, in
/// that order (consecutive entries differ): dp restricted to that sequence
/// places the boundaries between the runs and, with `searchCuts`, the cuts
/// inside them, exactly as dp does. Returns false when pins leave no such
/// plan; otherwise fills the assignment, cuts, evaluation and evaluations of
/// `result`.
bool placeRunsExactly(const CostModel &model, llvm::ArrayRef<int> runTypes,
                      bool searchCuts, SolverResult &result);

/// Removes, or adds, pipeline cuts inside runs of one type (`cuts`, as in
/// SolverResult) while that lowers the objective: a stage split in two
/// holds half the parameters per unit. Returns the number of plans
/// evaluated.
uint64_t improveCuts(const CostModel &model, llvm::ArrayRef<int> assignment,
                     std::vector<int> &cuts);

} // namespace schedule
} // namespace heterps

#endif // HETERPS_SCHEDULE_SOLVER_H
