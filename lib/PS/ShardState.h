//===- ShardState.h - What the parts of a PS shard share -------*- C++ -*-===//
//
// A table is kVirtualShards hash maps (only the owned ones are used), each
// with its own mutex: a request sorts its keys by virtual shard and takes
// each lock once. Rows live in one array per virtual shard, value and
// optimizer state side by side, so a pull or an update touches one run of
// memory per key.
//
// The Shard facade (heterps/PS/Shard.h) is implemented in four files:
// Shard.cpp (tables and the server's description), ShardRows.cpp (rows in
// memory and the RocksDB tier: pulls, pushes, eviction), ShardDense.cpp
// (dense tensors) and ShardCheckpoints.cpp (checkpoints and restores).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_PS_SHARDSTATE_H
#define HETERPS_LIB_PS_SHARDSTATE_H

#include "heterps/PS/KeyIndex.h"
#include "heterps/PS/Shard.h"

#include "heterps/Runtime/Hash.h"
#include "heterps/Runtime/Initializer.h"
#include "heterps/Runtime/Optimizer.h"

#include <rocksdb/db.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace heterps::ps {
namespace detail {

template <typename... Args> std::string str(const Args &...args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

/// The optimizer of a table or dense tensor from its protocol message;
/// INVALID_ARGUMENT naming `what` when a value is out of its range.
Status toOptimizer(const v1::Optimizer &o, const std::string &what,
                   runtime::OptimizerConfig *c);

/// OK, or INVALID_ARGUMENT when a known client's sequence number jumps too
/// far past its last (ShardRows.cpp).
Status checkSequence(uint64_t client, uint64_t last, uint64_t seq);

// Every row of the checkpoint files, and of memory accounting: the key, the
// step count and dim x (1 + state slots) floats.
inline constexpr char kRowsMagic[8] = {'H', 'P', 'S', 'R', 'O', 'W', 'S', '\n'};
inline constexpr char kManifestMagic[8] = {'H', 'P', 'S', 'C',
                                           'K', 'P', 'T', '\n'};
inline constexpr uint32_t kFileVersion = 1;
// Per row beyond its floats: the key, the step, the last access time and
// its KeyIndex entry (12 bytes at a load between a quarter and a half).
inline constexpr uint64_t kRowOverhead = 8 + 8 + 8 + 36;

/// The RocksDB key of a row, and its prefixes: table, generation and
/// virtual shard first, so a shard's rows are one range, and a table's old
/// generation one DeleteRange.
std::string diskPrefix(uint32_t table, uint32_t generation,
                       int64_t virtualShard = -1);
std::string diskKey(uint32_t table, uint32_t generation, uint32_t virtualShard,
                    uint64_t key);
uint64_t keyOfDiskKey(const rocksdb::Slice &k);

} // namespace detail

struct Shard::Table {
  v1::TableConfig config;
  runtime::OptimizerConfig optimizer;
  uint32_t dim = 0;
  int slots = 0;
  size_t stride = 0; // floats per row: value, then state
  std::vector<int64_t> fanShape;
  std::vector<double> initArgs;
  // STORAGE_ROCKSDB: rows in memory per part, and the generation that
  // prefixes this table's RocksDB keys (a restore writes a new one).
  bool onDisk = false;
  size_t cachePerPart = 0;
  uint32_t generation = 0;
  struct Part {
    std::mutex mutex;
    KeyIndex index;             // key -> slot
    std::vector<float> data;    // slot x stride
    std::vector<uint64_t> keys; // slot -> key
    std::vector<int64_t> steps;
    std::vector<double> touched;
    std::vector<uint32_t> freeSlots;
    std::unordered_map<uint64_t, uint32_t> pending; // admission counts
    std::vector<int32_t> merged;                    // slot -> merge index
    uint64_t diskRows = 0;                          // in RocksDB
    uint32_t hand = 0; // the next slot to consider moving to RocksDB

    /// Starts loading the first `floats` floats of the row in `slot` (at
    /// most four cache lines: the hardware prefetcher follows the rest).
    /// Always inlined, as KeyIndex::prefetch.
    __attribute__((always_inline)) void
    prefetchRow(uint32_t slot, size_t stride, size_t floats) const {
      const char *row = reinterpret_cast<const char *>(
          data.data() + static_cast<size_t>(slot) * stride);
      size_t bytes = std::min<size_t>(floats * sizeof(float), 256);
      for (size_t b = 0; b < bytes; b += 64)
        __builtin_prefetch(row + b);
    }
  };
  std::vector<std::unique_ptr<Part>> parts; // kVirtualShards, owned only
  std::atomic<uint64_t> pushesApplied{0}, duplicatePushes{0},
      skippedNonFinite{0}, evicted{0};

  uint64_t rowBytes() const {
    return stride * sizeof(float) + detail::kRowOverhead;
  }
  uint64_t normalize(uint64_t key) const {
    return config.vocab() ? key % config.vocab() : key;
  }
  void initRow(uint64_t key, float *row) const {
    uint64_t seed = runtime::splitmix64(
        config.init().seed() ^
        runtime::splitmix64(config.table_id() ^
                            runtime::splitmix64(key ^ 0x726f77ULL)));
    if (config.init().kind().empty())
      std::fill(row, row + dim, 0.0f);
    else
      runtime::initializeValues(row, dim, fanShape, config.init().kind(),
                                initArgs, seed);
    std::fill(row + dim, row + stride, 0.0f);
  }
};

struct Shard::Dense {
  std::vector<int64_t> shape;
  std::vector<float> value, state;
  int64_t steps = 0;
  v1::Optimizer optimizerProto;
  runtime::OptimizerConfig optimizer;
  std::mutex mutex;
};

/// The RocksDB tier of a server: rows of STORAGE_ROCKSDB tables beyond their
/// cache. It is scratch space (cleared when the server starts);
/// checkpoints are the durable copy.
struct Shard::Disk {
  std::unique_ptr<rocksdb::DB> db;
  std::atomic<uint32_t> nextGeneration{1};
  rocksdb::WriteOptions write;
  rocksdb::ReadOptions read;
  Disk() { write.disableWAL = true; }
};

struct Shard::Grouping {
  std::vector<uint32_t> order;
  std::vector<uint32_t> begin;
  std::vector<uint32_t> shardOf;
  template <typename Normalize>
  void build(const uint64_t *keys, size_t n, Normalize normalize) {
    shardOf.resize(n);
    begin.assign(kVirtualShards + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      shardOf[i] = virtualShardOf(normalize(keys[i]));
      ++begin[shardOf[i] + 1];
    }
    for (uint32_t v = 0; v < kVirtualShards; ++v)
      begin[v + 1] += begin[v];
    order.resize(n);
    std::vector<uint32_t> &cursor = scratch;
    cursor.assign(begin.begin(), begin.end() - 1);
    for (size_t i = 0; i < n; ++i)
      order[cursor[shardOf[i]]++] = static_cast<uint32_t>(i);
  }
  std::vector<uint32_t> scratch;
};

} // namespace heterps::ps

#endif // HETERPS_LIB_PS_SHARDSTATE_H
