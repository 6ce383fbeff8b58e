//===- Problem.h - A placement problem --------------------------*- C++ -*-===//
//
// What the scheduler places: the ops of one training (or inference) step in
// topological order with their work per batch, the cluster, the batch size,
// the throughput target and the number of samples the job processes. The
// compiler builds it from IR (heterps-place-ops); benchmarks and tests build
// it directly. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SCHEDULE_PROBLEM_H
#define HETERPS_SCHEDULE_PROBLEM_H

#include "heterps/Schedule/Cluster.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace heterps {
namespace schedule {

/// The work of one op for one batch (the compiler's CostOpInterface).
struct OpInfo {
  /// Unique name: the profile table is keyed by it.
  std::string name;
  /// The op's kind, e.g. "heterps.gemm".
  std::string kind;
  double forwardFlops = 0;
  double backwardFlops = 0;
  double forwardBytes = 0;
  double backwardBytes = 0;
  /// Dense parameter bytes the op reads (synchronised between units).
  double parameterBytes = 0;
  /// Embedding bytes pulled from the parameter server (pushed back the same
  /// in training).
  double embeddingBytes = 0;
  /// Bytes of the op's results, sent to a later stage when a consumer is
  /// there (and their gradients sent back in training). In training they
  /// are also the activations a unit keeps until the backward pass.
  double outputBytes = 0;
  /// Bytes a unit running the op holds for the whole job: its dense
  /// parameters and, in training, their gradients and optimizer state.
  double residentBytes = 0;
  /// Producers of the op's operands (indices into the op list, all smaller).
  std::vector<int> operands;
  /// A resource type the user forced the op onto, or -1.
  int pinned = -1;
  /// When not empty, the op's time on one unit of each resource type (in
  /// the cluster's order), seconds per batch, parameter-server traffic
  /// included: it replaces the roofline and the profile. A group of ops
  /// (Clustering.h) carries the sum of its ops' times.
  std::vector<double> seconds;
};

/// Measured per-op times that replace the roofline estimate (the JSON
/// written by `heterps-run --profile`, documented in docs/Scheduling.md).
struct ProfileTable {
  /// The batch size the times were measured at; they scale linearly to the
  /// problem's batch size.
  int64_t batchSize = 0;
  /// seconds[op name][resource name]: forward + backward time on one unit.
  std::map<std::string, std::map<std::string, double>> seconds;
};

llvm::Expected<ProfileTable> parseProfileTable(llvm::StringRef text,
                                               llvm::StringRef fileName);
llvm::Expected<ProfileTable> loadProfileTable(llvm::StringRef path);

/// An embedding table of the model. Tables live in the parameter server;
/// the placement report says how each compares with a unit's memory.
struct TableInfo {
  std::string name;
  /// Rows and their optimizer state.
  double bytes = 0;
};

struct PlacementProblem {
  Cluster cluster;
  /// In topological order.
  std::vector<OpInfo> ops;
  /// Samples per batch.
  int64_t batchSize = 256;
  /// The throughput the job must reach, samples/s.
  double throughput = 1;
  /// Samples the job processes (turns the hourly price into a job cost).
  double samples = 1e8;
  /// Training runs forward and backward and synchronises parameters;
  /// inference only forward.
  bool training = true;
  /// Micro-batches per batch: the pipeline schedule (1F1B) keeps at most
  /// this many micro-batches' activations in flight on a stage.
  int64_t microBatches = 1;
  std::vector<TableInfo> tables;
  std::optional<ProfileTable> profile;
  /// When not empty, the bytes live across the cut after each op (one entry
  /// per op), instead of the figure derived from operands and outputBytes:
  /// a group of ops has outputs with different last users, which one
  /// outputBytes cannot describe.
  std::vector<double> crossingBytes;

  /// Checks the problem: operands precede their users, pins name resource
  /// types, figures are finite and non-negative.
  llvm::Error validate() const;
};

} // namespace schedule
} // namespace heterps

#endif // HETERPS_SCHEDULE_PROBLEM_H
