//===- CostModel.h - Time, throughput and cost of a placement ---*- C++ -*-===//
//
// The cost model of docs/Scheduling.md (after DESIGN.md section 4): op time
// per resource type (roofline or profile), stages as maximal runs of ops on
// one type, boundary transfers, dense-parameter synchronisation, the
// smallest number of units per stage that meets the throughput target, the
// pipeline throughput and the job's monetary cost.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SCHEDULE_COSTMODEL_H
#define HETERPS_SCHEDULE_COSTMODEL_H

#include "heterps/Schedule/Problem.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace heterps {
namespace schedule {

struct StageEvaluation {
  int resource = -1;
  /// Ops firstOp..lastOp (inclusive) of the topological order.
  int firstOp = 0;
  int lastOp = 0;
  int64_t units = 0;
  /// OCT_i: the ops' time on one unit, seconds per batch.
  double computeSeconds = 0;
  /// DT_i: the transfer to the next stage (and gradients back), seconds.
  double transferSeconds = 0;
  /// SY_i(k): dense-parameter synchronisation between the units, seconds.
  double syncSeconds = 0;
  /// ET_i(k) = OCT_i / k + DT_i + SY_i(k).
  double seconds = 0;
  /// B / ET_i(k), samples/s.
  double throughput = 0;
  /// What one unit holds with `units` units (with the most units the type
  /// has when `units` is 0): resident bytes (parameters, gradients,
  /// optimizer state) and stashed activations, and the unit's memory.
  double residentBytes = 0;
  double activationBytes = 0;
  double memoryLimitBytes = 0;
  /// The stage does not fit in its units' memory with any number of units.
  bool outOfMemory = false;

  double memoryBytes() const { return residentBytes + activationBytes; }
};

struct Evaluation {
  bool feasible = false;
  /// min_i B / ET_i(k_i), samples/s (with the units provisioned; for an
  /// infeasible plan, with every stage at its maximum units).
  double throughput = 0;
  /// Job cost: samples / throughput / 3600 * costPerHour, USD.
  double costUsd = 0;
  /// Sum over stages of units * price per unit-hour, USD/h.
  double costPerHour = 0;
  std::vector<StageEvaluation> stages;
  /// For an infeasible plan: the stage that cannot reach the target and by
  /// how many samples/s it falls short, and a sentence saying so.
  int bottleneckStage = -1;
  double shortfall = 0;
  std::string reason;
  /// The plan is infeasible because a stage does not fit in its units'
  /// memory (rather than because of the target).
  bool outOfMemory = false;
};

class CostModel {
public:
  explicit CostModel(const PlacementProblem &problem);

  const PlacementProblem &getProblem() const { return problem; }
  int getNumOps() const { return static_cast<int>(problem.ops.size()); }
  int getNumResources() const {
    return static_cast<int>(problem.cluster.resources.size());
  }

  /// OCT(l, t): op `op` on one unit of `resource` for one batch, seconds,
  /// including its parameter-server traffic.
  double opSeconds(int op, int resource) const { return opTime[op][resource]; }
  /// Bytes of activations live across the cut after op `op` (produced at or
  /// before it, consumed after it), per batch, one direction.
  double crossingBytes(int op) const { return crossing[op]; }

  /// Evaluates the stage of ops first..last on `resource` followed by a
  /// stage on `nextResource` (-1 when it is the last stage; `resource`
  /// itself when the next stage runs on the same type), provisioned
  /// with the fewest units that meet the target and whose memory holds the
  /// stage (at most the type's units; `units` is 0 when even those are not
  /// enough).
  /// `inFlight` is how many micro-batches' activations the stage keeps
  /// (1F1B: min(micro-batches, stages from this one to the last)); by
  /// default every micro-batch, the most any stage keeps, so that a search
  /// that does not know the stage's depth stays on the safe side.
  StageEvaluation evaluateStage(int first, int last, int resource,
                                int nextResource, int64_t inFlight = 0) const;

  /// Evaluates a full placement: assignment[op] is a resource index. The
  /// stages are the maximal runs of ops on one type, each also cut before
  /// every op in `cuts` (ascending op indices): consecutive stages on one
  /// type, pipelined like any others. A stage whose resident bytes exceed a
  /// unit's memory is cut further, into the fewest stages that hold them.
  Evaluation evaluate(llvm::ArrayRef<int> assignment,
                      llvm::ArrayRef<int> cuts = {}) const;

  /// The number to minimise: the job cost of a feasible plan; above every
  /// feasible cost for an infeasible one, growing with the shortfall, so
  /// that searches are steered towards feasibility.
  double objective(const Evaluation &evaluation) const;
  double objective(llvm::ArrayRef<int> assignment,
                   llvm::ArrayRef<int> cuts = {}) const {
    return objective(evaluate(assignment, cuts));
  }

  /// A lower bound of the job cost of every feasible plan, USD: each op on
  /// the type where its unit-seconds cost least, with fractional units and
  /// no transfers, synchronisation or memory limits. A stage of k units
  /// that reaches TP samples/s has k >= OCT * TP / B, so its share of the
  /// job cost N * k * p / (3600 TP) is at least N * OCT * p / (3600 B).
  double lowerBoundUsd() const { return costLowerBound; }

  /// Whether `resource` may run op `op` (respects pins).
  bool allowed(int op, int resource) const {
    int pin = problem.ops[op].pinned;
    return pin < 0 || pin == resource;
  }

private:
  /// SY(k): the ring all-reduce of `parameterBytes` between `units` units.
  double syncSeconds(double parameterBytes, int resource, int64_t units) const;
  double stageSeconds(double compute, double transfer, double parameterBytes,
                      int resource, int64_t units) const;

  const PlacementProblem &problem;
  std::vector<std::vector<double>> opTime;
  /// Prefix sums over the op order, per resource, of opTime and of
  /// parameter bytes.
  std::vector<std::vector<double>> opTimePrefix;
  std::vector<double> parameterPrefix;
  /// Prefix sums of resident bytes and of the activations a stage keeps.
  std::vector<double> residentPrefix;
  std::vector<double> activationPrefix;
  std::vector<double> crossing;
  /// An upper bound of any feasible job cost (every op on its most
  /// expensive option), used to rank infeasible plans above feasible ones.
  double infeasibleBase = 0;
  double costLowerBound = 0;
};

} // namespace schedule
} // namespace heterps

#endif // HETERPS_SCHEDULE_COSTMODEL_H
