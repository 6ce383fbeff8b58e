//===- Shard.cpp - One parameter server's tables --------------------------===//
//
// A table is kVirtualShards hash maps (only the owned ones are used), each
// with its own mutex: a request sorts its keys by virtual shard and takes
// each lock once. Rows live in one array per virtual shard, value and
// optimizer state side by side, so a pull or an update touches one run of
// memory per key.
//
//===----------------------------------------------------------------------===//

#include "heterps/PS/Shard.h"

#include "heterps/PS/KeyIndex.h"

#include "heterps/Runtime/Hash.h"
#include "heterps/Runtime/Initializer.h"
#include "heterps/Runtime/Optimizer.h"
#include "heterps/Support/AtomicFile.h"
#include "heterps/Support/CheckedMath.h"

#include <rocksdb/db.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <unistd.h>

using namespace heterps;
using namespace heterps::ps;
namespace fs = std::filesystem;

using runtime::fnv1a;
using runtime::splitmix64;

uint32_t ps::virtualShardOf(uint64_t key) {
  return static_cast<uint32_t>(splitmix64(key) % kVirtualShards);
}

uint32_t ps::serverOfName(const std::string &name, uint32_t servers) {
  return static_cast<uint32_t>(fnv1a(name.data(), name.size()) % servers);
}

