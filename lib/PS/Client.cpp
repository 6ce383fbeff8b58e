//===- Client.cpp - The parameter-server client ---------------------------===//

#include "heterps/PS/Client.h"

#include "heterps/Plan/PlanFile.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Support/AtomicFile.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>
#include <type_traits>
#include <unistd.h>

using namespace heterps;
using namespace heterps::ps;

Connection::~Connection() = default;

void Connection::startPull(const KeyRows &part, Done done) {
  done(pull(part), false);
}

void Connection::startPush(uint32_t table, const uint64_t *keys, size_t n,
                           uint32_t dim, const float *values, uint64_t client,
                           uint64_t seq, bool assign,
                           v1::PushResponse *response, Done done) {
  done(push(table, keys, n, dim, values, client, seq, assign, response), false);
}

void Connection::startPullMany(const std::vector<KeyRows> &parts, Done done) {
  done(pullMany(parts), false);
}

void Connection::startPushMany(const std::vector<KeyRows> &parts,
                               uint64_t client, uint64_t seq,
                               const std::vector<KeyRows> &thenPull,
                               v1::PushResponse *response, Done done) {
  done(pushMany(parts, client, seq, thenPull, response), false);
}

//===----------------------------------------------------------------------===//
// Client
//===----------------------------------------------------------------------===//

static uint64_t randomClientId() {
  std::random_device rd;
  uint64_t x = (uint64_t(rd()) << 32) ^ rd() ^ (uint64_t(::getpid()) << 17) ^
               static_cast<uint64_t>(
                   std::chrono::steady_clock::now().time_since_epoch().count());
  return x ? x : 1;
}

Client::Client(std::vector<std::unique_ptr<Connection>> servers,
               ClientOptions options)
    : servers(std::move(servers)), opts(options),
      id(options.clientId ? options.clientId : randomClientId()) {
  if (this->servers.empty())
    runtime::fail("a PS client needs at least one server");
  size_t n = this->servers.size();
  for (size_t i = 0; i < n; ++i)
    pushLocks.push_back(std::make_unique<std::mutex>());
  nextSeq.assign(n, 1);
  for (Lane *lane : {&pullLane, &pushLane}) {
    lane->serverRows.resize(n);
    lane->responses.resize(n);
  }
}

Client::~Client() = default;

void Client::raise(size_t server, const std::string &what,
                   const Status &s) const {
  throw PSError(s.code, what + " on PS server " + std::to_string(server) +
                            " (" + servers[server]->address() +
                            "): " + codeName(s.code) + ": " + s.message);
}

void Client::connect() {
  for (size_t i = 0; i < servers.size(); ++i) {
    v1::ServerInfoResponse info;
    if (Status s = servers[i]->info(&info); !s.ok())
      raise(i, "connecting", s);
    if (info.protocol_version() != kProtocolVersion)
      raise(i, "connecting",
            Status::error(Code::FailedPrecondition,
                          "it speaks protocol version " +
                              std::to_string(info.protocol_version()) +
                              ", this client " +
                              std::to_string(kProtocolVersion)));
    if (info.shard_index() != i || info.shard_count() != servers.size() ||
        info.virtual_shards() != kVirtualShards)
      raise(i, "connecting",
            Status::error(Code::FailedPrecondition,
                          "it is shard " + std::to_string(info.shard_index()) +
                              " of " + std::to_string(info.shard_count()) +
                              ", the client's list makes it shard " +
                              std::to_string(i) + " of " +
                              std::to_string(servers.size())));
    if (info.caller_access() == v1::CALLER_ACCESS_DATA && dataOnly.empty())
      dataOnly = "PS server " + std::to_string(i) + " (" +
                 servers[i]->address() +
                 ") takes this client's token for data calls only";
  }
}

void Client::createTable(const v1::TableConfig &config) {
  // The client indexes its tables by id.
  if (config.table_id() >= kMaxTables)
    runtime::fail("table id ", config.table_id(),
                  " is out of range; ids go from 0 to ", kMaxTables - 1);
  for (size_t i = 0; i < servers.size(); ++i) {
    bool created;
    if (Status s = servers[i]->createTable(config, &created); !s.ok())
      raise(i, "creating table " + std::to_string(config.table_id()), s);
  }
  if (infos.size() <= config.table_id())
    infos.resize(config.table_id() + 1);
  Table &t = infos[config.table_id()];
  t.info = {static_cast<int>(config.table_id()), config.name(),
            static_cast<int64_t>(config.vocab()),
            static_cast<int64_t>(config.dim())};
  t.vocab = config.vocab();
}

v1::Optimizer ps::protocolOptimizer(const plan::Optimizer &o) {
  v1::Optimizer p;
  p.set_kind(o.kind().empty() ? "sgd" : o.kind());
  p.set_learning_rate(o.learning_rate());
  p.set_momentum(o.momentum());
  p.set_beta1(o.beta1());
  p.set_beta2(o.beta2());
  p.set_epsilon(o.epsilon());
  p.set_weight_decay(o.weight_decay());
  return p;
}

