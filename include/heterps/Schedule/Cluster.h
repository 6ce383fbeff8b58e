//===- Cluster.h - Resource types and links of a cluster --------*- C++ -*-===//
//
// The cluster a job is scheduled on: resource types (a kind of machine or
// accelerator with a price per unit-hour and a number of units available),
// the links between types and to the parameter server. Read from the JSON
// cluster file documented in docs/Scheduling.md. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SCHEDULE_CLUSTER_H
#define HETERPS_SCHEDULE_CLUSTER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace heterps {
namespace schedule {

enum class ResourceKind { CPU, GPU };

llvm::StringRef stringifyResourceKind(ResourceKind kind);

struct ResourceType {
  std::string name;
  ResourceKind kind = ResourceKind::CPU;
  /// Peak fp32 throughput of one unit, GFLOP/s.
  double peakGflops = 0;
  /// Memory bandwidth of one unit, GB/s.
  double memoryGBps = 0;
  /// Memory of one unit, GB.
  double memoryGB = 0;
  /// Price of one unit for one hour, USD.
  double pricePerHour = 0;
  /// Units of this type available to the job.
  int64_t units = 0;
  /// Fixed cost of running one op on one unit (kernel launch, dispatch), us.
  double opOverheadUs = 0;
};

struct Link {
  /// Bandwidth, GB/s.
  double gbps = 0;
  /// Latency of one transfer, us.
  double latencyUs = 0;

  /// Seconds to move `bytes` over the link in one transfer.
  double transferSeconds(double bytes) const {
    return bytes / (gbps * 1e9) + latencyUs * 1e-6;
  }
};

struct Cluster {
  std::string name;
  std::vector<ResourceType> resources;
  /// links[a][b]: from resource type a to b; links[a][a] connects the units
  /// of one type (dense-parameter synchronisation).
  std::vector<std::vector<Link>> links;
  /// psLinks[a]: from resource type a to the parameter server.
  std::vector<Link> psLinks;

  /// The index of the resource type named `name`, or -1.
  int find(llvm::StringRef name) const;
  /// The resource types of `kind`, in file order.
  std::vector<int> ofKind(ResourceKind kind) const;
};

/// Parses and validates a cluster file. Errors name the file, the JSON path
/// of the bad value and what was expected.
llvm::Expected<Cluster> parseCluster(llvm::StringRef text,
                                     llvm::StringRef fileName);
/// Reads and parses the cluster file at `path`.
llvm::Expected<Cluster> loadCluster(llvm::StringRef path);

} // namespace schedule
} // namespace heterps

#endif // HETERPS_SCHEDULE_CLUSTER_H