const char *ps::codeName(Code code) {
  switch (code) {
  case Code::OK:
    return "OK";
  case Code::InvalidArgument:
    return "INVALID_ARGUMENT";
  case Code::NotFound:
    return "NOT_FOUND";
  case Code::AlreadyExists:
    return "ALREADY_EXISTS";
  case Code::ResourceExhausted:
    return "RESOURCE_EXHAUSTED";
  case Code::FailedPrecondition:
    return "FAILED_PRECONDITION";
  case Code::Internal:
    return "INTERNAL";
  case Code::Unavailable:
    return "UNAVAILABLE";
  case Code::PermissionDenied:
    return "PERMISSION_DENIED";
  case Code::Unauthenticated:
    return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

namespace {

template <typename... Args> std::string str(const Args &...args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

double steadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status toOptimizer(const v1::Optimizer &o, const std::string &what,
                   runtime::OptimizerConfig *c) {
  try {
    c->kind = runtime::OptimizerConfig::parseKind(o.kind(), what);
  } catch (const std::exception &e) {
    return Status::error(Code::InvalidArgument, e.what());
  }
  c->learningRate = o.learning_rate();
  c->momentum = o.momentum();
  c->beta1 = o.beta1();
  c->beta2 = o.beta2();
  c->epsilon = o.epsilon();
  c->weightDecay = o.weight_decay();
  if (std::string problem = c->problem(); !problem.empty())
    return Status::error(Code::InvalidArgument, what + ": " + problem);
  return {};
}

// Every row of the checkpoint files, and of memory accounting: the key, the
// step count and dim x (1 + state slots) floats.
constexpr char kRowsMagic[8] = {'H', 'P', 'S', 'R', 'O', 'W', 'S', '\n'};
constexpr char kManifestMagic[8] = {'H', 'P', 'S', 'C', 'K', 'P', 'T', '\n'};
constexpr uint32_t kFileVersion = 1;
// Per row beyond its floats: the key, the step, the last access time and
// its KeyIndex entry (12 bytes at a load between a quarter and a half).
constexpr uint64_t kRowOverhead = 8 + 8 + 8 + 36;

} // namespace

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
  };
  std::vector<std::unique_ptr<Part>> parts; // kVirtualShards, owned only
  std::atomic<uint64_t> pushesApplied{0}, duplicatePushes{0},
      skippedNonFinite{0}, evicted{0};

  uint64_t rowBytes() const { return stride * sizeof(float) + kRowOverhead; }
  uint64_t normalize(uint64_t key) const {
    return config.vocab() ? key % config.vocab() : key;
  }
  void initRow(uint64_t key, float *row) const {
    uint64_t seed = splitmix64(
        config.init().seed() ^
        splitmix64(config.table_id() ^ splitmix64(key ^ 0x726f77ULL)));
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

Shard::Shard(ShardOptions options) : opts(std::move(options)) {
  if (opts.count == 0)
    opts.count = 1;
  if (!opts.clock)
    opts.clock = steadySeconds;
}

Shard::~Shard() = default;

//===----------------------------------------------------------------------===//
// Tables
//===----------------------------------------------------------------------===//

static Status validateConfig(const v1::TableConfig &c) {
  std::string what = str("table ", c.table_id(), " '", c.name(), "'");
  if (c.dim() == 0 || c.dim() > (1u << 16))
    return Status::error(
        Code::InvalidArgument,
        str(what, ": dimension ", c.dim(), " is not in 1..65536"));
  if (!std::isfinite(c.ttl_seconds()) || c.ttl_seconds() < 0)
    return Status::error(Code::InvalidArgument,
                         what + ": ttl_seconds must be finite and >= 0");
  if (c.storage() != v1::STORAGE_MEMORY && c.storage() != v1::STORAGE_ROCKSDB)
    return Status::error(Code::InvalidArgument,
                         str(what, ": unknown storage ", c.storage()));
  runtime::OptimizerConfig o;
  if (Status s = toOptimizer(c.optimizer(), what, &o); !s.ok())
    return s;
  if (!c.init().kind().empty()) {
    float probe[1];
    try {
      std::vector<double> args(c.init().args().begin(), c.init().args().end());
      runtime::initializeValues(probe, 1, {1, 1}, c.init().kind(), args, 1);
    } catch (const std::exception &e) {
      return Status::error(Code::InvalidArgument, what + ": " + e.what());
    }
  }
  return {};
}

static bool sameConfig(const v1::TableConfig &a, const v1::TableConfig &b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

Status Shard::createTable(const v1::TableConfig &config, bool *created) {
  if (Status s = validateConfig(config); !s.ok())
    return s;
  std::unique_lock<std::shared_mutex> lock(tablesMutex);
  if (auto it = tables.find(config.table_id()); it != tables.end()) {
    if (!sameConfig(it->second->config, config))
      return Status::error(Code::AlreadyExists,
                           str("table ", config.table_id(), " exists as '",
                               it->second->config.name(),
                               "' with another configuration: ",
                               it->second->config.ShortDebugString(),
                               "; asked for ", config.ShortDebugString()));
    *created = false;
    return {};
  }
  auto t = std::make_unique<Table>();
  t->config = config;
  toOptimizer(config.optimizer(), "", &t->optimizer);
  t->dim = config.dim();
  t->slots = t->optimizer.stateSlots();
  t->stride = static_cast<size_t>(t->dim) * (1 + t->slots);
  t->fanShape = {config.vocab() ? static_cast<int64_t>(config.vocab())
                                : static_cast<int64_t>(t->dim),
                 static_cast<int64_t>(t->dim)};
  t->initArgs.assign(config.init().args().begin(), config.init().args().end());
  if (config.storage() == v1::STORAGE_ROCKSDB) {
    if (Status s = openDisk(); !s.ok())
      return s;
    t->onDisk = true;
    uint32_t owned =
        (kVirtualShards + opts.count - 1 - opts.index) / opts.count;
    t->cachePerPart = std::max<uint64_t>(1, config.cache_rows() / owned);
    t->generation = disk->nextGeneration++;
  }
  t->parts.resize(kVirtualShards);
  for (uint32_t v = 0; v < kVirtualShards; ++v)
    if (serverOfShard(v, opts.count) == opts.index)
      t->parts[v] = std::make_unique<Table::Part>();
  tables[config.table_id()] = std::move(t);
  *created = true;
  return {};
}

Status Shard::findTable(uint32_t id, Table **table) {
  auto it = tables.find(id);
  if (it == tables.end())
    return Status::error(Code::NotFound, str("no table ", id, " on PS server ",
                                             opts.index, " of ", opts.count));
  *table = it->second.get();
  return {};
}

Status Shard::tableDim(uint32_t table, uint32_t *dim) {
  std::shared_lock<std::shared_mutex> lock(tablesMutex);
  Table *t;
  if (Status s = findTable(table, &t); !s.ok())
    return s;
  *dim = t->dim;
  return {};
}

Status Shard::describeTable(uint32_t table, v1::TableStatus *status) {
  std::shared_lock<std::shared_mutex> lock(tablesMutex);
  Table *t;
  if (Status s = findTable(table, &t); !s.ok())
    return s;
  *status->mutable_config() = t->config;
  uint64_t rows = 0, pending = 0, onDisk = 0;
  for (auto &p : t->parts)
    if (p) {
      std::lock_guard<std::mutex> l(p->mutex);
      rows += p->index.size();
      pending += p->pending.size();
      onDisk += p->diskRows;
    }
  status->set_rows(rows + onDisk);
  status->set_disk_rows(onDisk);
  status->set_pending_keys(pending);
  status->set_memory_bytes(rows * t->rowBytes());
  status->set_pushes_applied(t->pushesApplied);
  status->set_duplicate_pushes(t->duplicatePushes);
  status->set_skipped_non_finite(t->skippedNonFinite);
  status->set_evicted_rows(t->evicted);
  return {};
}

/// The keys of a request grouped by virtual shard: `order` lists request
/// positions shard by shard, `begin[v]..begin[v+1]` those of shard v.
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

Status Shard::checkRequest(uint32_t table, const uint64_t *keys, size_t n,
                           Table **t, Grouping **grouping) {
  if (Status s = findTable(table, t); !s.ok())
    return s;
  if (n > opts.maxKeysPerRequest)
    return Status::error(Code::ResourceExhausted,
                         str("table ", table, ": ", n,
                             " keys in one request, the limit is ",
                             opts.maxKeysPerRequest));
  thread_local Grouping g;
  Table *tt = *t;
  g.build(keys, n, [tt](uint64_t k) { return tt->normalize(k); });
  for (uint32_t v = 0; v < kVirtualShards; ++v)
    if (g.begin[v] != g.begin[v + 1] && !tt->parts[v]) {
      uint64_t key = keys[g.order[g.begin[v]]];
      return Status::error(
          Code::FailedPrecondition,
          str("table ", table, ": key ", key, " belongs to PS server ",
              serverOfShard(v, opts.count), " of ", opts.count,
              ", not to this one (", opts.index,
              "); is the client's server list in shard order?"));
    }
  *grouping = &g;
  return {};
}

//===----------------------------------------------------------------------===//
// Rows: memory, and the RocksDB tier
//===----------------------------------------------------------------------===//

namespace {
void putBigEndian(std::string &s, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
/// Table, generation and virtual shard first, so a shard's rows are one
/// range, and a table's old generation one DeleteRange.
std::string diskPrefix(uint32_t table, uint32_t generation,
                       int64_t virtualShard = -1) {
  std::string s;
  putBigEndian(s, table, 4);
  putBigEndian(s, generation, 4);
  if (virtualShard >= 0)
    putBigEndian(s, static_cast<uint64_t>(virtualShard), 4);
  return s;
}
std::string diskKey(uint32_t table, uint32_t generation, uint32_t virtualShard,
                    uint64_t key) {
  std::string s = diskPrefix(table, generation, virtualShard);
  putBigEndian(s, key, 8);
  return s;
}
uint64_t keyOfDiskKey(const rocksdb::Slice &k) {
  uint64_t v = 0;
  for (size_t i = 12; i < 20; ++i)
    v = (v << 8) | static_cast<unsigned char>(k[i]);
  return v;
}
} // namespace

Status Shard::openDisk() {
  if (disk)
    return {};
  if (opts.rocksdbDir.empty())
    return Status::error(Code::FailedPrecondition,
                         str("PS server ", opts.index,
                             " has no --rocksdb-dir for STORAGE_ROCKSDB "
                             "tables"));
  auto d = std::make_shared<Disk>();
  std::string path = opts.rocksdbDir + "/shard-" + std::to_string(opts.index) +
                     "-of-" + std::to_string(opts.count);
  rocksdb::Options o;
  o.create_if_missing = true;
  o.IncreaseParallelism(2);
  rocksdb::DestroyDB(path, o);
  std::error_code ec;
  fs::create_directories(opts.rocksdbDir, ec);
  rocksdb::DB *db = nullptr;
  rocksdb::Status st = rocksdb::DB::Open(o, path, &db);
  if (!st.ok())
    return Status::error(Code::Internal, "cannot open RocksDB '" + path +
                                             "': " + st.ToString());
  d->db.reset(db);
  disk = std::move(d);
  return {};
}

/// A free slot of part `v`, growing it, or for a RocksDB table whose cache
/// is full, moving a row that the current push does not use to RocksDB
/// (`moved`: the rows in memory did not grow).
Status Shard::allocateSlot(Table &t, uint32_t v, uint32_t *slot, bool *moved) {
  Table::Part &p = *t.parts[v];
  *moved = false;
  if (!p.freeSlots.empty()) {
    *slot = p.freeSlots.back();
    p.freeSlots.pop_back();
    return {};
  }
  if (t.onDisk && p.index.size() >= t.cachePerPart && !p.keys.empty()) {
    for (size_t tries = 0; tries < p.keys.size(); ++tries) {
      uint32_t victim = p.hand++ % static_cast<uint32_t>(p.keys.size());
      if (victim < p.merged.size() && p.merged[victim] >= 0)
        continue; // holds a gradient of the push being applied
      std::string value(reinterpret_cast<const char *>(&p.steps[victim]), 8);
      value.append(
          reinterpret_cast<const char *>(p.data.data() + victim * t.stride),
          t.stride * sizeof(float));
      rocksdb::Status st = disk->db->Put(
          disk->write,
          diskKey(t.config.table_id(), t.generation, v, p.keys[victim]), value);
      if (!st.ok())
        return Status::error(Code::Internal,
                             "RocksDB write failed: " + st.ToString());
      p.index.erase(p.keys[victim]);
      ++p.diskRows;
      *slot = victim;
      *moved = true;
      return {};
    }
  }
  *slot = static_cast<uint32_t>(p.keys.size());
  p.keys.push_back(0);
  p.steps.push_back(0);
  p.touched.push_back(0);
  p.data.resize(p.data.size() + t.stride);
  return {};
}

Status Shard::rowSlot(Table &t, uint32_t v, uint64_t key, bool countAdmission,
                      int32_t *slot, uint64_t *created, bool assigning) {
  Table::Part &p = *t.parts[v];
  if (uint32_t found = p.index.find(key); found != KeyIndex::kNone) {
    *slot = static_cast<int32_t>(found);
    return {};
  }
  std::string value;
  if (t.onDisk && p.diskRows &&
      disk->db
          ->Get(disk->read, diskKey(t.config.table_id(), t.generation, v, key),
                &value)
          .ok()) {
    if (value.size() != 8 + t.stride * sizeof(float))
      return Status::error(Code::Internal, "a RocksDB row of the wrong size");
    uint32_t s;
    bool moved;
    if (Status st = allocateSlot(t, v, &s, &moved); !st.ok())
      return st;
    std::memcpy(&p.steps[s], value.data(), 8);
    std::memcpy(p.data.data() + s * t.stride, value.data() + 8,
                t.stride * sizeof(float));
    p.keys[s] = key;
    disk->db->Delete(disk->write,
                     diskKey(t.config.table_id(), t.generation, v, key));
    --p.diskRows;
    p.index.insert(key, s);
    if (!moved)
      ++*created;
    *slot = static_cast<int32_t>(s);
    return {};
  }
  if (countAdmission && ++p.pending[key] < t.config.admit_min_count()) {
    *slot = -1;
    return {};
  }
  bool cacheFull = t.onDisk && p.index.size() >= t.cachePerPart;
  if (opts.maxMemoryBytes && !cacheFull &&
      memory + (*created + 1) * t.rowBytes() > opts.maxMemoryBytes)
    return Status::error(Code::ResourceExhausted,
                         str("table ", t.config.table_id(),
                             ": a new row would take PS server ", opts.index,
                             " past its memory limit of ", opts.maxMemoryBytes,
                             " bytes"));
  p.pending.erase(key);
  uint32_t s;
  bool moved;
  if (Status st = allocateSlot(t, v, &s, &moved); !st.ok())
    return st;
  p.keys[s] = key;
  p.steps[s] = 0;
  // A row that an assign creates gets its value from it: drawing the
  // initializer's values first was a fifth of loading a 10M-row table.
  if (assigning)
    std::fill_n(p.data.data() + s * t.stride, t.stride, 0.0f);
  else
    t.initRow(key, p.data.data() + s * t.stride);
  p.index.insert(key, s);
  if (!moved)
    ++*created;
  *slot = static_cast<int32_t>(s);
  return {};
}

Status Shard::pull(uint32_t table, const uint64_t *keys, size_t n,
                   float *rows) {
  std::shared_lock<std::shared_mutex> lock(tablesMutex);
  Table *t;
  Grouping *grouping;
  if (Status s = checkRequest(table, keys, n, &t, &grouping); !s.ok())
    return s;
  const Grouping &g = *grouping;
  const uint32_t dim = t->dim;
  const bool ttl = t->config.ttl_seconds() > 0;
  const uint32_t admit = t->config.admit_min_count();
  double now = ttl ? opts.clock() : 0;
  uint64_t created = 0;
  Status result;
  for (uint32_t v = 0; v < kVirtualShards && result.ok(); ++v) {
    if (g.begin[v] == g.begin[v + 1])
      continue;
    Table::Part &p = *t->parts[v];
    std::lock_guard<std::mutex> l(p.mutex);
    for (uint32_t j = g.begin[v]; j < g.begin[v + 1]; ++j) {
      uint32_t i = g.order[j];
      uint64_t key = t->normalize(keys[i]);
      float *out = rows + static_cast<size_t>(i) * dim;
      int32_t slot;
      result = rowSlot(*t, v, key, admit > 1, &slot, &created);
      if (!result.ok())
        break;
      if (slot < 0) {
        std::fill(out, out + dim, 0.0f);
        continue;
      }
      if (ttl)
        p.touched[slot] = now;
      std::memcpy(out, p.data.data() + slot * t->stride, dim * sizeof(float));
    }
  }
  memory += created * t->rowBytes();
  return result;
}

Shard::ClientSeq &Shard::clientSeq(uint64_t client) {
  std::lock_guard<std::mutex> lock(clientsMutex);
  std::unique_ptr<ClientSeq> &c = clients[client];
  if (!c)
    c = std::make_unique<ClientSeq>();
  return *c;
}

/// A known client's sequence numbers grow one request at a time (retries
/// repeat one); a request that jumps far ahead is refused, so that one
/// forged sequence number cannot make the client's later pushes look like
/// repeats. A client the server has not seen (a restarted server) may
/// start anywhere.
static Status checkSequence(uint64_t client, uint64_t last, uint64_t seq) {
  constexpr uint64_t kMaxStep = uint64_t(1) << 20;
  if (last && seq > last && seq - last > kMaxStep)
    return Status::error(Code::InvalidArgument,
                         str("client ", client, ": sequence number ", seq,
                             " jumps ", seq - last, " past its last, ", last,
                             " (at most ", kMaxStep, ")"));
  return {};
}

Status Shard::push(uint32_t table, const uint64_t *keys, size_t n,
                   const float *values, uint64_t client, uint64_t seq,
                   bool assign, v1::PushResponse *response) {
  std::shared_lock<std::shared_mutex> lock(tablesMutex);
  Table *t;
  Grouping *g;
  if (Status s = checkRequest(table, keys, n, &t, &g); !s.ok())
    return s;
  if (client == 0)
    return applyPush(*t, *g, keys, n, values, assign, response);
  // The client's lock is held while the push is applied, so a retry that
  // arrives while the original is still running waits for it and is then
  // recognised as a repeat.
  ClientSeq &c = clientSeq(client);
  std::lock_guard<std::mutex> l(c.mutex);
  if (seq <= c.last) {
    response->set_duplicate(true);
    ++t->duplicatePushes;
    return {};
  }
  if (Status s = checkSequence(client, c.last, seq); !s.ok())
    return s;
  Status s = applyPush(*t, *g, keys, n, values, assign, response);
  if (s.ok())
    c.last = seq;
  return s;
}

Status Shard::pushMany(const std::vector<PushPart> &parts, uint64_t client,
                       uint64_t seq, v1::PushResponse *response) {
  std::shared_lock<std::shared_mutex> lock(tablesMutex);
  Table *t;
  Grouping *g;
  // Every part is checked before any is applied.
  for (const PushPart &p : parts)
    if (Status s = checkRequest(p.table, p.keys, p.n, &t, &g); !s.ok())
      return s;
  std::unique_lock<std::mutex> sequence;
  ClientSeq *c = nullptr;
  if (client) {
    c = &clientSeq(client);
    sequence = std::unique_lock<std::mutex>(c->mutex);
    if (seq <= c->last) {
      response->set_duplicate(true);
      for (const PushPart &p : parts)
        if (checkRequest(p.table, p.keys, p.n, &t, &g).ok())
          ++t->duplicatePushes;
      return {};
    }
    if (Status s = checkSequence(client, c->last, seq); !s.ok())
      return s;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const PushPart &p = parts[i];
    Status s = checkRequest(p.table, p.keys, p.n, &t, &g);
    if (s.ok())
      s = applyPush(*t, *g, p.keys, p.n, p.values, p.assign, response);
    if (!s.ok()) {
      // Parts before this one are applied: a retry of the request must
      // not apply them again.
      if (c && i > 0)
        c->last = seq;
      if (i > 0)
        s.message += str(" (the push's first ", i, " of ", parts.size(),
                         " tables were applied)");
      return s;
    }
  }
  if (c)
    c->last = seq;
  return {};
}

Status Shard::applyPush(Table &t, const Grouping &g, const uint64_t *keys,
                        size_t n, const float *values, bool assign,
                        v1::PushResponse *response) {
  const uint32_t dim = t.dim;
  const bool skipNonFinite =
      t.config.non_finite() == v1::NON_FINITE_SKIP && !assign;
  if (!skipNonFinite)
    for (size_t i = 0; i < n * dim; ++i)
      if (!std::isfinite(values[i]))
        return Status::error(
            Code::InvalidArgument,
            str("table ", t.config.table_id(), " '", t.config.name(),
                "': ", assign ? "value" : "gradient", " ", values[i],
                " for key ", keys[i / dim], " (element ", i % dim,
                "); the push was rejected and changed nothing"));
  const bool ttl = t.config.ttl_seconds() > 0;
  const uint32_t admit = t.config.admit_min_count();
  double now = ttl ? opts.clock() : 0;
  uint64_t created = 0, skipped = 0, notAdmitted = 0;
  thread_local std::vector<float> merged;
  thread_local std::vector<uint32_t> mergedSlots;
  thread_local std::vector<const float *> sources;
  Status result;
  for (uint32_t v = 0; v < kVirtualShards && result.ok(); ++v) {
    if (g.begin[v] == g.begin[v + 1])
      continue;
    Table::Part &p = *t.parts[v];
    std::lock_guard<std::mutex> l(p.mutex);
    mergedSlots.clear();
    sources.clear();
    merged.resize(static_cast<size_t>(g.begin[v + 1] - g.begin[v]) * dim);
    for (uint32_t j = g.begin[v]; j < g.begin[v + 1]; ++j) {
      uint32_t i = g.order[j];
      const float *gi = values + static_cast<size_t>(i) * dim;
      if (skipNonFinite && !std::all_of(gi, gi + dim, [](float x) {
            return std::isfinite(x);
          })) {
        ++skipped;
        continue;
      }
      uint64_t key = t.normalize(keys[i]);
      int32_t found;
      result =
          rowSlot(t, v, key, !assign && admit > 1, &found, &created, assign);
      if (!result.ok())
        break;
      if (found < 0) {
        ++notAdmitted;
        continue;
      }
      uint32_t slot = static_cast<uint32_t>(found);
      if (ttl)
        p.touched[slot] = now;
      if (p.merged.size() <= slot)
        p.merged.resize(p.keys.size(), -1);
      // A key's gradient is read where it is, and copied only when the
      // key repeats (the client has usually merged repeats already).
      int32_t &m = p.merged[slot];
      if (m < 0) {
        m = static_cast<int32_t>(mergedSlots.size());
        mergedSlots.push_back(slot);
        sources.push_back(gi);
        continue;
      }
      float *dst = merged.data() + static_cast<size_t>(m) * dim;
      if (sources[m] != dst) {
        std::copy(sources[m], sources[m] + dim, dst);
        sources[m] = dst;
      }
      if (assign) {
        // The last value of a key wins, as in a sequence of writes.
        std::copy(gi, gi + dim, dst);
      } else {
        for (uint32_t k = 0; k < dim; ++k)
          dst[k] += gi[k];
      }
    }
    for (size_t m = 0; m < mergedSlots.size(); ++m) {
      uint32_t slot = mergedSlots[m];
      p.merged[slot] = -1;
      if (!result.ok())
        continue;
      float *row = p.data.data() + slot * t.stride;
      const float *gm = sources[m];
      if (assign) {
        std::copy(gm, gm + dim, row);
        std::fill(row + dim, row + t.stride, 0.0f);
        p.steps[slot] = 0;
      } else {
        runtime::applyUpdate(t.optimizer, row, gm,
                             t.slots ? row + dim : nullptr, dim,
                             ++p.steps[slot]);
      }
    }
  }
  memory += created * t.rowBytes();
  t.skippedNonFinite += skipped;
  if (result.ok())
    ++t.pushesApplied;
  response->set_skipped_non_finite(skipped);
  response->set_not_admitted(notAdmitted);
  return result;
}

uint64_t Shard::evictExpired() {
  std::lock_guard<std::mutex> m(maintenanceMutex);
  std::shared_lock<std::shared_mutex> lock(tablesMutex);
  double now = opts.clock();
  uint64_t total = 0;
  for (auto &[id, t] : tables) {
    double ttl = t->config.ttl_seconds();
    if (ttl <= 0)
      continue;
    uint64_t dropped = 0;
    for (auto &p : t->parts) {
      if (!p)
        continue;
      std::lock_guard<std::mutex> l(p->mutex);
      std::vector<uint64_t> expired;
      p->index.forEach([&](uint64_t key, uint32_t slot) {
        if (now - p->touched[slot] > ttl) {
          p->freeSlots.push_back(slot);
          expired.push_back(key);
        }
      });
      for (uint64_t key : expired)
        p->index.erase(key);
      dropped += expired.size();
    }
    t->evicted += dropped;
    memory -= dropped * t->rowBytes();
    total += dropped;
  }
  return total;
}

//===----------------------------------------------------------------------===//
// Dense tensors
//===----------------------------------------------------------------------===//

Status Shard::createDense(const v1::DenseTensor &tensor,
                          const v1::Optimizer &optimizer, bool *created) {
  const std::string &name = tensor.name();
  if (serverOfName(name, opts.count) != opts.index)
    return Status::error(Code::FailedPrecondition,
                         str("dense tensor '", name, "' belongs to PS server ",
                             serverOfName(name, opts.count), " of ",
                             opts.count));
  std::optional<int64_t> elements = checkedProduct(tensor.shape());
  if (!elements || *elements > (int64_t(1) << 36))
    return Status::error(Code::InvalidArgument,
                         str("dense tensor '", name,
                             "': its dimensions are negative or make more "
                             "than 2^36 elements"));
  size_t n = static_cast<size_t>(*elements);
  if (tensor.values().size() != static_cast<size_t>(n) * sizeof(float))
    return Status::error(Code::InvalidArgument,
                         str("dense tensor '", name, "': ", n,
                             " elements need ", n * 4, " bytes of values, got ",
                             tensor.values().size()));
  auto d = std::make_shared<Dense>();
  if (Status s =
          toOptimizer(optimizer, "dense tensor '" + name + "'", &d->optimizer);
      !s.ok())
    return s;
  d->optimizerProto = optimizer;
  d->shape.assign(tensor.shape().begin(), tensor.shape().end());
  d->value.resize(n);
  if (n)
    std::memcpy(d->value.data(), tensor.values().data(), n * sizeof(float));
  d->state.assign(n * d->optimizer.stateSlots(), 0.0f);
  std::lock_guard<std::mutex> lock(denseMutex);
  if (auto it = dense.find(name); it != dense.end()) {
    if (it->second->shape != d->shape)
      return Status::error(
          Code::AlreadyExists,
          str("dense tensor '", name, "' exists with another shape"));
    *created = false;
    return {};
  }
  dense[name] = std::move(d);
  *created = true;
  return {};
}

Status Shard::findDense(const std::string &name, std::shared_ptr<Dense> *d) {
  std::lock_guard<std::mutex> lock(denseMutex);
  auto it = dense.find(name);
  if (it == dense.end())
    return Status::error(Code::NotFound, str("no dense tensor '", name,
                                             "' on PS server ", opts.index));
  *d = it->second;
  return {};
}

Status Shard::pullDense(const std::string &name, v1::DenseTensor *tensor) {
  std::shared_ptr<Dense> d;
  if (Status s = findDense(name, &d); !s.ok())
    return s;
  std::lock_guard<std::mutex> l(d->mutex);
  tensor->set_name(name);
  for (int64_t s : d->shape)
    tensor->add_shape(s);
  tensor->set_values(d->value.data(), d->value.size() * sizeof(float));
  return {};
}

Status Shard::pushDense(const std::string &name, const float *grads, size_t n,
                        uint64_t client, uint64_t seq,
                        v1::PushResponse *response) {
  std::shared_ptr<Dense> d;
  if (Status s = findDense(name, &d); !s.ok())
    return s;
  if (n != d->value.size())
    return Status::error(Code::InvalidArgument,
                         str("dense tensor '", name, "': gradient of ", n,
                             " elements, the tensor has ", d->value.size()));
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(grads[i]))
      return Status::error(Code::InvalidArgument,
                           str("dense tensor '", name, "': gradient ", grads[i],
                               " at element ", i, "; rejected"));
  std::unique_lock<std::mutex> cl;
  if (client) {
    ClientSeq &c = clientSeq(client);
    cl = std::unique_lock<std::mutex>(c.mutex);
    if (seq <= c.last) {
      response->set_duplicate(true);
      return {};
    }
    if (Status s = checkSequence(client, c.last, seq); !s.ok())
      return s;
    c.last = seq;
  }
  std::lock_guard<std::mutex> l(d->mutex);
  runtime::applyUpdate(d->optimizer, d->value.data(), grads,
                       d->state.empty() ? nullptr : d->state.data(), n,
                       ++d->steps);
  return {};
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

/// Whether `name` is usable as one file or directory name: not empty, not
/// "." or "..", no "/", NUL or control characters.
static bool plainFileName(const std::string &name) {
  if (name.empty() || name == "." || name == "..")
    return false;
  for (unsigned char c : name)
    if (c == '/' || c < 0x20 || c == 0x7f)
      return false;
  return true;
}

Status Shard::resolvePath(const std::string &name, std::string *path) {
  if (name.empty())
    return Status::error(Code::InvalidArgument, "empty checkpoint name");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      return Status::error(Code::InvalidArgument,
                           "checkpoint name '" + name.substr(0, 64) +
                               "' contains a control character");
  if (name == "latest" || name == "auto")
    return Status::error(Code::InvalidArgument,
                         "'" + name +
                             "' names the newest checkpoint on "
                             "restore; a checkpoint cannot be "
                             "called that");
  fs::path p(name);
  if (p.is_absolute()) {
    if (!opts.absoluteCheckpointPaths)
      return Status::error(Code::InvalidArgument,
                           "checkpoint name '" + name +
                               "' is absolute; names are directories under "
                               "the server's --checkpoint-dir");
    *path = name;
    return {};
  }
  for (const fs::path &part : p)
    if (part == ".." || part == ".")
      return Status::error(Code::InvalidArgument, "checkpoint name '" + name +
                                                      "' contains '" +
                                                      part.string() + "'");
  if (opts.checkpointDir.empty())
    return Status::error(Code::FailedPrecondition,
                         "PS server " + std::to_string(opts.index) +
                             " has no --checkpoint-dir");
  // A symbolic link under the checkpoint directory could lead out of it.
  fs::path at(opts.checkpointDir);
  for (const fs::path &part : p) {
    at /= part;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(at, ec)))
      return Status::error(Code::InvalidArgument,
                           "checkpoint name '" + name + "': '" + at.string() +
                               "' is a symbolic link, which the server does "
                               "not follow");
  }
  *path = (fs::path(opts.checkpointDir) / p).string();
  return {};
}

namespace {

/// heterps::writeFileAtomically, as a Status.
Status writeAtomically(const std::string &path, const std::string &data) {
  std::string error = heterps::writeFileAtomically(path, data);
  if (!error.empty())
    return Status::error(Code::Internal, error);
  return {};
}

template <typename T> void append(std::string &s, const T &v) {
  s.append(reinterpret_cast<const char *>(&v), sizeof(T));
}

std::string manifestName(uint32_t index, uint32_t count) {
  return "MANIFEST." + std::to_string(index) + "-of-" + std::to_string(count);
}

Status readFile(const std::string &path, std::string *data) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(Code::NotFound, "cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  *data = s.str();
  return {};
}

/// Bytes [offset, offset + n) of a file.
Status readFileRange(const std::string &path, uint64_t offset, uint64_t n,
                     std::string *data) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(Code::NotFound, "cannot read '" + path + "'");
  in.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(in.tellg());
  if (offset > size || n > size - offset)
    return Status::error(Code::FailedPrecondition,
                         str("checkpoint file '", path, "' has ", size,
                             " bytes, the manifest needs ", offset + n));
  data->resize(n);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(data->data(), static_cast<std::streamsize>(n));
  if (!in)
    return Status::error(Code::Internal, "cannot read '" + path + "'");
  return {};
}

Status readManifest(const std::string &path, v1::ShardManifest *m) {
  std::string data;
  if (Status s = readFile(path, &data); !s.ok())
    return s;
  if (data.size() < 12 || std::memcmp(data.data(), kManifestMagic, 8) != 0)
    return Status::error(Code::InvalidArgument,
                         "'" + path + "' is not a PS checkpoint manifest");
  uint32_t version;
  std::memcpy(&version, data.data() + 8, 4);
  if (version != kFileVersion)
    return Status::error(Code::InvalidArgument,
                         str("'", path, "' has format version ", version,
                             ", this server reads ", kFileVersion));
  if (!m->ParseFromArray(data.data() + 12, static_cast<int>(data.size() - 12)))
    return Status::error(Code::InvalidArgument,
                         "'" + path + "' is truncated or corrupt");
  return {};
}

/// The manifests of a complete checkpoint in `dir`: every server of one
/// count wrote its own, all at one step.
Status completeManifests(const std::string &dir,
                         std::vector<v1::ShardManifest> *out) {
  std::error_code ec;
  std::map<uint32_t, std::map<uint32_t, v1::ShardManifest>> byCount;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    std::string f = e.path().filename().string();
    if (f.rfind("MANIFEST.", 0) != 0 || isAtomicFileTemporary(f) ||
        (f.size() >= 4 && f.substr(f.size() - 4) == ".tmp"))
      continue;
    v1::ShardManifest m;
    if (Status s = readManifest(e.path().string(), &m); !s.ok())
      return s;
    byCount[m.shard_count()][m.shard_index()] = m;
  }
  if (ec)
    return Status::error(Code::NotFound,
                         "no checkpoint '" + dir + "': " + ec.message());
  for (auto &[count, shards] : byCount) {
    if (shards.size() != count)
      continue;
    int64_t step = shards.begin()->second.step();
    bool same = std::all_of(shards.begin(), shards.end(),
                            [&](auto &s) { return s.second.step() == step; });
    if (!same)
      return Status::error(Code::FailedPrecondition,
                           "checkpoint '" + dir +
                               "' has manifests of different steps");
    for (auto &[i, m] : shards)
      out->push_back(m);
    return {};
  }
  return Status::error(Code::FailedPrecondition,
                       "checkpoint '" + dir +
                           "' is incomplete: not every server wrote its "
                           "manifest (was the checkpoint interrupted?)");
}

} // namespace

Status Shard::checkpoint(const std::string &name, int64_t step,
                         v1::CheckpointResponse *response) {
  std::string dir;
  if (Status s = resolvePath(name, &dir); !s.ok())
    return s;
  if (Status s = writeCheckpoint(dir, step, response); !s.ok())
    return s;
  // Old checkpoints go after the locks are released: deleting them may
  // take long on network storage, and requests need not wait for it.
  pruneCheckpoints(dir);
  return {};
}

Status Shard::writeCheckpoint(const std::string &dir, int64_t step,
                              v1::CheckpointResponse *response) {
  std::lock_guard<std::mutex> m(maintenanceMutex);
  // The writer lock stops every request, so the files of all tables are
  // one consistent state.
  std::unique_lock<std::shared_mutex> lock(tablesMutex);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Status::error(Code::Internal,
                         "cannot create checkpoint directory '" + dir +
                             "': " + ec.message());
  v1::ShardManifest manifest;
  manifest.set_protocol_version(kProtocolVersion);
  manifest.set_step(step);
  manifest.set_shard_index(opts.index);
  manifest.set_shard_count(opts.count);
  manifest.set_virtual_shards(kVirtualShards);
  uint64_t bytes = 0;
  bool crash =
      opts.crashInCheckpoint && ++checkpointsStarted == opts.crashInCheckpoint;
  // One file per table: the blocks of its virtual shards one after the
  // other, each with its own header and checksum, so a restore onto another
  // server count reads only the blocks it owns, and a checkpoint costs one
  // fsync per table rather than one per virtual shard.
  for (auto &[id, t] : tables) {
    *manifest.add_tables() = t->config;
    std::string file = "table-" + std::to_string(id) + ".shard-" +
                       std::to_string(opts.index) + "-of-" +
                       std::to_string(opts.count) + ".rows";
    std::string data;
    for (uint32_t v = 0; v < kVirtualShards; ++v) {
      if (!t->parts[v])
        continue;
      Table::Part &p = *t->parts[v];
      size_t offset = data.size();
      data.append(kRowsMagic, 8);
      append(data, kFileVersion);
      append(data, id);
      append(data, v);
      append(data, t->dim);
      append(data, static_cast<uint32_t>(t->slots));
      append(data, static_cast<uint64_t>(p.index.size()));
      size_t stride = t->stride;
      p.index.forEach([&](uint64_t key, uint32_t slot) {
        append(data, key);
        append(data, p.steps[slot]);
        data.append(
            reinterpret_cast<const char *>(p.data.data() + slot * stride),
            stride * sizeof(float));
      });
      if (t->onDisk && p.diskRows) {
        // The rows in RocksDB follow those in memory: same layout, the
        // stored value being the step and the floats.
        std::string prefix = diskPrefix(id, t->generation, v);
        std::unique_ptr<rocksdb::Iterator> it(
            disk->db->NewIterator(disk->read));
        uint64_t count = p.index.size();
        for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
             it->Next(), ++count) {
          append(data, keyOfDiskKey(it->key()));
          data.append(it->value().data(), it->value().size());
        }
        if (!it->status().ok())
          return Status::error(Code::Internal, "RocksDB read failed: " +
                                                   it->status().ToString());
        std::memcpy(&data[offset + 8 + 5 * sizeof(uint32_t)], &count,
                    sizeof(count));
      }
      v1::ShardManifest::File *f = manifest.add_files();
      f->set_name(file);
      f->set_table_id(id);
      f->set_virtual_shard(v);
      f->set_offset(offset);
      f->set_bytes(data.size() - offset);
      f->set_fnv1a(fnv1a(data.data() + offset, data.size() - offset));
    }
    if (Status s = writeAtomically(dir + "/" + file, data); !s.ok())
      return s;
    bytes += data.size();
    if (crash)
      ::raise(SIGKILL);
  }
  {
    std::lock_guard<std::mutex> l(denseMutex);
    for (auto &[dname, d] : dense) {
      std::lock_guard<std::mutex> dl(d->mutex);
      v1::DenseTensor *value = manifest.add_dense();
      value->set_name(dname);
      for (int64_t s : d->shape)
        value->add_shape(s);
      value->set_values(d->value.data(), d->value.size() * sizeof(float));
      // The state rides along as a second tensor: name#state, its step
      // count as the only dimension.
      v1::DenseTensor *state = manifest.add_dense();
      state->set_name(dname + "#state");
      state->add_shape(d->steps);
      state->set_values(d->state.data(), d->state.size() * sizeof(float));
      *manifest.add_dense_optimizers() = d->optimizerProto;
    }
  }
  std::string data(kManifestMagic, 8);
  append(data, kFileVersion);
  data += manifest.SerializeAsString();
  if (Status s = writeAtomically(
          dir + "/" + manifestName(opts.index, opts.count), data);
      !s.ok())
    return s;
  response->set_bytes(bytes + data.size());
  response->set_files(static_cast<uint32_t>(manifest.files_size() + 1));
  return {};
}

