//===- Shard.h - One parameter server's tables ------------------*- C++ -*-===//
//
// The state and request handling of one PS server: the tables' rows of the
// virtual shards it owns, their optimizer state, the push sequence numbers
// of its clients, and checkpoints. The gRPC service decodes requests into
// these calls, and the embedded default calls them directly, so both run
// the same code. No gRPC here: errors are Status values whose codes are
// gRPC's.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_SHARD_H
#define HETERPS_PS_SHARD_H

#include "heterps/PS/Protocol.h"
#include "heterps/ps.pb.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace heterps::ps {

struct ShardOptions {
  uint32_t index = 0, count = 1;
  /// Checkpoint names are directories under this one.
  std::string checkpointDir;
  /// Checkpoint names may be absolute paths (the embedded server, whose
  /// checkpoints live in heterps-run's checkpoint directory). A network
  /// server only writes under checkpointDir.
  bool absoluteCheckpointPaths = false;
  /// Larger requests fail with RESOURCE_EXHAUSTED.
  uint64_t maxKeysPerRequest = 1 << 22;
  /// Creating rows beyond this fails with RESOURCE_EXHAUSTED (0: no limit).
  uint64_t maxMemoryBytes = 0;
  /// The RocksDB tier of STORAGE_ROCKSDB tables: scratch space, cleared
  /// at start-up (checkpoints are the durable copy).
  std::string rocksdbDir;
  /// After each checkpoint, keep only this many complete checkpoints under
  /// checkpointDir, the newest by step (0: keep all).
  int keepCheckpoints = 0;
  /// Fault injection for tests: the process kills itself (SIGKILL) in its
  /// N-th checkpoint, after the first file (0: never).
  int crashInCheckpoint = 0;
  /// Seconds on a clock that never goes back, for the rows' time to live
  /// (null: std::chrono::steady_clock); tests set their own instead of
  /// sleeping.
  std::function<double()> clock;
  /// For tests: called when a push has reserved memory for its rows,
  /// before it applies them (null: nothing).
  std::function<void()> pushReserved;
};

class Shard {
public:
  explicit Shard(ShardOptions options);
  ~Shard();

  const ShardOptions &options() const { return opts; }

  Status createTable(const v1::TableConfig &config, bool *created);
  Status describeTable(uint32_t table, v1::TableStatus *status);
  /// Gives a table the hyper-parameters of `optimizer`, which must be of
  /// the kind the table has: the rows keep their optimizer state.
  /// FAILED_PRECONDITION for another kind; `previous` gets the old one.
  Status setTableOptimizer(uint32_t table, const v1::Optimizer &optimizer,
                           v1::Optimizer *previous);
  /// The dimension of a table, for decoding requests.
  Status tableDim(uint32_t table, uint32_t *dim);

  /// Writes n x dim floats: key i's row at row i, or with `rowIndex` at row
  /// rowIndex[i]. Missing rows are created (initializer), or read as zeros
  /// while feature admission has not admitted them.
  Status pull(uint32_t table, const uint64_t *keys, size_t n, float *rows,
              const uint32_t *rowIndex = nullptr);
  /// Applies one optimizer step per distinct key (duplicates summed), or
  /// with `assign` writes the rows. client 0 is not deduplicated.
  Status push(uint32_t table, const uint64_t *keys, size_t n,
              const float *values, uint64_t client, uint64_t seq, bool assign,
              v1::PushResponse *response);

  /// One push of several tables, applied at most once per (client, seq)
  /// (client 0: not deduplicated). Every part is checked before any is
  /// applied; a part that fails while applying (the memory limit, a
  /// non-finite gradient) leaves the parts before it applied, and the
  /// request counts as done.
  struct PushPart {
    uint32_t table = 0;
    const uint64_t *keys = nullptr;
    size_t n = 0;
    const float *values = nullptr;
    bool assign = false;
  };
  Status pushMany(const std::vector<PushPart> &parts, uint64_t client,
                  uint64_t seq, v1::PushResponse *response);

  Status createDense(const v1::DenseTensor &tensor,
                     const v1::Optimizer &optimizer, bool *created);
  Status pullDense(const std::string &name, v1::DenseTensor *tensor);
  Status pushDense(const std::string &name, const float *grads, size_t n,
                   uint64_t client, uint64_t seq, v1::PushResponse *response);

  /// Writes this server's part of checkpoint `name` at `step`.
  Status checkpoint(const std::string &name, int64_t step,
                    v1::CheckpointResponse *response);
  /// Replaces all tables with those of a complete checkpoint (any server
  /// count wrote it), keeping the rows of the virtual shards this one owns.
  /// A checkpoint without the request's `expect_tables` (dimension,
  /// vocabulary, kind of optimizer) is FAILED_PRECONDITION, the tables
  /// unchanged.
  Status restore(const v1::RestoreRequest &request,
                 v1::RestoreResponse *response);
  Status restore(const std::string &name, v1::RestoreResponse *response) {
    v1::RestoreRequest request;
    request.set_name(name);
    return restore(request, response);
  }

