//===- Clustering.h - Ops grouped into layers before the search -*- C++ -*-===//
//
// A training graph of thousands of ops has far fewer places where a stage
// boundary makes sense: the search runs on contiguous groups of ops (as Alpa
// clusters operators into layers), cut where few bytes cross and the work is
// balanced, and never across a change of pin. The grouped problem costs every
// plan that cuts only between groups exactly as the original does: a group's
// time per resource type is the sum of its ops' times, its parameters,
// resident bytes and activations are sums, and the bytes crossing each cut
// are the original figure at that cut. The plan found on groups is expanded
// to the ops, and its stage boundaries are then moved op by op on the
// original problem while that lowers the cost. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SCHEDULE_CLUSTERING_H
#define HETERPS_SCHEDULE_CLUSTERING_H

#include "heterps/Schedule/CostModel.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace heterps {
namespace schedule {

struct OpClustering {
  /// Group g holds ops begin[g] .. begin[g + 1] - 1; the last entry is the
  /// number of ops.
  std::vector<int> begin;
  /// One op per group, named `group<g>` (its times are a profile table).
  PlacementProblem problem;

  int getNumGroups() const { return static_cast<int>(begin.size()) - 1; }
  /// The plan of the ops: each op on its group's resource type.
  std::vector<int> expand(llvm::ArrayRef<int> groupAssignment) const;
};

/// Groups the ops of `model` into at most `maxGroups` contiguous groups
/// (`maxGroups` >= 1). Every change of pin is a cut.
OpClustering clusterOps(const CostModel &model, int maxGroups);

/// Moves each stage boundary of `assignment` (a change of resource type
/// between neighbouring ops) to the position between its neighbouring
/// boundaries (type changes and `cuts`, see SolverResult) that lowers the
/// objective most, until no move helps. Returns the number of plans
/// evaluated.
uint64_t refineStageBoundaries(const CostModel &model,
                               std::vector<int> &assignment,
                               llvm::ArrayRef<int> cuts = {});

} // namespace schedule
} // namespace heterps

#endif // HETERPS_SCHEDULE_CLUSTERING_H