void Client::setTableOptimizer(int table, const v1::Optimizer &optimizer) {
  const Table &t = get(table);
  const uint32_t id = static_cast<uint32_t>(table);
  std::vector<v1::Optimizer> previous(servers.size());
  for (size_t i = 0; i < servers.size(); ++i) {
    Status s = servers[i]->setTableOptimizer(id, optimizer, &previous[i]);
    if (s.ok())
      continue;
    // The servers changed before this one go back, so that the table's
    // shards do not train with two sets of hyper-parameters.
    std::string message = s.message;
    for (size_t j = 0; j < i; ++j) {
      v1::Optimizer ignored;
      Status back = servers[j]->setTableOptimizer(id, previous[j], &ignored);
      message +=
          "; PS server " + std::to_string(j) +
          (back.ok() ? " was set back"
                     : " (" + servers[j]->address() + ") keeps the new one: " +
                           codeName(back.code) + ": " + back.message);
    }
    raise(i,
          "setting the optimizer of table " + std::to_string(table) + " '" +
              t.info.name + "'",
          Status::error(s.code, message));
  }
}

std::string ps::optimizerText(const v1::Optimizer &o) {
  std::ostringstream text;
  text << (o.kind().empty() ? "sgd" : o.kind()) << " (learning rate "
       << o.learning_rate() << ", momentum " << o.momentum() << ", beta1 "
       << o.beta1() << ", beta2 " << o.beta2() << ", epsilon " << o.epsilon()
       << ", weight decay " << o.weight_decay() << ")";
  return text.str();
}

std::string OptimizerChanges::Group::retuned() const {
  return plural ? "they take the plan's hyper-parameters and keep their "
                  "optimizer state"
                : "it takes the plan's hyper-parameters and keeps its "
                  "optimizer state";
}

void OptimizerChanges::add(uint32_t table, const std::string &name,
                           const v1::Optimizer &from, const v1::Optimizer &to) {
  std::string label = std::to_string(table) + " '" + name + "'";
  std::string was = optimizerText(from), is = optimizerText(to);
  for (Group &g : all)
    if (g.from == was && g.to == is) {
      if (!g.plural)
        g.tables = "tables" + g.tables.substr(std::strlen("table"));
      g.tables += ", " + label;
      g.plural = true;
      return;
    }
  all.push_back({"table " + label, was, is, false});
}

/// Whether `have` is `want` but for the hyper-parameters of the same kind
/// of optimizer.
static bool differsInHyperParameters(const v1::TableConfig &have,
                                     const v1::TableConfig &want) {
  auto kind = [](const v1::TableConfig &c) {
    return c.optimizer().kind().empty() ? "sgd" : c.optimizer().kind();
  };
  v1::TableConfig tuned = have;
  *tuned.mutable_optimizer() = want.optimizer();
  return kind(have) == kind(want) &&
         tuned.SerializeAsString() == want.SerializeAsString();
}