  void info(v1::ServerInfoResponse *response);
  /// Drops rows whose TTL expired; returns how many.
  uint64_t evictExpired();
  /// The shortest TTL among the tables (0: none has one).
  double shortestTtlSeconds();
  uint64_t memoryBytes() const { return memory.load(); }

private:
  struct Table;
  struct Dense;
  struct Disk;
  struct Grouping;
  struct ClientSeq {
    std::mutex mutex;
    uint64_t last = 0;
  };

  Status findTable(uint32_t id, Table **table);
  /// Writes this server's part of a checkpoint into `dir`.
  Status writeCheckpoint(const std::string &dir, int64_t step,
                         v1::CheckpointResponse *response);
  /// Deletes complete checkpoints beyond options().keepCheckpoints, naming
  /// them in `response`.
  void pruneCheckpoints(const std::string &written,
                        v1::CheckpointResponse *response);
  /// The tensor, held so that a restore replacing the map meanwhile does
  /// not free it under a running pull or push.
  Status findDense(const std::string &name, std::shared_ptr<Dense> *dense);
  /// Finds the table, checks the request's size and groups its keys by
  /// virtual shard, refusing keys of virtual shards this server does not
  /// own.
  Status checkRequest(uint32_t table, const uint64_t *keys, size_t n, Table **t,
                      Grouping **grouping);
  Status resolvePath(const std::string &name, std::string *path);
  ClientSeq &clientSeq(uint64_t client);
  Status openDisk();
  /// Deletes the RocksDB rows of this shard's tables.
  void dropDiskRows();
  Status allocateSlot(Table &t, uint32_t v, uint32_t *slot, bool *moved);
  /// Writes row `slot` of part `v` of a RocksDB table to RocksDB.
  Status moveOut(Table &t, uint32_t v, uint32_t slot);
  /// Moves rows of part `v` to RocksDB until it holds its cache's rows.
  Status moveOutBeyondCache(Table &t, uint32_t v);
  /// The slot of `key` in part `v`: found, loaded from RocksDB, or created
  /// (counting `created` new slots); -1 while feature admission has not
  /// admitted it (with `countAdmission`, this sighting is counted). A
  /// row created for an assign (`assigning`) starts as zeros, not drawn.
  /// The first `reserved` rows created need no check against the memory
  /// limit: reservePush() counted them.
  Status rowSlot(Table &t, uint32_t v, uint64_t key, bool countAdmission,
                 int32_t *slot, uint64_t *created, bool assigning = false,
                 uint64_t reserved = 0);
  /// INVALID_ARGUMENT for a non-finite gradient or value that the table
  /// does not skip.
  static Status checkFinite(const Table &t, const uint64_t *keys, size_t n,
                            const float *values, bool assign);
  /// A push reserves in `memory` the rows it may create before it applies
  /// anything, so that the memory limit never stops it half-applied: a
  /// push that does not fit applies nothing. reservePush() reserves a row
  /// per key while that fits, else the keys without a row yet
  /// (countNewRows(): an upper bound, with admission and RocksDB caches
  /// counted), or fails with RESOURCE_EXHAUSTED; `rows[i]` gets the rows
  /// reserved for part i (0 without a memory limit). A row per key is
  /// more than most pushes create, so when the count does not fit only
  /// because of what pushes being applied reserved, it waits for them to
  /// settle and counts again. settleRows() gives back what a part did not
  /// create.
  Status reservePush(const PushPart *parts, size_t count, uint64_t *rows);
  uint64_t countNewRows(Table &t, const Grouping &g, const uint64_t *keys,
                        bool assign);
  /// Adds `bytes` to `memory` and reservedBytes when they fit under the
  /// limit.
  bool tryReserve(uint64_t bytes);
  void settleRows(const Table &t, uint64_t reserved, uint64_t created);
  /// Applies a push, virtual shard by virtual shard; `applied` says
  /// whether any row changed (a failure part-way leaves the shards before
  /// it applied).
  Status applyPush(Table &t, const Grouping &g, const uint64_t *keys, size_t n,
                   const float *values, bool assign, uint64_t reserved,
                   v1::PushResponse *response, bool *applied);

  ShardOptions opts;
  /// Readers: every request; writer: creating tables and restoring.
  std::shared_mutex tablesMutex;
  std::map<uint32_t, std::unique_ptr<Table>> tables;
  std::mutex denseMutex;
  std::map<std::string, std::shared_ptr<Dense>> dense;
  std::mutex clientsMutex;
  std::unordered_map<uint64_t, std::unique_ptr<ClientSeq>> clients;
  /// Rows in memory, and those that pushes being applied reserved.
  std::atomic<uint64_t> memory{0};
  /// Guards reservedBytes and settles: pushes waiting for reservations
  /// to settle wait on `settled`.
  std::mutex reserveMutex;
  std::condition_variable settled;
  /// The part of `memory` that pushes reserved and have not settled.
  uint64_t reservedBytes = 0;
  /// Settlements so far.
  uint64_t settles = 0;
  std::shared_ptr<Disk> disk;
  /// Checkpoints, restores and evictions, one at a time.
  std::mutex maintenanceMutex;
  int checkpointsStarted = 0;
};

} // namespace heterps::ps

#endif // HETERPS_PS_SHARD_H