void Shard::pruneCheckpoints(const std::string &written) {
  if (opts.keepCheckpoints <= 0 || opts.checkpointDir.empty())
    return;
  // Only complete checkpoints count, so a checkpoint other servers are still
  // writing never makes an older complete one go.
  // Newest first: the one just written, then by when it was written (a
  // resumed or new run's checkpoints may have lower steps than an old
  // run's).
  struct Entry {
    bool justWritten;
    int64_t step;
    fs::file_time_type time;
    fs::path path;
  };
  std::vector<Entry> complete;
  std::error_code ec;
  for (const fs::directory_entry &e :
       fs::directory_iterator(opts.checkpointDir, ec)) {
    std::vector<v1::ShardManifest> ms;
    if (e.is_symlink() || !e.is_directory() ||
        !completeManifests(e.path().string(), &ms).ok())
      continue;
    std::error_code same;
    complete.push_back({fs::equivalent(e.path(), written, same), ms[0].step(),
                        fs::last_write_time(e.path(), same), e.path()});
  }
  std::sort(complete.begin(), complete.end(),
            [](const Entry &a, const Entry &b) {
              return std::tie(a.justWritten, a.time, a.step) >
                     std::tie(b.justWritten, b.time, b.step);
            });
  for (size_t i = static_cast<size_t>(opts.keepCheckpoints);
       i < complete.size(); ++i)
    fs::remove_all(complete[i].path, ec);
}