std::vector<std::string> Client::createTables(const plan::Plan &plan,
                                              uint64_t seed,
                                              const v1::TableConfig &defaults) {
  OptimizerChanges changes;
  for (const plan::SparseTable &pt : plan.tables()) {
    v1::TableConfig c;
    c.set_storage(defaults.storage());
    c.set_cache_rows(defaults.cache_rows());
    c.set_admit_min_count(defaults.admit_min_count());
    c.set_ttl_seconds(defaults.ttl_seconds());
    c.set_non_finite(defaults.non_finite());
    c.set_table_id(pt.id());
    c.set_name(pt.name());
    c.set_dim(static_cast<uint32_t>(pt.dim()));
    c.set_vocab(static_cast<uint64_t>(pt.vocab()));
    c.mutable_init()->set_kind(pt.init().kind().empty() ? "zeros"
                                                        : pt.init().kind());
    for (double a : pt.init().args())
      c.mutable_init()->add_args(a);
    c.mutable_init()->set_seed(seed);
    *c.mutable_optimizer() = protocolOptimizer(pt.optimizer());
    std::vector<bool> created(servers.size());
    std::string what =
        "table " + std::to_string(pt.id()) + " '" + pt.name() + "'";
    bool noted = false;
    for (size_t i = 0; i < servers.size(); ++i) {
      bool made = false;
      Status s = servers[i]->createTable(c, &made);
      v1::TableStatus have;
      // A job restarted with a lower learning rate, against servers that
      // kept its tables: the plan's hyper-parameters apply.
      if (s.code == Code::AlreadyExists &&
          servers[i]->describeTable(pt.id(), &have).ok() &&
          differsInHyperParameters(have.config(), c)) {
        v1::Optimizer previous;
        if (s = servers[i]->setTableOptimizer(pt.id(), c.optimizer(),
                                              &previous);
            !s.ok())
          raise(i,
                "giving " + what + ", trained with " +
                    optimizerText(have.config().optimizer()) + ", the plan's " +
                    optimizerText(c.optimizer()),
                s);
        if (!noted)
          changes.add(pt.id(), pt.name(), previous, c.optimizer());
        noted = true;
      }
      // The server's message shows both configurations; a seed is the
      // likely difference (a run resumed with another --seed).
      if (s.code == Code::AlreadyExists && have.has_config() &&
          have.config().init().seed() != c.init().seed())
        s.message = "it exists with initializer seed " +
                    std::to_string(have.config().init().seed()) +
                    ", this run's seed is " + std::to_string(seed) +
                    " (give the seed it was created with: heterps-run "
                    "--seed, Trainer(seed=); a resumed run takes its "
                    "checkpoint's)";
      if (!s.ok())
        raise(i, "creating " + what, s);
      created[i] = made;
    }
    if (infos.size() <= static_cast<size_t>(pt.id()))
      infos.resize(pt.id() + 1);
    infos[pt.id()] = {{pt.id(), pt.name(), pt.vocab(), pt.dim()},
                      static_cast<uint64_t>(pt.vocab())};
    if (!pt.has_value())
      continue;
    // Initial rows go to the servers that created the table now; one that
    // already had it (a worker restarted against a running service) keeps
    // its trained rows.
    runtime::Tensor rows = runtime::viewOfData(pt.value(), what);
    if (rows.dtype() != runtime::DType::F32 ||
        rows.shape() != runtime::Shape{pt.vocab(), pt.dim()})
      runtime::fail(what, ": initial rows ", rows.typeString(), ", expected ",
                    pt.vocab(), "x", pt.dim(), "xf32");
    // In slices of rows, read from the plan in place: a 640 MB table is
    // not copied whole on its way to the servers.
    constexpr int64_t kSliceRows = 1 << 16;
    std::vector<int64_t> keys;
    std::vector<float> values;
    for (int64_t first = 0; first < pt.vocab(); first += kSliceRows) {
      keys.clear();
      for (int64_t k = first; k < std::min(pt.vocab(), first + kSliceRows); ++k)
        if (created[serverOfShard(virtualShardOf(k), servers.size())])
          keys.push_back(k);
      values.resize(keys.size() * pt.dim());
      for (size_t j = 0; j < keys.size(); ++j)
        std::memcpy(values.data() + j * pt.dim(),
                    rows.as<float>() + keys[j] * pt.dim(),
                    pt.dim() * sizeof(float));
      if (!keys.empty())
        assign(pt.id(), keys.data(), static_cast<int64_t>(keys.size()),
               values.data());
    }
  }
  std::vector<std::string> notes;
  for (const OptimizerChanges::Group &g : changes.groups())
    notes.push_back("the PS service's " + g.tables +
                    (g.plural ? " were" : " was") + " trained with " + g.from +
                    "; this plan trains " + g.object() + " with " + g.to +
                    ": " + g.retuned());
  return notes;
}

const Client::Table &Client::get(int table) const {
  if (table < 0 || table >= static_cast<int>(infos.size()) ||
      infos[table].info.dim == 0)
    runtime::fail("unknown embedding table id ", table, " (the ", "client has ",
                  infos.size(), ")");
  return infos[table];
}

const runtime::TableInfo &Client::table(int id) const { return get(id).info; }

int Client::tableId(const std::string &name) const {
  for (const Table &t : infos)
    if (t.info.dim && t.info.name == name)
      return t.info.id;
  runtime::fail("no embedding table '", name, "' in the PS client");
}

template <typename Start, typename Call>
const std::vector<Status> &Client::fanOut(Lane &lane,
                                          const std::vector<size_t> &counts,
                                          Start &&start, Call &&call) {
  size_t n = servers.size();
  lane.statuses.assign(n, Status{});
  lane.resumeAt.assign(n, SIZE_MAX);
  size_t busy = 0;
  for (size_t s = 0; s < n; ++s)
    busy += counts[s] > 0;
  if (busy <= 1) {
    // Nothing to overlap (the embedded server always): the calls block
    // here, and a steady-state step allocates nothing.
    for (size_t s = 0; s < n; ++s)
      lane.resumeAt[s] = counts[s] ? 0 : SIZE_MAX;
  } else {
    {
      std::lock_guard<std::mutex> lock(lane.fanMutex);
      lane.fanPending = busy;
    }
    // Each server's next request starts when its last one is answered (a
    // push's sequence number must follow the last answered one).
    std::function<void(size_t, size_t)> next = [&](size_t s, size_t r) {
      start(s, r, [&, s, r](Status status, bool again) {
        if (status.ok() && r + 1 < counts[s]) {
          next(s, r + 1);
          return;
        }
        std::lock_guard<std::mutex> lock(lane.fanMutex);
        if (!status.ok()) {
          if (again)
            lane.resumeAt[s] = r;
          else
            lane.statuses[s] = std::move(status);
        }
        if (--lane.fanPending == 0)
          lane.fanDone.notify_all();
      });
    };
    for (size_t s = 0; s < n; ++s)
      if (counts[s] > 0)
        next(s, 0);
    std::unique_lock<std::mutex> lock(lane.fanMutex);
    lane.fanDone.wait(lock, [&] { return lane.fanPending == 0; });
  }
  // Retries (a server restarting, a lost answer) wait with backoff here.
  for (size_t s = 0; s < n; ++s)
    for (size_t r = lane.resumeAt[s]; r < counts[s]; ++r)
      if (Status status = call(s, r); !status.ok()) {
        lane.statuses[s] = std::move(status);
        break;
      }
  return lane.statuses;
}

