//===- Shard.cpp - One parameter server's tables --------------------------===//
//
// The tables of a PS shard: their creation, configuration and description,
// and the checks every request of rows passes (ShardState.h says where the
// rest is).
//
//===----------------------------------------------------------------------===//

#include "ShardState.h"

#include "heterps/Support/CheckedMath.h"

#include <chrono>
#include <cmath>

using namespace heterps;
using namespace heterps::ps;
using namespace heterps::ps::detail;

namespace {

double steadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

Status detail::toOptimizer(const v1::Optimizer &o, const std::string &what,
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
    std::vector<double> args(c.init().args().begin(), c.init().args().end());
    if (std::string error = runtime::initializerError(c.init().kind(), args);
        !error.empty())
      return Status::error(Code::InvalidArgument, what + ": " + error);
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
  // Workers and heterps-ps find tables by name as well as by id.
  if (!config.name().empty())
    for (const auto &[id, other] : tables)
      if (other->config.name() == config.name())
        return Status::error(Code::AlreadyExists,
                             str("table ", config.table_id(), ": the name '",
                                 config.name(), "' is table ", id, "'s"));
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

Status Shard::setTableOptimizer(uint32_t table, const v1::Optimizer &optimizer,
                                v1::Optimizer *previous) {
  // Pushes read the optimizer under the shared lock.
  std::unique_lock<std::shared_mutex> lock(tablesMutex);
  Table *t;
  if (Status s = findTable(table, &t); !s.ok())
    return s;
  std::string what = str("table ", table, " '", t->config.name(), "'");
  runtime::OptimizerConfig o;
  if (Status s = toOptimizer(optimizer, what, &o); !s.ok())
    return s;
  // The rows hold the state of the table's optimizer (dim floats per
  // slot): another kind's would not fit them, or would be misread.
  if (o.kind != t->optimizer.kind)
    return Status::error(
        Code::FailedPrecondition,
        str(what, " is trained with ",
            runtime::OptimizerConfig::kindName(t->optimizer.kind),
            ", whose state its rows hold; it cannot change to ",
            runtime::OptimizerConfig::kindName(o.kind),
            " (only the hyper-parameters of its optimizer can)"));
  *previous = t->config.optimizer();
  *t->config.mutable_optimizer() = optimizer;
  t->optimizer = o;
  return {};
}

/// The keys of a request grouped by virtual shard: `order` lists request
/// positions shard by shard, `begin[v]..begin[v+1]` those of shard v.
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
