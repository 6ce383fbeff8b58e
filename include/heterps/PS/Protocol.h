//===- Protocol.h - What clients and servers of the PS agree on -*- C++ -*-===//
//
// The protocol's version, how keys and dense tensors map to servers, and
// the Status of a call: shared by the client, the server and the shard.
// No gRPC and no tables here, so a client (the heterps-ps admin tool)
// links neither the shard nor its RocksDB tier.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_PROTOCOL_H
#define HETERPS_PS_PROTOCOL_H

#include <cstdint>
#include <string>

namespace heterps::ps {

/// The protocol's minor version (the major one is the package, v1).
constexpr uint32_t kProtocolVersion = 4;
/// Keys hash into this many virtual shards; checkpoints hold one file per
/// table and virtual shard, so they restore onto any server count.
constexpr uint32_t kVirtualShards = 64;

/// The virtual shard of a key, and the server of a virtual shard.
uint32_t virtualShardOf(uint64_t key);
inline uint32_t serverOfShard(uint32_t virtualShard, uint32_t servers) {
  return virtualShard % servers;
}
/// The server of a dense tensor.
uint32_t serverOfName(const std::string &name, uint32_t servers);

/// The codes are gRPC's (grpc::StatusCode), so a Status converts by value.
enum class Code {
  OK = 0,
  InvalidArgument = 3,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Internal = 13,
  Unavailable = 14,
  Unauthenticated = 16,
};

struct Status {
  Code code = Code::OK;
  std::string message;
  bool ok() const { return code == Code::OK; }
  static Status error(Code code, std::string message) {
    return {code, std::move(message)};
  }
};
const char *codeName(Code code);

} // namespace heterps::ps

#endif // HETERPS_PS_PROTOCOL_H