Client::PushOrder::PushOrder(Client &client, Lane &lane,
                             const std::vector<size_t> &counts)
    : client(client), lane(lane) {
  size_t n = client.servers.size();
  lane.pushLocked.assign(n, 0);
  lane.seqBase.assign(n, 0);
  for (size_t s = 0; s < n; ++s) {
    if (counts[s] == 0)
      continue;
    client.pushLocks[s]->lock();
    lane.pushLocked[s] = 1;
    lane.seqBase[s] = client.nextSeq[s];
    client.nextSeq[s] += counts[s];
  }
}

Client::PushOrder::~PushOrder() {
  for (size_t s = 0; s < lane.pushLocked.size(); ++s)
    if (lane.pushLocked[s]) {
      client.pushLocks[s]->unlock();
      lane.pushLocked[s] = 0;
    }
}

namespace {
/// A flat open-addressing map from key to unique index, cleared in O(1)
/// by a generation stamp, for deduplicating request keys. An entry is one
/// 16-byte record (a probe touches one cache line), and a request uses
/// only the part of the table its size needs: the table keeps the largest
/// request's capacity, and small requests after a large one stay in cache.
struct DedupTable {
  struct Entry {
    uint64_t key;
    uint32_t value, stamp;
  };
  std::vector<Entry> entries;
  size_t mask = 0;
  uint32_t generation = 0;
  void reset(size_t n) {
    size_t want = 16;
    while (want < 2 * n)
      want <<= 1;
    if (entries.size() < want)
      entries.assign(want, Entry{0, 0, 0});
    mask = want - 1;
    if (++generation == 0) {
      for (Entry &e : entries)
        e.stamp = 0;
      generation = 1;
    }
  }
  size_t home(uint64_t key) const {
    // Fibonacci hashing: bits of the product's high half.
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
  }
  /// Starts loading `key`'s first entry (a request's keys miss the cache
  /// once the table outgrows it). Always inlined, as KeyIndex::prefetch.
  __attribute__((always_inline)) void prefetch(uint64_t key) const {
    __builtin_prefetch(entries.data() + home(key));
  }
  /// The index of `key`, inserting `next` when it is new.
  uint32_t find(uint64_t key, uint32_t next, bool *inserted) {
    for (size_t i = home(key);; i = (i + 1) & mask) {
      Entry &e = entries[i];
      if (e.stamp != generation) {
        e = Entry{key, next, generation};
        *inserted = true;
        return next;
      }
      if (e.key == key) {
        *inserted = false;
        return e.value;
      }
    }
  }
};
thread_local DedupTable tlsDedup;

} // namespace

void Client::KeySplit::split(const int64_t *ids, int64_t n, uint64_t vocab,
                             size_t servers) {
  DedupTable &d = tlsDedup;
  d.reset(static_cast<size_t>(n));
  unique.clear();
  first.clear();
  position.resize(n);
  keys.resize(servers);
  slots.resize(servers);
  firsts.resize(servers);
  for (size_t s = 0; s < servers; ++s) {
    keys[s].clear();
    slots[s].clear();
    firsts[s].clear();
  }
  constexpr int64_t kAhead = 16;
  for (int64_t i = 0; i < std::min(n, kAhead); ++i)
    d.prefetch(runtime::tableKey(ids[i], vocab));
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n)
      d.prefetch(runtime::tableKey(ids[i + kAhead], vocab));
    uint64_t key = runtime::tableKey(ids[i], vocab);
    bool inserted;
    uint32_t u = d.find(key, static_cast<uint32_t>(unique.size()), &inserted);
    position[i] = u;
    if (inserted) {
      unique.push_back(key);
      first.push_back(static_cast<uint32_t>(i));
      size_t server =
          servers == 1 ? 0 : serverOfShard(virtualShardOf(key), servers);
      keys[server].push_back(key);
      slots[server].push_back(u);
      firsts[server].push_back(static_cast<uint32_t>(i));
    }
  }
}

