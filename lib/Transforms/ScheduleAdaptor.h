//===- ScheduleAdaptor.h - IR to placement problem and back -----*- C++ -*-===//
//
// The scheduling library knows nothing of MLIR; these functions adapt a
// function of HeterPS ops to a PlacementProblem (its ops in order, their
// cost interface, the tensors between them, pins) for the placement and
// provisioning passes.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_TRANSFORMS_SCHEDULEADAPTOR_H
#define HETERPS_LIB_TRANSFORMS_SCHEDULEADAPTOR_H

#include "heterps/Dialect/HeterPS/IR/HeterPSModelFunction.h"
#include "heterps/Schedule/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace heterps {

namespace schedule = ::heterps::schedule;

/// The options the placement and provisioning passes share.
struct ScheduleOptions {
  std::string passName;
  std::string clusterFile;
  std::string functionName;
  double throughput = 0;
  int64_t batchSize = 0;
  double samples = 0;
  bool training = true;
  std::string profileFile;
  int64_t microBatches = 1;
};

/// A function's ops (in order, the terminator excluded) and the problem
/// built from them; problem.ops[i] describes ops[i]. In a training step
/// (heterps-autodiff ran) the problem holds the forward ops only, costed
/// for training (forward plus backward); the ops of a forward op's layer
/// (`heterps.layer`: its gradients, update and push) are its followers and
/// go wherever it goes.
struct ScheduledFunction {
  func::FuncOp function;
  SmallVector<Operation *> ops;
  SmallVector<SmallVector<Operation *>> followers;
  schedule::PlacementProblem problem;
  /// The ops (indices into `ops`, ascending) that carry heterps.stage_cut.
  std::vector<int> cuts;

  /// Sets `name` on ops[index] and on its followers.
  void setAttr(size_t index, StringRef name, Attribute value);
};

/// Loads the cluster (and profile) and builds the problem. Ops that already
/// carry `heterps.device` are pinned to that resource type. A function
/// with `heterps.training` is always costed as a training step.
FailureOr<ScheduledFunction> buildScheduledFunction(ModuleOp module,
                                                    const ScheduleOptions &);

/// The cluster's resource types as `#heterps.device` attributes.
SmallVector<Attribute> getResourceAttrs(MLIRContext *context,
                                        const schedule::Cluster &cluster);

/// Emits an error for a plan that cannot meet the target.
void emitInfeasible(Operation *anchor, StringRef passName,
                    const schedule::Evaluation &evaluation,
                    const schedule::PlacementProblem &problem);

} // namespace heterps
} // namespace mlir

#endif // HETERPS_LIB_TRANSFORMS_SCHEDULEADAPTOR_H
