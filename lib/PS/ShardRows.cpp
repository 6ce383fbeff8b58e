//===- ShardRows.cpp - A PS shard's rows: memory and the RocksDB tier -----===//
//
// Pulls and pushes of rows, feature admission, the rows' time to live, and
// the RocksDB tier of tables larger than their cache.
//
//===----------------------------------------------------------------------===//

#include "ShardState.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

using namespace heterps;
using namespace heterps::ps;
using namespace heterps::ps::detail;
namespace fs = std::filesystem;

//===----------------------------------------------------------------------===//
// Rows: memory, and the RocksDB tier
//===----------------------------------------------------------------------===//

namespace {
void putBigEndian(std::string &s, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
} // namespace

std::string detail::diskPrefix(uint32_t table, uint32_t generation,
                               int64_t virtualShard) {
  std::string s;
  putBigEndian(s, table, 4);
  putBigEndian(s, generation, 4);
  if (virtualShard >= 0)
    putBigEndian(s, static_cast<uint64_t>(virtualShard), 4);
  return s;
}

std::string detail::diskKey(uint32_t table, uint32_t generation,
                            uint32_t virtualShard, uint64_t key) {
  std::string s = diskPrefix(table, generation, virtualShard);
  putBigEndian(s, key, 8);
  return s;
}

uint64_t detail::keyOfDiskKey(const rocksdb::Slice &k) {
  uint64_t v = 0;
  for (size_t i = 12; i < 20; ++i)
    v = (v << 8) | static_cast<unsigned char>(k[i]);
  return v;
}

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

/// Writes row `slot` of part `v` to RocksDB and drops it from the index;
/// the caller reuses or frees the slot.
Status Shard::moveOut(Table &t, uint32_t v, uint32_t slot) {
  Table::Part &p = *t.parts[v];
  std::string value(reinterpret_cast<const char *>(&p.steps[slot]), 8);
  value.append(reinterpret_cast<const char *>(p.data.data() + slot * t.stride),
               t.stride * sizeof(float));
  rocksdb::Status st = disk->db->Put(
      disk->write, diskKey(t.config.table_id(), t.generation, v, p.keys[slot]),
      value);
  if (!st.ok())
    return Status::error(Code::Internal,
                         "RocksDB write failed: " + st.ToString());
  p.index.erase(p.keys[slot]);
  ++p.diskRows;
  return {};
}

Status Shard::moveOutBeyondCache(Table &t, uint32_t v) {
  Table::Part &p = *t.parts[v];
  for (size_t tries = 0;
       tries < p.keys.size() && p.index.size() > t.cachePerPart; ++tries) {
    uint32_t slot = p.hand++ % static_cast<uint32_t>(p.keys.size());
    // A free slot keeps the key it last held.
    if (p.index.find(p.keys[slot]) != slot)
      continue;
    if (Status s = moveOut(t, v, slot); !s.ok())
      return s;
    p.freeSlots.push_back(slot);
  }
  return {};
}

/// A free slot of part `v`, growing it, or for a RocksDB table whose cache
/// is full, moving a row that the current push does not use to RocksDB
/// (`moved`: the rows in memory did not grow).
Status Shard::allocateSlot(Table &t, uint32_t v, uint32_t *slot, bool *moved) {
  Table::Part &p = *t.parts[v];
  *moved = false;
  // A full cache moves a row out even where slots are free (a part that
  // went back to its cache after a large push has many).
  if (t.onDisk && p.index.size() >= t.cachePerPart && !p.keys.empty()) {
    for (size_t tries = 0; tries < p.keys.size(); ++tries) {
      uint32_t victim = p.hand++ % static_cast<uint32_t>(p.keys.size());
      if (victim < p.merged.size() && p.merged[victim] >= 0)
        continue; // holds a gradient of the push being applied
      if (p.index.find(p.keys[victim]) != victim)
        continue; // free
      if (Status s = moveOut(t, v, victim); !s.ok())
        return s;
      *slot = victim;
      *moved = true;
      return {};
    }
  }
  if (!p.freeSlots.empty()) {
    *slot = p.freeSlots.back();
    p.freeSlots.pop_back();
    return {};
  }
  *slot = static_cast<uint32_t>(p.keys.size());
  p.keys.push_back(0);
  p.steps.push_back(0);
  p.touched.push_back(0);
  p.data.resize(p.data.size() + t.stride);
  return {};
}

Status Shard::rowSlot(Table &t, uint32_t v, uint64_t key, bool countAdmission,
                      int32_t *slot, uint64_t *created, bool assigning,
                      uint64_t reserved) {
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
  if (opts.maxMemoryBytes && !cacheFull && *created >= reserved &&
      memory + (*created - reserved + 1) * t.rowBytes() > opts.maxMemoryBytes)
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

Status Shard::pull(uint32_t table, const uint64_t *keys, size_t n, float *rows,
                   const uint32_t *rowIndex) {
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
  // A lookup is three dependent cache misses (index slot, index key, row)
  // on a table larger than the cache. The index entries of the key kAhead
  // positions on are prefetched, and a found row is prefetched and copied
  // kDelay keys later, so that several misses are in flight at once
  // instead of one.
  constexpr uint32_t kAhead = 16, kDelay = 8;
  struct Copy {
    float *out;
    uint32_t slot;
  } pending[kDelay];
  for (uint32_t v = 0; v < kVirtualShards && result.ok(); ++v) {
    if (g.begin[v] == g.begin[v + 1])
      continue;
    Table::Part &p = *t->parts[v];
    std::lock_guard<std::mutex> l(p.mutex);
    uint32_t head = 0, queued = 0;
    auto copy = [&](const Copy &c) {
      std::memcpy(c.out,
                  p.data.data() + static_cast<size_t>(c.slot) * t->stride,
                  dim * sizeof(float));
    };
    auto drain = [&] {
      for (uint32_t c = 0; c < queued; ++c)
        copy(pending[(head + c) % kDelay]);
      head = queued = 0;
    };
    const uint32_t begin = g.begin[v], end = g.begin[v + 1];
    // A part often gets fewer than kAhead keys (1k keys over 64 parts).
    for (uint32_t j = begin; j < std::min(end, begin + kAhead); ++j)
      p.index.prefetch(t->normalize(keys[g.order[j]]));
    for (uint32_t j = begin; j < end; ++j) {
      if (j + kAhead < end)
        p.index.prefetch(t->normalize(keys[g.order[j + kAhead]]));
      uint32_t i = g.order[j];
      uint64_t key = t->normalize(keys[i]);
      float *out = rows + static_cast<size_t>(rowIndex ? rowIndex[i] : i) * dim;
      if (uint32_t found = p.index.find(key); found != KeyIndex::kNone) {
        if (ttl)
          p.touched[found] = now;
        p.prefetchRow(found, t->stride, dim);
        if (queued == kDelay) {
          copy(pending[head]);
          pending[head] = {out, found};
          head = (head + 1) % kDelay;
        } else {
          pending[(head + queued++) % kDelay] = {out, found};
        }
        continue;
      }
      // Creating or reloading a row may evict another row or move the
      // rows, so the queued copies go first.
      drain();
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
      copy({out, static_cast<uint32_t>(slot)});
    }
    drain();
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
Status detail::checkSequence(uint64_t client, uint64_t last, uint64_t seq) {
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
  if (Status s = checkFinite(*t, keys, n, values, assign); !s.ok())
    return s;
  const PushPart part{table, keys, n, values, assign};
  uint64_t reserved;
  if (client == 0) {
    // reservePush() groups the same keys again into the same grouping.
    if (Status s = reservePush(&part, 1, &reserved); !s.ok())
      return s;
    bool applied;
    return applyPush(*t, *g, keys, n, values, assign, reserved, response,
                     &applied);
  }
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
  if (Status s = reservePush(&part, 1, &reserved); !s.ok())
    return s;
  bool applied;
  Status s =
      applyPush(*t, *g, keys, n, values, assign, reserved, response, &applied);
  // A push that failed part-way (rows that expired meanwhile, a RocksDB
  // error) changed some rows: a retry must not apply them again.
  if (s.ok() || applied)
    c.last = seq;
  if (!s.ok() && applied)
    s.message += "; the push's rows before that one were applied, and a "
                 "retry does not apply them again";
  return s;
}

Status Shard::pushMany(const std::vector<PushPart> &parts, uint64_t client,
                       uint64_t seq, v1::PushResponse *response) {
  std::shared_lock<std::shared_mutex> lock(tablesMutex);
  Table *t;
  Grouping *g;
  // Every part is checked, its values too, before any is applied.
  for (const PushPart &p : parts) {
    if (Status s = checkRequest(p.table, p.keys, p.n, &t, &g); !s.ok())
      return s;
    if (Status s = checkFinite(*t, p.keys, p.n, p.values, p.assign); !s.ok())
      return s;
  }
  std::unique_lock<std::mutex> sequence;
  ClientSeq *c = nullptr;
  if (client) {
    c = &clientSeq(client);
    sequence = std::unique_lock<std::mutex>(c->mutex);
    if (seq <= c->last) {
      response->set_duplicate(true);
      for (const PushPart &p : parts)
        if (findTable(p.table, &t).ok())
          ++t->duplicatePushes;
      return {};
    }
    if (Status s = checkSequence(client, c->last, seq); !s.ok())
      return s;
  }
  thread_local std::vector<uint64_t> reserved;
  reserved.assign(parts.size(), 0);
  if (Status s = reservePush(parts.data(), parts.size(), reserved.data());
      !s.ok())
    return s;
  auto release = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k)
      if (findTable(parts[k].table, &t).ok())
        settleRows(*t, reserved[k], 0);
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    const PushPart &p = parts[i];
    bool applied = false;
    Status s = checkRequest(p.table, p.keys, p.n, &t, &g);
    if (s.ok())
      s = applyPush(*t, *g, p.keys, p.n, p.values, p.assign, reserved[i],
                    response, &applied);
    else
      release(i, i + 1);
    if (!s.ok()) {
      release(i + 1, parts.size());
      // Parts before this one, or this one's rows before the failure, are
      // applied (a RocksDB failure, or rows that expired meanwhile): a
      // retry of the request must not apply them again.
      if (c && (i > 0 || applied))
        c->last = seq;
      if (i > 0)
        s.message += str(" (the push's first ", i, " of ", parts.size(),
                         " tables were applied",
                         applied ? ", and rows of the next" : "", ")");
      else if (applied)
        s.message += " (rows of the push's first table were applied)";
      return s;
    }
  }
  if (c)
    c->last = seq;
  return {};
}

Status Shard::checkFinite(const Table &t, const uint64_t *keys, size_t n,
                          const float *values, bool assign) {
  if (t.config.non_finite() == v1::NON_FINITE_SKIP && !assign)
    return {};
  const uint32_t dim = t.dim;
  for (size_t i = 0; i < n * dim; ++i)
    if (!std::isfinite(values[i]))
      return Status::error(
          Code::InvalidArgument,
          str("table ", t.config.table_id(), " '", t.config.name(),
              "': ", assign ? "value" : "gradient", " ", values[i], " for key ",
              keys[i / dim], " (element ", i % dim,
              "); the push was rejected: no row of it changed"));
  return {};
}

bool Shard::tryReserve(uint64_t bytes) {
  std::lock_guard<std::mutex> l(reserveMutex);
  // Pulls add the rows they create to `memory` without the lock.
  uint64_t have = memory.load();
  do {
    if (have + bytes > opts.maxMemoryBytes)
      return false;
  } while (!memory.compare_exchange_weak(have, have + bytes));
  reservedBytes += bytes;
  return true;
}

Status Shard::reservePush(const PushPart *parts, size_t count, uint64_t *rows) {
  auto reserved = [&] {
    if (opts.pushReserved)
      opts.pushReserved();
    return Status();
  };
  std::fill(rows, rows + count, 0);
  if (!opts.maxMemoryBytes)
    return reserved();
  Table *t;
  Grouping *g;
  uint64_t rowPerKey = 0;
  for (size_t i = 0; i < count; ++i) {
    if (Status s = findTable(parts[i].table, &t); !s.ok())
      return s;
    rowPerKey += parts[i].n * t->rowBytes();
  }
  if (tryReserve(rowPerKey)) {
    for (size_t i = 0; i < count; ++i)
      rows[i] = parts[i].n;
    return reserved();
  }
  // Pushes being applied settle without waiting for anything, so a push
  // waits for them only while new pushes keep taking the room first; this
  // bounds that.
  constexpr int kMostWaitSeconds = 10;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(kMostWaitSeconds);
  for (bool waitedOut = false;;) {
    uint64_t seen;
    {
      std::lock_guard<std::mutex> l(reserveMutex);
      seen = settles;
    }
    uint64_t bytes = 0, newRows = 0;
    for (size_t i = 0; i < count; ++i) {
      const PushPart &p = parts[i];
      if (Status s = checkRequest(p.table, p.keys, p.n, &t, &g); !s.ok())
        return s;
      rows[i] = countNewRows(*t, *g, p.keys, p.assign);
      newRows += rows[i];
      bytes += rows[i] * t->rowBytes();
    }
    if (tryReserve(bytes))
      return reserved();
    if (!waitedOut) {
      std::unique_lock<std::mutex> l(reserveMutex);
      // Others' reservations are mostly a row per key, more than they
      // create: when this count fits beside the rows held without them,
      // it may fit once they settle.
      if (settles != seen)
        continue;
      if (reservedBytes > 0 &&
          memory.load() + bytes <= opts.maxMemoryBytes + reservedBytes) {
        if (settled.wait_until(l, deadline, [&] { return settles != seen; }))
          continue;
        waitedOut = true;
        continue;
      }
    }
    std::fill(rows, rows + count, 0);
    std::string what = count == 1 ? str("table ", t->config.table_id(), " '",
                                        t->config.name(), "': the push")
                                  : str("the push of ", count, " tables");
    return Status::error(Code::ResourceExhausted,
                         str(what, " would create up to ", newRows, " rows (",
                             bytes, " bytes) and take PS server ", opts.index,
                             " past its memory limit of ", opts.maxMemoryBytes,
                             " bytes (it holds ", memory.load(),
                             waitedOut
                                 ? str(" after waiting ", kMostWaitSeconds,
                                       " s for pushes being applied")
                                 : std::string(),
                             "); nothing of it was applied"));
  }
}

uint64_t Shard::countNewRows(Table &t, const Grouping &g, const uint64_t *keys,
                             bool assign) {
  const uint32_t admit = assign ? 0 : t.config.admit_min_count();
  // A key's sightings in this push, for admission; distinct keys once.
  thread_local std::unordered_map<uint64_t, uint32_t> sightings;
  uint64_t count = 0;
  for (uint32_t v = 0; v < kVirtualShards; ++v) {
    if (g.begin[v] == g.begin[v + 1])
      continue;
    Table::Part &p = *t.parts[v];
    std::lock_guard<std::mutex> l(p.mutex);
    sightings.clear();
    uint64_t present = 0;
    for (uint32_t j = g.begin[v]; j < g.begin[v + 1]; ++j) {
      uint64_t key = t.normalize(keys[g.order[j]]);
      if (p.index.find(key) == KeyIndex::kNone)
        ++sightings[key];
      else if (t.onDisk)
        sightings.try_emplace(key, 0); // present: counted below
    }
    uint64_t fresh = 0;
    for (const auto &[key, seen] : sightings) {
      if (seen == 0) {
        ++present;
        continue;
      }
      if (admit > 1) {
        auto pending = p.pending.find(key);
        if ((pending == p.pending.end() ? 0 : pending->second) + seen < admit)
          continue;
      }
      ++fresh;
    }
    // A RocksDB table's part grows to its cache, then moves out rows that
    // hold no gradient of this push; with more of this push's keys than
    // its cache, it grows to hold them all.
    if (t.onDisk) {
      uint64_t most = std::max<uint64_t>(t.cachePerPart, present + fresh);
      fresh = std::min<uint64_t>(
          fresh, most > p.index.size() ? most - p.index.size() : 0);
    }
    count += fresh;
  }
  return count;
}

void Shard::settleRows(const Table &t, uint64_t reserved, uint64_t created) {
  if (reserved == 0) {
    memory += created * t.rowBytes();
    return;
  }
  {
    std::lock_guard<std::mutex> l(reserveMutex);
    if (created >= reserved)
      memory += (created - reserved) * t.rowBytes();
    else
      memory -= (reserved - created) * t.rowBytes();
    reservedBytes -= reserved * t.rowBytes();
    ++settles;
  }
  settled.notify_all();
}

Status Shard::applyPush(Table &t, const Grouping &g, const uint64_t *keys,
                        size_t n, const float *values, bool assign,
                        uint64_t reserved, v1::PushResponse *response,
                        bool *applied) {
  *applied = false;
  const uint32_t dim = t.dim;
  const bool skipNonFinite =
      t.config.non_finite() == v1::NON_FINITE_SKIP && !assign;
  const bool ttl = t.config.ttl_seconds() > 0;
  const uint32_t admit = t.config.admit_min_count();
  double now = ttl ? opts.clock() : 0;
  uint64_t created = 0, skipped = 0, notAdmitted = 0, movedOut = 0;
  thread_local std::vector<float> merged;
  thread_local std::vector<uint32_t> mergedSlots;
  thread_local std::vector<const float *> sources;
  thread_local std::vector<int32_t> rowOf;
  Status result;
  for (uint32_t v = 0; v < kVirtualShards && result.ok(); ++v) {
    if (g.begin[v] == g.begin[v + 1])
      continue;
    Table::Part &p = *t.parts[v];
    std::lock_guard<std::mutex> l(p.mutex);
    mergedSlots.clear();
    sources.clear();
    merged.resize(static_cast<size_t>(g.begin[v + 1] - g.begin[v]) * dim);
    // As in pull: the index entries of later keys and the rows of later
    // updates are prefetched, so that their cache misses overlap.
    constexpr uint32_t kAhead = 16, kRowsAhead = 8;
    const uint32_t begin = g.begin[v], end = g.begin[v + 1];
    for (uint32_t j = begin; j < std::min(end, begin + kAhead); ++j)
      p.index.prefetch(t.normalize(keys[g.order[j]]));
    // The row of key j, or -1 when the key is skipped (a non-finite
    // gradient) or not admitted yet; a failure sets `result`.
    auto resolve = [&](uint32_t j) -> int32_t {
      if (j + kAhead < end)
        p.index.prefetch(t.normalize(keys[g.order[j + kAhead]]));
      uint32_t i = g.order[j];
      const float *gi = values + static_cast<size_t>(i) * dim;
      if (skipNonFinite && !std::all_of(gi, gi + dim, [](float x) {
            return std::isfinite(x);
          })) {
        ++skipped;
        return -1;
      }
      int32_t found;
      result = rowSlot(t, v, t.normalize(keys[i]), !assign && admit > 1, &found,
                       &created, assign, reserved);
      if (!result.ok())
        return -1;
      if (found < 0) {
        ++notAdmitted;
        return -1;
      }
      if (ttl)
        p.touched[found] = now;
      return found;
    };
    // Groups key j's gradient with the earlier ones of its row.
    auto group = [&](uint32_t j, uint32_t slot) {
      const float *gi = values + static_cast<size_t>(g.order[j]) * dim;
      if (p.merged.size() <= slot)
        p.merged.resize(p.keys.size(), -1);
      // A key's gradient is read where it is, and copied only when the
      // key repeats (the client has usually merged repeats already).
      int32_t &m = p.merged[slot];
      if (m < 0) {
        m = static_cast<int32_t>(mergedSlots.size());
        mergedSlots.push_back(slot);
        sources.push_back(gi);
        return;
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
    };
    if (t.onDisk) {
      // Creating a row may move another to RocksDB, but never one that
      // holds a gradient of this push (p.merged): each key is grouped as
      // soon as it has its row.
      for (uint32_t j = begin; j < end && result.ok(); ++j)
        if (int32_t slot = resolve(j); slot >= 0)
          group(j, static_cast<uint32_t>(slot));
    } else {
      // Rows stay where they are: every key gets its row first, with the
      // row's group entry and step count prefetched, and is grouped after.
      rowOf.resize(end - begin);
      for (uint32_t j = begin; j < end && result.ok(); ++j) {
        int32_t slot = resolve(j);
        rowOf[j - begin] = slot;
        if (slot >= 0) {
          if (static_cast<size_t>(slot) < p.merged.size())
            __builtin_prefetch(&p.merged[slot]);
          __builtin_prefetch(&p.steps[slot]);
        }
      }
      if (result.ok())
        for (uint32_t j = begin; j < end; ++j)
          if (rowOf[j - begin] >= 0)
            group(j, static_cast<uint32_t>(rowOf[j - begin]));
    }
    for (size_t m = 0; m < mergedSlots.size(); ++m) {
      if (m + kRowsAhead < mergedSlots.size() && result.ok()) {
        p.prefetchRow(mergedSlots[m + kRowsAhead], t.stride, t.stride);
        __builtin_prefetch(&p.steps[mergedSlots[m + kRowsAhead]]);
      }
      uint32_t slot = mergedSlots[m];
      p.merged[slot] = -1;
      if (!result.ok())
        continue;
      *applied = true;
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
    // A part that grew past its cache to hold this push's rows goes back
    // to it now that none holds a gradient.
    if (t.onDisk && p.index.size() > t.cachePerPart) {
      uint64_t before = p.index.size();
      if (Status s = moveOutBeyondCache(t, v); !s.ok() && result.ok())
        result = s;
      movedOut += before - p.index.size();
    }
  }
  settleRows(t, reserved, created);
  memory -= movedOut * t.rowBytes();
  t.skippedNonFinite += skipped;
  if (result.ok())
    ++t.pushesApplied;
  response->set_skipped_non_finite(skipped);
  response->set_not_admitted(notAdmitted);
  return result;
}

double Shard::shortestTtlSeconds() {
  std::shared_lock<std::shared_mutex> lock(tablesMutex);
  double shortest = 0;
  for (auto &[id, t] : tables)
    if (double ttl = t->config.ttl_seconds();
        ttl > 0 && (shortest == 0 || ttl < shortest))
      shortest = ttl;
  return shortest;
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