KeyRows Client::KeySplit::pullPart(size_t server, size_t at, size_t count,
                                   uint32_t table, uint32_t dim,
                                   float *rows) const {
  KeyRows part{table, dim, keys[server].data() + at, count, rows};
  // One server and no repeated keys: its keys are the caller's, in order.
  if (keys.size() == 1 && unique.size() == position.size())
    part.rows += at * dim;
  else
    part.rowIndex = firsts[server].data() + at;
  return part;
}

void Client::KeySplit::fillRepeated(float *rows, size_t dim) const {
  if (unique.size() == position.size())
    return;
  for (size_t i = 0; i < position.size(); ++i)
    if (uint32_t f = first[position[i]]; f != i)
      std::memcpy(rows + i * dim, rows + static_cast<size_t>(f) * dim,
                  dim * sizeof(float));
}

void Client::pull(int table, const int64_t *keys, int64_t n, float *rows) {
  const Table &t = get(table);
  Lane &l = pullLane;
  std::lock_guard<std::mutex> lock(l.mutex);
  KeySplit &k = l.single;
  k.split(keys, n, t.vocab, servers.size());
  const uint32_t dim = static_cast<uint32_t>(t.info.dim);
  size_t count = servers.size(), chunk = opts.maxKeysPerRequest;
  l.requestCounts.assign(count, 0);
  for (size_t s = 0; s < count; ++s)
    l.requestCounts[s] = (k.keys[s].size() + chunk - 1) / chunk;
  // Rows go straight from the answers to the first place the caller asked
  // for each key; repeated keys are copied from there.
  auto part = [&](size_t s, size_t r) {
    size_t at = r * chunk;
    return k.pullPart(s, at, std::min(chunk, k.keys[s].size() - at),
                      static_cast<uint32_t>(table), dim, rows);
  };
  raiseFirst(
      fanOut(
          l, l.requestCounts,
          [&](size_t s, size_t r, Connection::Done done) {
            servers[s]->startPull(part(s, r), std::move(done));
          },
          [&](size_t s, size_t r) { return servers[s]->pull(part(s, r)); }),
      [&] { return "pulling table " + std::to_string(table); });
  k.fillRepeated(rows, dim);
}

void Client::push(int table, const int64_t *keys, int64_t n,
                  const float *grads) {
  sendPush(table, keys, n, grads, false);
}

void Client::assign(int table, const int64_t *keys, int64_t n,
                    const float *rows) {
  sendPush(table, keys, n, rows, true);
}

void Client::sendPush(int table, const int64_t *keys, int64_t n,
                      const float *values, bool assign) {
  const Table &t = get(table);
  Lane &l = pushLane;
  std::lock_guard<std::mutex> lock(l.mutex);
  KeySplit &k = l.single;
  k.split(keys, n, t.vocab, servers.size());
  const size_t dim = static_cast<size_t>(t.info.dim);
  // Duplicates are merged here (summed, or for assign the last wins) so
  // every key goes to its server once; the server merges again for clients
  // that do not.
  l.uniqueRows.assign(k.unique.size() * dim, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float *dst = l.uniqueRows.data() + k.position[i] * dim;
    const float *src = values + i * dim;
    if (assign)
      std::memcpy(dst, src, dim * sizeof(float));
    else
      for (size_t j = 0; j < dim; ++j)
        dst[j] += src[j];
  }
  size_t count = servers.size(), chunk = opts.maxKeysPerRequest;
  bool direct = count == 1;
  l.requestCounts.assign(count, 0);
  l.serverOut.assign(count, nullptr);
  for (size_t s = 0; s < count; ++s) {
    const std::vector<uint64_t> &serverKeys = k.keys[s];
    if (serverKeys.empty())
      continue;
    std::vector<float> &r = direct ? l.uniqueRows : l.serverRows[s];
    if (!direct) {
      r.resize(serverKeys.size() * dim);
      const std::vector<uint32_t> &slots = k.slots[s];
      for (size_t j = 0; j < slots.size(); ++j)
        std::memcpy(r.data() + j * dim, l.uniqueRows.data() + slots[j] * dim,
                    dim * sizeof(float));
    }
    l.serverOut[s] = r.data();
    l.requestCounts[s] = (serverKeys.size() + chunk - 1) / chunk;
  }
  // Pushes to a server go in sequence order: its lock is held until they
  // are answered.
  PushOrder order(*this, l, l.requestCounts);
  auto request = [&](size_t s, size_t r, size_t *m) {
    size_t at = r * chunk;
    *m = std::min(chunk, k.keys[s].size() - at);
    return at;
  };
  raiseFirst(fanOut(
                 l, l.requestCounts,
                 [&](size_t s, size_t r, Connection::Done done) {
                   size_t m, at = request(s, r, &m);
                   servers[s]->startPush(table, k.keys[s].data() + at, m,
                                         static_cast<uint32_t>(dim),
                                         l.serverOut[s] + at * dim, id,
                                         l.seqBase[s] + r, assign,
                                         &l.responses[s], std::move(done));
                 },
                 [&](size_t s, size_t r) {
                   size_t m, at = request(s, r, &m);
                   return servers[s]->push(
                       table, k.keys[s].data() + at, m,
                       static_cast<uint32_t>(dim), l.serverOut[s] + at * dim,
                       id, l.seqBase[s] + r, assign, &l.responses[s]);
                 }),
             [&] {
               return std::string(assign ? "writing rows of" : "pushing to") +
                      " table " + std::to_string(table);
             });
}