Status Shard::restore(const std::string &name, v1::RestoreResponse *response) {
  std::string dir;
  if (name == "latest") {
    // The newest complete checkpoint under the checkpoint directory.
    if (opts.checkpointDir.empty())
      return Status::error(Code::FailedPrecondition,
                           "restore 'latest' needs a --checkpoint-dir");
    std::error_code ec;
    int64_t best = -1;
    for (const fs::directory_entry &e :
         fs::directory_iterator(opts.checkpointDir, ec)) {
      std::vector<v1::ShardManifest> ms;
      if (!e.is_directory() || !completeManifests(e.path().string(), &ms).ok())
        continue;
      if (ms[0].step() > best) {
        best = ms[0].step();
        dir = e.path().string();
      }
    }
    if (best < 0)
      return Status::error(Code::NotFound, "no complete checkpoint under '" +
                                               opts.checkpointDir + "'");
  } else if (Status s = resolvePath(name, &dir); !s.ok()) {
    return s;
  }
  std::vector<v1::ShardManifest> manifests;
  if (Status s = completeManifests(dir, &manifests); !s.ok())
    return s;
  for (const v1::ShardManifest &m : manifests)
    if (m.virtual_shards() != kVirtualShards)
      return Status::error(
          Code::FailedPrecondition,
          str("checkpoint '", dir, "' has ", m.virtual_shards(),
              " virtual shards, this server ", kVirtualShards));
  // Build the new state aside, then swap it in: a bad file leaves the
  // tables as they were.
  Shard fresh(opts);
  fresh.disk = disk;
  // RocksDB rows of the new tables go under new generations; they are
  // dropped when the restore fails, and the old ones when it succeeds.
  struct DropGenerations {
    Shard &shard;
    bool keep = false;
    ~DropGenerations() {
      if (!keep)
        shard.dropDiskRows();
    }
  } dropFresh{fresh};
  for (const v1::TableConfig &c : manifests[0].tables()) {
    bool created;
    if (Status s = fresh.createTable(c, &created); !s.ok())
      return s;
  }
  uint64_t rows = 0;
  for (const v1::ShardManifest &m : manifests) {
    for (const v1::ShardManifest::File &f : m.files()) {
      if (f.virtual_shard() >= kVirtualShards)
        return Status::error(Code::FailedPrecondition,
                             str("checkpoint '", dir,
                                 "': its manifest names "
                                 "virtual shard ",
                                 f.virtual_shard(), " of ", kVirtualShards));
      if (serverOfShard(f.virtual_shard(), opts.count) != opts.index)
        continue;
      if (!plainFileName(f.name()))
        return Status::error(Code::FailedPrecondition,
                             "checkpoint '" + dir +
                                 "': its manifest names "
                                 "file '" +
                                 f.name().substr(0, 64) +
                                 "', which is not a file in it");
      std::string path = dir + "/" + f.name();
      std::string data;
      if (Status s = readFileRange(path, f.offset(), f.bytes(), &data); !s.ok())
        return s;
      if (fnv1a(data.data(), data.size()) != f.fnv1a())
        return Status::error(
            Code::FailedPrecondition,
            str("checkpoint file '", path, "': the block of virtual shard ",
                f.virtual_shard(), " (", f.bytes(), " bytes at ", f.offset(),
                ") has checksum ", fnv1a(data.data(), data.size()),
                ", the manifest says ", f.fnv1a()));
      Table *t;
      if (Status s = fresh.findTable(f.table_id(), &t); !s.ok())
        return s;
      uint32_t header[5];
      uint64_t count;
      if (data.size() < 8 + sizeof(header) + 8 ||
          std::memcmp(data.data(), kRowsMagic, 8) != 0)
        return Status::error(Code::FailedPrecondition,
                             "'" + path + "' is not a PS rows file");
      std::memcpy(header, data.data() + 8, sizeof(header));
      std::memcpy(&count, data.data() + 8 + sizeof(header), 8);
      size_t rowBytes = 16 + t->stride * sizeof(float);
      size_t body = data.size() - (8 + sizeof(header) + 8);
      // Compared by division: a count near 2^64 times rowBytes wraps.
      if (header[1] != f.table_id() || header[2] != f.virtual_shard() ||
          header[3] != t->dim || header[4] != static_cast<uint32_t>(t->slots) ||
          body % rowBytes != 0 || count != body / rowBytes)
        return Status::error(Code::FailedPrecondition,
                             "'" + path + "' does not match its table");
      Table::Part &p = *t->parts[f.virtual_shard()];
      const char *r = data.data() + 8 + sizeof(header) + 8;
      if (t->onDisk) {
        rocksdb::WriteBatch batch;
        for (uint64_t i = 0; i < count; ++i, r += rowBytes) {
          uint64_t key;
          std::memcpy(&key, r, 8);
          batch.Put(
              diskKey(f.table_id(), t->generation, f.virtual_shard(), key),
              rocksdb::Slice(r + 8, rowBytes - 8));
        }
        rocksdb::Status st = fresh.disk->db->Write(fresh.disk->write, &batch);
        if (!st.ok())
          return Status::error(Code::Internal,
                               "RocksDB write failed: " + st.ToString());
        p.diskRows += count;
        rows += count;
        continue;
      }
      for (uint64_t i = 0; i < count; ++i, r += rowBytes) {
        uint64_t key;
        int64_t step;
        std::memcpy(&key, r, 8);
        std::memcpy(&step, r + 8, 8);
        if (p.index.find(key) != KeyIndex::kNone ||
            virtualShardOf(key) != f.virtual_shard())
          return Status::error(Code::FailedPrecondition,
                               str("checkpoint file '", path, "' holds key ",
                                   key, " twice or in the wrong shard"));
        uint32_t slot = static_cast<uint32_t>(p.keys.size());
        p.index.insert(key, slot);
        p.keys.push_back(key);
        p.steps.push_back(step);
        p.touched.push_back(opts.clock());
        p.data.insert(p.data.end(), reinterpret_cast<const float *>(r + 16),
                      reinterpret_cast<const float *>(r + 16) + t->stride);
      }
      rows += count;
      fresh.memory += count * t->rowBytes();
    }
    if (m.dense_size() != 2 * m.dense_optimizers_size())
      return Status::error(Code::FailedPrecondition,
                           str("checkpoint '", dir, "': its manifest has ",
                               m.dense_size(), " dense tensors and ",
                               m.dense_optimizers_size(),
                               " optimizers; expected two tensors (value "
                               "and state) per optimizer"));
    for (int i = 0; i + 1 < m.dense_size(); i += 2) {
      const v1::DenseTensor &value = m.dense(i), &state = m.dense(i + 1);
      if (serverOfName(value.name(), opts.count) != opts.index)
        continue;
      bool created;
      if (Status s =
              fresh.createDense(value, m.dense_optimizers(i / 2), &created);
          !s.ok())
        return s;
      Dense &d = *fresh.dense[value.name()];
      if (state.values().size() != d.state.size() * sizeof(float))
        return Status::error(Code::FailedPrecondition,
                             "dense state of '" + value.name() +
                                 "' does not match its tensor");
      if (!state.values().empty())
        std::memcpy(d.state.data(), state.values().data(),
                    state.values().size());
      if (state.shape_size() > 1 ||
          (state.shape_size() == 1 && state.shape(0) < 0))
        return Status::error(Code::FailedPrecondition,
                             "dense state of '" + value.name() +
                                 "' has a malformed step count");
      d.steps = state.shape_size() ? state.shape(0) : 0;
    }
  }
  std::lock_guard<std::mutex> m(maintenanceMutex);
  std::unique_lock<std::shared_mutex> lock(tablesMutex);
  std::lock_guard<std::mutex> dl(denseMutex);
  tables.swap(fresh.tables);
  dense.swap(fresh.dense);
  disk = fresh.disk;
  dropFresh.keep = true;
  // `fresh` now holds the old tables: their RocksDB rows go.
  fresh.dropDiskRows();
  memory = fresh.memory.load();
  response->set_step(manifests[0].step());
  response->set_name(dir);
  response->set_rows(rows);
  return {};
}

void Shard::dropDiskRows() {
  if (!disk)
    return;
  for (auto &[id, t] : tables)
    if (t->onDisk) {
      rocksdb::Status st = disk->db->DeleteRange(
          disk->write, disk->db->DefaultColumnFamily(),
          diskPrefix(id, t->generation), diskPrefix(id, t->generation + 1));
      (void)st; // Left-over rows of a dropped generation are unreachable.
    }
}

void Shard::info(v1::ServerInfoResponse *response) {
  response->set_protocol_version(kProtocolVersion);
  response->set_shard_index(opts.index);
  response->set_shard_count(opts.count);
  response->set_virtual_shards(kVirtualShards);
  std::vector<uint32_t> ids;
  {
    std::shared_lock<std::shared_mutex> lock(tablesMutex);
    for (auto &[id, t] : tables)
      ids.push_back(id);
  }
  for (uint32_t id : ids)
    describeTable(id, response->add_tables());
  response->set_memory_bytes(memory);
}
