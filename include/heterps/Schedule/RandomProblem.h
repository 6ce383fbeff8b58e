//===- RandomProblem.h - Random placement problems for tests and benchmarks =//
//
// Chains and DAGs of CTR-like ops (embedding lookups that talk to the
// parameter server, GEMMs, elementwise ops) on 2 or 3 resource types with
// public-cloud figures, and a throughput target that needs several units.
// Same seed, same problem.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SCHEDULE_RANDOMPROBLEM_H
#define HETERPS_SCHEDULE_RANDOMPROBLEM_H

#include "heterps/Schedule/Problem.h"

#include <cstdint>

namespace heterps {
namespace schedule {

struct RandomProblemSpec {
  int numOps = 8;
  /// 2: a CPU and an A100; 3: adds a V100.
  int numResources = 2;
  /// Extra operand edges to earlier ops (a DAG) when true; a chain otherwise.
  bool dag = false;
  int64_t batchSize = 512;
};

/// A cluster of `numResources` (2 or 3) types with AWS on-demand figures.
Cluster makeReferenceCluster(int numResources);

PlacementProblem makeRandomProblem(const RandomProblemSpec &spec,
                                   uint64_t seed);

} // namespace schedule
} // namespace heterps

#endif // HETERPS_SCHEDULE_RANDOMPROBLEM_H