struct Client::ManyScratch {
  /// One table of the request, its keys deduplicated and split by server.
  struct Split : KeySplit {
    size_t dim = 0;
    /// A pull: the caller's rows, written in place.
    float *pullTo = nullptr;
    /// A push: its values with repeated keys summed, and per server.
    std::vector<float> uniqueRows;
    std::vector<std::vector<float>> rows;
  };
  std::vector<Split> tables;
  std::vector<uint32_t> ids;
  /// Per server, its requests (the first used[s]): each at most
  /// maxKeysPerRequest keys. The vectors are kept between calls.
  std::vector<std::vector<std::vector<KeyRows>>> requests;
  std::vector<size_t> used;

  /// Cuts each server's tables into requests of at most `maxKeys` keys.
  void plan(size_t servers, size_t maxKeys) {
    requests.resize(servers);
    used.assign(servers, 0);
    for (size_t s = 0; s < servers; ++s) {
      size_t room = 0;
      for (size_t i = 0; i < tables.size(); ++i) {
        Split &t = tables[i];
        const std::vector<uint64_t> &k = t.keys[s];
        const uint32_t dim = static_cast<uint32_t>(t.dim);
        if (!t.pullTo) {
          t.rows.resize(servers);
          t.rows[s].resize(k.size() * t.dim);
        }
        for (size_t at = 0; at < k.size();) {
          if (room == 0) {
            if (used[s] == requests[s].size())
              requests[s].emplace_back();
            requests[s][used[s]++].clear();
            room = maxKeys;
          }
          size_t m = std::min(room, k.size() - at);
          requests[s][used[s] - 1].push_back(
              t.pullTo ? t.pullPart(s, at, m, ids[i], dim, t.pullTo)
                       : KeyRows{ids[i], dim, k.data() + at, m,
                                 t.rows[s].data() + at * t.dim});
          at += m;
          room -= m;
        }
      }
    }
  }
};

template <typename Request>
Client::ManyScratch &Client::splitMany(const std::vector<Request> &requests,
                                       std::unique_ptr<ManyScratch> &scratch) {
  if (!scratch)
    scratch = std::make_unique<ManyScratch>();
  ManyScratch &m = *scratch;
  m.tables.resize(requests.size());
  m.ids.clear();
  for (size_t i = 0; i < requests.size(); ++i) {
    const Table &t = get(requests[i].table);
    ManyScratch::Split &split = m.tables[i];
    split.split(requests[i].keys, requests[i].n, t.vocab, servers.size());
    split.dim = static_cast<size_t>(t.info.dim);
    if constexpr (std::is_same_v<Request, runtime::TablePull>)
      split.pullTo = requests[i].rows;
    else
      split.pullTo = nullptr;
    m.ids.push_back(static_cast<uint32_t>(requests[i].table));
  }
  return m;
}

void Client::fillRepeated(const std::vector<runtime::TablePull> &pulls,
                          const ManyScratch &m) {
  for (size_t i = 0; i < pulls.size(); ++i)
    m.tables[i].fillRepeated(pulls[i].rows, m.tables[i].dim);
}

void Client::pullMany(const std::vector<runtime::TablePull> &pulls) {
  if (pulls.empty())
    return;
  Lane &l = pullLane;
  std::lock_guard<std::mutex> lock(l.mutex);
  ManyScratch &m = splitMany(pulls, l.many);
  m.plan(servers.size(), opts.maxKeysPerRequest);
  raiseFirst(
      fanOut(
          l, m.used,
          [&](size_t s, size_t r, Connection::Done done) {
            servers[s]->startPullMany(m.requests[s][r], std::move(done));
          },
          [&](size_t s, size_t r) {
            return servers[s]->pullMany(m.requests[s][r]);
          }),
      [&] { return "pulling " + std::to_string(pulls.size()) + " tables"; });
  fillRepeated(pulls, m);
}

void Client::pushMany(const std::vector<runtime::TablePush> &pushes) {
  pushManyThenPull(pushes, {});
}

void Client::pushManyThenPull(const std::vector<runtime::TablePush> &pushes,
                              const std::vector<runtime::TablePull> &pulls) {
  if (pushes.empty()) {
    pullMany(pulls);
    return;
  }
  Lane &l = pushLane;
  std::lock_guard<std::mutex> lock(l.mutex);
  ManyScratch &m = splitMany(pushes, l.many);
  // Duplicate keys are summed here, so each goes to its server once.
  for (size_t i = 0; i < pushes.size(); ++i) {
    ManyScratch::Split &split = m.tables[i];
    size_t dim = split.dim;
    split.uniqueRows.assign(split.unique.size() * dim, 0.0f);
    for (int64_t k = 0; k < pushes[i].n; ++k) {
      float *dst = split.uniqueRows.data() + split.position[k] * dim;
      const float *src = pushes[i].grads + k * dim;
      for (size_t j = 0; j < dim; ++j)
        dst[j] += src[j];
    }
  }
  m.plan(servers.size(), opts.maxKeysPerRequest);
  for (ManyScratch::Split &t : m.tables)
    for (size_t s = 0; s < servers.size(); ++s)
      for (size_t j = 0; j < t.slots[s].size(); ++j)
        std::memcpy(t.rows[s].data() + j * t.dim,
                    t.uniqueRows.data() + t.slots[s][j] * t.dim,
                    t.dim * sizeof(float));
  ManyScratch *after = nullptr;
  if (!pulls.empty()) {
    after = &splitMany(pulls, l.thenMany);
    after->plan(servers.size(), opts.maxKeysPerRequest);
  }
  // A server's pulls ride on its last push request when they fit in one
  // request; otherwise (or for a server without pushes) they go on their
  // own once the pushes are answered.
  auto rides = [&](size_t s) {
    return after && m.used[s] > 0 && after->used[s] == 1;
  };
  {
    PushOrder order(*this, l, m.used);
    static const std::vector<KeyRows> none;
    auto thenPull = [&](size_t s, size_t r) -> const std::vector<KeyRows> & {
      return r + 1 == m.used[s] && rides(s) ? after->requests[s][0] : none;
    };
    raiseFirst(
        fanOut(
            l, m.used,
            [&](size_t s, size_t r, Connection::Done done) {
              servers[s]->startPushMany(m.requests[s][r], id, l.seqBase[s] + r,
                                        thenPull(s, r), &l.responses[s],
                                        std::move(done));
            },
            [&](size_t s, size_t r) {
              return servers[s]->pushMany(m.requests[s][r], id,
                                          l.seqBase[s] + r, thenPull(s, r),
                                          &l.responses[s]);
            }),
        [&] {
          return "pushing to " + std::to_string(pushes.size()) + " tables";
        });
  }
  if (!after)
    return;
  // Those pulls take the pull lane: a server answers one PullMany of a
  // client at a time.
  l.requestCounts.assign(servers.size(), 0);
  size_t alone = 0;
  for (size_t s = 0; s < servers.size(); ++s)
    if (!rides(s))
      alone += l.requestCounts[s] = after->used[s];
  if (alone) {
    Lane &p = pullLane;
    std::lock_guard<std::mutex> pullLock(p.mutex);
    raiseFirst(fanOut(
                   p, l.requestCounts,
                   [&](size_t s, size_t r, Connection::Done done) {
                     servers[s]->startPullMany(after->requests[s][r],
                                               std::move(done));
                   },
                   [&](size_t s, size_t r) {
                     return servers[s]->pullMany(after->requests[s][r]);
                   }),
               [&] {
                 return "pulling " + std::to_string(pulls.size()) +
                        " tables after pushing to them";
               });
  }
  fillRepeated(pulls, *after);
}

Client::Lane::Lane() = default;
Client::Lane::~Lane() = default;

bool Client::createDense(const std::string &name, const runtime::Tensor &value,
                         const runtime::OptimizerConfig &optimizer) {
  if (value.dtype() != runtime::DType::F32)
    runtime::fail("dense tensor '", name, "' is ", value.typeString(),
                  "; the PS keeps f32 tensors");
  v1::DenseTensor tensor;
  tensor.set_name(name);
  for (int64_t d : value.shape())
    tensor.add_shape(d);
  tensor.set_values(value.data(), value.byteSize());
  v1::Optimizer o;
  o.set_kind(runtime::OptimizerConfig::kindName(optimizer.kind));
  o.set_learning_rate(optimizer.learningRate);
  o.set_momentum(optimizer.momentum);
  o.set_beta1(optimizer.beta1);
  o.set_beta2(optimizer.beta2);
  o.set_epsilon(optimizer.epsilon);
  o.set_weight_decay(optimizer.weightDecay);
  size_t s = serverOfName(name, static_cast<uint32_t>(servers.size()));
  bool created = false;
  if (Status st = servers[s]->createDense(tensor, o, &created); !st.ok())
    raise(s, "creating dense tensor '" + name + "'", st);
  return created;
}

void Client::pullDense(const std::string &name, runtime::Tensor &value) {
  size_t s = serverOfName(name, static_cast<uint32_t>(servers.size()));
  v1::DenseTensor tensor;
  if (Status st = servers[s]->pullDense(name, &tensor); !st.ok())
    raise(s, "pulling dense tensor '" + name + "'", st);
  if (tensor.values().size() != value.byteSize())
    raise(s, "pulling dense tensor '" + name + "'",
          Status::error(Code::FailedPrecondition,
                        "it has " + std::to_string(tensor.values().size()) +
                            " bytes, this worker's " + value.typeString() +
                            " " + std::to_string(value.byteSize())));
  if (value.byteSize())
    std::memcpy(value.data(), tensor.values().data(), value.byteSize());
}

void Client::pushDense(const std::string &name, const runtime::Tensor &grad) {
  size_t s = serverOfName(name, static_cast<uint32_t>(servers.size()));
  std::lock_guard<std::mutex> order(*pushLocks[s]);
  v1::PushResponse response;
  uint64_t seq = nextSeq[s]++;
  if (Status st = servers[s]->pushDense(name, grad.as<float>(),
                                        grad.numElements(), id, seq, &response);
      !st.ok())
    raise(s, "pushing to dense tensor '" + name + "'", st);
}

void Client::checkpoint(const std::string &name, int64_t step) {
  for (size_t i = 0; i < servers.size(); ++i)
    if (Status s = servers[i]->checkpoint(name, step); !s.ok())
      raise(i, "writing checkpoint '" + name + "'", s);
}

int64_t Client::restore(const std::string &name,
                        const std::vector<v1::TableConfig> &expectTables) {
  v1::RestoreRequest request;
  request.set_name(name);
  for (const v1::TableConfig &config : expectTables)
    *request.add_expect_tables() = config;
  int64_t step = -1;
  for (size_t i = 0; i < servers.size(); ++i) {
    v1::RestoreResponse r;
    if (Status s = servers[i]->restore(request, &r); !s.ok())
      raise(i, "restoring checkpoint '" + name + "'", s);
    if (step >= 0 && r.step() != step)
      raise(i, "restoring checkpoint '" + name + "'",
            Status::error(Code::FailedPrecondition,
                          "it is at step " + std::to_string(r.step()) +
                              ", server 0 at " + std::to_string(step)));
    step = r.step();
  }
  return step;
}

v1::TableStatus Client::describe(int table) {
  v1::TableStatus total;
  for (size_t i = 0; i < servers.size(); ++i) {
    v1::TableStatus s;
    if (Status st = servers[i]->describeTable(table, &s); !st.ok())
      raise(i, "describing table " + std::to_string(table), st);
    if (i == 0)
      *total.mutable_config() = s.config();
    total.set_rows(total.rows() + s.rows());
    total.set_pending_keys(total.pending_keys() + s.pending_keys());
    total.set_memory_bytes(total.memory_bytes() + s.memory_bytes());
    total.set_pushes_applied(total.pushes_applied() + s.pushes_applied());
    total.set_duplicate_pushes(total.duplicate_pushes() + s.duplicate_pushes());
    total.set_skipped_non_finite(total.skipped_non_finite() +
                                 s.skipped_non_finite());
    total.set_evicted_rows(total.evicted_rows() + s.evicted_rows());
    total.set_disk_rows(total.disk_rows() + s.disk_rows());
  }
  return total;
}

std::string ps::readCredentialFile(const std::string &path,
                                   const std::string &what, bool trim) {
  std::string data;
  if (std::string error = readSmallFile(path, 1u << 20, data); !error.empty())
    runtime::fail(what, ": ", error);
  if (trim) {
    // A token is the file's first line.
    data = data.substr(0, data.find('\n'));
    while (!data.empty() &&
           std::isspace(static_cast<unsigned char>(data.back())))
      data.pop_back();
  }
  if (data.empty())
    runtime::fail(what, " '", path, "' is empty");
  return data;
}

namespace {
/// Splits at commas, keeping empty entries.
std::vector<std::string> splitServerList(const std::string &list) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    size_t comma = list.find(',', at);
    out.push_back(list.substr(at, comma == std::string::npos ? std::string::npos
                                                             : comma - at));
    if (comma == std::string::npos)
      return out;
    at = comma + 1;
  }
}
} // namespace

std::string ps::checkServerList(const std::string &list) {
  for (const std::string &a : splitServerList(list)) {
    size_t colon = a.rfind(':');
    std::string bad = "bad PS server address '" + a + "' in '" + list + "'";
    if (a.empty() || colon == std::string::npos || colon == 0)
      return bad + "; expected host:port[,host:port...]";
    std::string port = a.substr(colon + 1);
    bool digits = !port.empty() && port.size() <= 5 &&
                  std::all_of(port.begin(), port.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535)
      return bad + ": the port must be a number from 1 to 65535";
  }
  return "";
}

std::vector<std::string> ps::parseServerList(const std::string &list) {
  if (std::string error = checkServerList(list); !error.empty())
    runtime::fail(error);
  return splitServerList(list);
}
