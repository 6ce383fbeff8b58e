//===- PSTest.cpp - The parameter-server shard, server and client ---------===//
//
// Exact sums of concurrent pushes (in-process and over gRPC on 127.0.0.1),
// exactly-once pushes, the error codes of bad requests, feature admission,
// TTL eviction, checkpoints restored onto another server count, and a
// bounded fuzz of the request handlers.
//
//===----------------------------------------------------------------------===//

#include "heterps/PS/Client.h"
#include "heterps/PS/ExpirySweeper.h"
#include "heterps/PS/KeyIndex.h"
#include "heterps/PS/LocalConnection.h"
#include "heterps/PS/Server.h"
#include "heterps/PS/Wire.h"
#include "heterps/Runtime/Optimizer.h"
#include "heterps/ps.grpc.pb.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <numeric>
#include <random>
#include <thread>
#include <unordered_map>

using namespace heterps;
using namespace heterps::ps;
namespace fs = std::filesystem;

namespace {

v1::TableConfig tableConfig(uint32_t id, uint32_t dim, const std::string &opt,
                            double lr, double init = 0) {
  v1::TableConfig c;
  c.set_table_id(id);
  c.set_name("t" + std::to_string(id));
  c.set_dim(dim);
  c.mutable_init()->set_kind("constant");
  c.mutable_init()->add_args(init);
  c.mutable_optimizer()->set_kind(opt);
  c.mutable_optimizer()->set_learning_rate(lr);
  c.mutable_optimizer()->set_beta1(0.9);
  c.mutable_optimizer()->set_beta2(0.999);
  c.mutable_optimizer()->set_epsilon(1e-8);
  return c;
}

/// An SGD table (learning rate 1) in RocksDB, `cacheRows` of it in memory.
v1::TableConfig rocksdbTableConfig(uint32_t id, uint32_t dim,
                                   uint64_t cacheRows, double init = 0) {
  v1::TableConfig c = tableConfig(id, dim, "sgd", 1.0, init);
  c.set_storage(v1::STORAGE_ROCKSDB);
  c.set_cache_rows(cacheRows);
  return c;
}

/// The memory one row of a dimension-4 SGD table takes on a shard.
uint64_t sgdRowBytes() {
  Shard probe{ShardOptions{}};
  bool created;
  probe.createTable(tableConfig(0, 4, "sgd", 1.0), &created);
  uint64_t key = 1;
  float row[4];
  probe.pull(0, &key, 1, row);
  return probe.memoryBytes();
}

std::vector<std::unique_ptr<Connection>>
localConnections(std::vector<std::unique_ptr<Shard>> &shards) {
  std::vector<std::unique_ptr<Connection>> out;
  for (auto &s : shards)
    out.push_back(connectLocal(*s));
  return out;
}

std::vector<std::unique_ptr<Shard>> makeShards(uint32_t n,
                                               const std::string &dir = "") {
  std::vector<std::unique_ptr<Shard>> shards;
  for (uint32_t i = 0; i < n; ++i) {
    ShardOptions o;
    o.index = i;
    o.count = n;
    o.checkpointDir = dir;
    shards.push_back(std::make_unique<Shard>(o));
  }
  return shards;
}

fs::path tempDir(const std::string &name) {
  fs::path p = fs::temp_directory_path() /
               ("heterps-ps-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

/// W workers (each its own client) push gradient g for every key R times,
/// each push naming every key twice; SGD with learning rate 1 must leave
/// every row at exactly init - W * R * 2 * g.
void exactSums(const std::function<std::unique_ptr<Client>()> &makeClient) {
  constexpr int W = 4, R = 25, K = 3000, D = 8;
  constexpr float g = 0.125f, init = 100.0f;
  {
    std::unique_ptr<Client> c = makeClient();
    c->connect();
    c->createTable(tableConfig(1, D, "sgd", 1.0, init));
  }
  std::vector<std::thread> workers;
  for (int w = 0; w < W; ++w)
    workers.emplace_back([&, w] {
      std::unique_ptr<Client> c = makeClient();
      c->createTable(tableConfig(1, D, "sgd", 1.0, init));
      std::vector<int64_t> keys;
      for (int k = 0; k < K; ++k)
        keys.push_back(k * 7919LL + (int64_t(1) << 40));
      for (int k = 0; k < K; ++k)
        keys.push_back(keys[(k * 13 + w) % K]);
      std::vector<float> grads(keys.size() * D, g);
      for (int r = 0; r < R; ++r)
        c->push(1, keys.data(), static_cast<int64_t>(keys.size()),
                grads.data());
    });
  for (std::thread &t : workers)
    t.join();
  std::unique_ptr<Client> c = makeClient();
  c->createTable(tableConfig(1, D, "sgd", 1.0, init));
  std::vector<int64_t> keys;
  for (int k = 0; k < K; ++k)
    keys.push_back(k * 7919LL + (int64_t(1) << 40));
  std::vector<float> rows(K * D);
  c->pull(1, keys.data(), K, rows.data());
  const float want = init - W * R * 2 * g;
  for (int i = 0; i < K * D; ++i)
    ASSERT_EQ(rows[i], want) << "key " << keys[i / D];
  v1::TableStatus s = c->describe(1);
  EXPECT_EQ(s.rows(), static_cast<uint64_t>(K));
  EXPECT_EQ(s.duplicate_pushes(), 0u);
  EXPECT_GT(s.memory_bytes(), static_cast<uint64_t>(K * D * 4));
}

} // namespace

TEST(PSShardTest, ExactSumsInProcess) {
  auto shards = makeShards(3);
  exactSums([&] { return std::make_unique<Client>(localConnections(shards)); });
}

TEST(PSShardTest, VirtualShardsSpreadKeys) {
  std::vector<int> count(kVirtualShards);
  for (uint64_t k = 0; k < 64000; ++k)
    ++count[virtualShardOf(k)];
  for (int c : count) {
    EXPECT_GT(c, 800);
    EXPECT_LT(c, 1200);
  }
}

TEST(PSShardTest, ExactlyOncePerClientAndSequence) {
  Shard s(ShardOptions{});
  bool created;
  ASSERT_TRUE(s.createTable(tableConfig(0, 2, "sgd", 1.0, 1.0), &created).ok());
  uint64_t key = 5;
  float grad[2] = {0.5f, 0.25f};
  v1::PushResponse r1, r2, r3;
  ASSERT_TRUE(s.push(0, &key, 1, grad, 42, 1, false, &r1).ok());
  // A retry after a lost response carries the same sequence number.
  ASSERT_TRUE(s.push(0, &key, 1, grad, 42, 1, false, &r2).ok());
  EXPECT_FALSE(r1.duplicate());
  EXPECT_TRUE(r2.duplicate());
  // Another client's seq 1 is its own.
  ASSERT_TRUE(s.push(0, &key, 1, grad, 43, 1, false, &r3).ok());
  EXPECT_FALSE(r3.duplicate());
  float row[2];
  ASSERT_TRUE(s.pull(0, &key, 1, row).ok());
  EXPECT_EQ(row[0], 1.0f - 2 * 0.5f);
  EXPECT_EQ(row[1], 1.0f - 2 * 0.25f);
  // A forged jump cannot silence client 42: it is refused, and the
  // client's next request still counts.
  v1::PushResponse forged, next;
  Status jump = s.push(0, &key, 1, grad, 42, uint64_t(1) << 62, false, &forged);
  EXPECT_EQ(jump.code, Code::InvalidArgument);
  EXPECT_NE(jump.message.find("jumps"), std::string::npos) << jump.message;
  ASSERT_TRUE(s.push(0, &key, 1, grad, 42, 2, false, &next).ok());
  EXPECT_FALSE(next.duplicate());
}

TEST(PSShardTest, DuplicateKeysInOnePushAreOneStep) {
  // Adam moves a row by about the learning rate per step: two separate
  // steps move it twice as far as one step with the summed gradient.
  Shard s(ShardOptions{});
  bool created;
  ASSERT_TRUE(s.createTable(tableConfig(0, 1, "adam", 0.1), &created).ok());
  uint64_t keys[2] = {9, 9};
  float grads[2] = {1.0f, 1.0f};
  v1::PushResponse r;
  ASSERT_TRUE(s.push(0, keys, 2, grads, 0, 0, false, &r).ok());
  float row;
  ASSERT_TRUE(s.pull(0, keys, 1, &row).ok());
  EXPECT_NEAR(row, -0.1f, 1e-6);
}

TEST(PSShardTest, BadRequestsGetTheirCodes) {
  ShardOptions o;
  o.maxKeysPerRequest = 100;
  o.maxMemoryBytes = 4000;
  Shard s(o);
  bool created;
  ASSERT_TRUE(s.createTable(tableConfig(3, 4, "sgd", 0.1), &created).ok());
  uint64_t key = 1;
  float row[4];
  Status st = s.pull(4, &key, 1, row);
  EXPECT_EQ(st.code, Code::NotFound);
  EXPECT_NE(st.message.find("no table 4"), std::string::npos) << st.message;
  // Another configuration under an existing id.
  st = s.createTable(tableConfig(3, 8, "sgd", 0.1), &created);
  EXPECT_EQ(st.code, Code::AlreadyExists) << st.message;
  EXPECT_TRUE(s.createTable(tableConfig(3, 4, "sgd", 0.1), &created).ok());
  EXPECT_FALSE(created);
  // Another id under an existing name.
  v1::TableConfig renamed = tableConfig(6, 4, "sgd", 0.1);
  renamed.set_name("t3");
  st = s.createTable(renamed, &created);
  EXPECT_EQ(st.code, Code::AlreadyExists);
  EXPECT_EQ(st.message, "table 6: the name 't3' is table 3's");
  // Initializers as #heterps.init checks them.
  v1::TableConfig init = tableConfig(7, 4, "sgd", 0.1);
  init.mutable_init()->set_kind("uniform");
  init.mutable_init()->clear_args();
  init.mutable_init()->add_args(1.0);
  init.mutable_init()->add_args(-1.0);
  st = s.createTable(init, &created);
  EXPECT_EQ(st.code, Code::InvalidArgument);
  EXPECT_EQ(st.message, "table 7 't7': uniform initializer needs low < high, "
                        "got (1, -1)");
  // Bad configurations.
  EXPECT_EQ(s.createTable(tableConfig(5, 0, "sgd", 0.1), &created).code,
            Code::InvalidArgument);
  EXPECT_EQ(s.createTable(tableConfig(5, 4, "lion", 0.1), &created).code,
            Code::InvalidArgument);
  // Rows for the NaN check below, before memory runs out.
  uint64_t two[2] = {1, 2};
  float before[8], after[8];
  ASSERT_TRUE(s.pull(3, two, 2, before).ok());
  // Oversize.
  std::vector<uint64_t> many(101, 1);
  std::vector<float> rows(101 * 4);
  st = s.pull(3, many.data(), many.size(), rows.data());
  EXPECT_EQ(st.code, Code::ResourceExhausted) << st.message;
  // The memory limit: rows of 16 bytes plus overhead, 4000 bytes in all.
  std::vector<uint64_t> fresh(90);
  for (size_t i = 0; i < fresh.size(); ++i)
    fresh[i] = 1000 + i;
  st = s.pull(3, fresh.data(), fresh.size(), rows.data());
  EXPECT_EQ(st.code, Code::ResourceExhausted) << st.message;
  EXPECT_LE(s.memoryBytes(), 4000u);
  // NaN gradients are rejected and change nothing.
  float grads[8] = {1, 1, 1, 1, 1, NAN, 1, 1};
  v1::PushResponse r;
  st = s.push(3, two, 2, grads, 0, 0, false, &r);
  EXPECT_EQ(st.code, Code::InvalidArgument);
  EXPECT_NE(st.message.find("for key 2"), std::string::npos) << st.message;
  ASSERT_TRUE(s.pull(3, two, 2, after).ok());
  EXPECT_EQ(0, std::memcmp(before, after, sizeof(before)));
}

TEST(PSShardTest, OptimizerSettingsAreValidated) {
  Shard s({});
  bool created;
  auto code = [&](const std::string &kind,
                  const std::function<void(v1::Optimizer &)> &set) {
    v1::TableConfig c = tableConfig(7, 2, kind, 0.1);
    set(*c.mutable_optimizer());
    Status st = s.createTable(c, &created);
    return std::make_pair(st.code, st.message);
  };
  const double nan = std::nan(""), inf = INFINITY;
  for (double beta : {0.0, 1.0, nan, inf}) {
    auto [c, message] =
        code("adam", [&](v1::Optimizer &o) { o.set_beta1(beta); });
    EXPECT_EQ(c, Code::InvalidArgument) << beta;
    EXPECT_NE(message.find("beta1 must be in (0, 1)"), std::string::npos)
        << message;
    EXPECT_EQ(code("adam", [&](v1::Optimizer &o) { o.set_beta2(beta); }).first,
              Code::InvalidArgument)
        << beta;
  }
  for (double eps : {0.0, -1e-8, nan, inf}) {
    EXPECT_EQ(
        code("adagrad", [&](v1::Optimizer &o) { o.set_epsilon(eps); }).first,
        Code::InvalidArgument)
        << eps;
    EXPECT_EQ(code("adam", [&](v1::Optimizer &o) { o.set_epsilon(eps); }).first,
              Code::InvalidArgument)
        << eps;
  }
  for (double decay : {-0.1, nan, inf})
    EXPECT_EQ(
        code("sgd", [&](v1::Optimizer &o) { o.set_weight_decay(decay); }).first,
        Code::InvalidArgument)
        << decay;
  for (double momentum : {1.0, -0.5, nan})
    EXPECT_EQ(
        code("momentum", [&](v1::Optimizer &o) { o.set_momentum(momentum); })
            .first,
        Code::InvalidArgument)
        << momentum;
  // SGD does not read the betas: a config without them is fine.
  EXPECT_EQ(code("sgd", [&](v1::Optimizer &o) { o.set_beta1(0); }).first,
            Code::OK);
}

// At the memory limit a push applies all of itself or nothing: before,
// the virtual shards before the one whose new row did not fit were
// updated, and a PushMany's tables before one with a NaN gradient.
TEST(PSShardTest, PushesAtTheMemoryLimitApplyAllOrNothing) {
  ShardOptions o;
  o.maxMemoryBytes = 64 << 10;
  Shard s(o);
  bool created;
  ASSERT_TRUE(s.createTable(tableConfig(0, 4, "sgd", 1.0, 0.5), &created).ok());
  ASSERT_TRUE(s.createTable(tableConfig(1, 4, "sgd", 1.0, 0.5), &created).ok());
  // Fill memory with rows of table 0 (spread over every virtual shard).
  std::vector<uint64_t> held;
  for (uint64_t k = 0;; ++k) {
    float row[4];
    if (!s.pull(0, &k, 1, row).ok())
      break;
    held.push_back(k);
  }
  uint64_t full = s.memoryBytes();
  ASSERT_GT(held.size(), 300u);
  ASSERT_LE(full, o.maxMemoryBytes);
  // Known keys followed by new ones, in many virtual shards.
  std::vector<uint64_t> keys(held.begin(), held.begin() + 200);
  for (uint64_t k = 0; k < 100; ++k)
    keys.push_back(1000000 + k * 7919);
  std::vector<float> grads(keys.size() * 4, 1.0f), rows(held.size() * 4);
  v1::PushResponse r;
  Status st =
      s.push(0, keys.data(), keys.size(), grads.data(), 0, 0, false, &r);
  EXPECT_EQ(st.code, Code::ResourceExhausted);
  EXPECT_NE(st.message.find("the push would create up to 100 rows"),
            std::string::npos)
      << st.message;
  EXPECT_NE(st.message.find("nothing of it was applied"), std::string::npos);
  EXPECT_EQ(s.memoryBytes(), full);
  ASSERT_TRUE(s.pull(0, held.data(), held.size(), rows.data()).ok());
  for (size_t i = 0; i < rows.size(); ++i)
    ASSERT_EQ(rows[i], 0.5f) << "key " << held[i / 4];
  // The known keys alone: no new row, so the push fits at the limit.
  ASSERT_TRUE(s.push(0, keys.data(), 200, grads.data(), 0, 0, false, &r).ok());
  EXPECT_EQ(s.memoryBytes(), full);
  ASSERT_TRUE(s.pull(0, keys.data(), 200, rows.data()).ok());
  EXPECT_EQ(rows[0], -0.5f);
  // A PushMany whose second table cannot take its new rows, and one with
  // a NaN in its second table: neither applies its first.
  std::vector<Shard::PushPart> parts = {
      {0, keys.data(), 200, grads.data(), false},
      {1, keys.data() + 200, 100, grads.data(), false}};
  st = s.pushMany(parts, 7, 1, &r);
  EXPECT_EQ(st.code, Code::ResourceExhausted) << st.message;
  std::vector<float> nan = grads;
  nan[5] = NAN;
  parts[1] = {1, held.data(), 2, nan.data(), false};
  st = s.pushMany(parts, 7, 1, &r);
  EXPECT_EQ(st.code, Code::InvalidArgument) << st.message;
  EXPECT_EQ(s.memoryBytes(), full);
  ASSERT_TRUE(s.pull(0, keys.data(), 200, rows.data()).ok());
  EXPECT_EQ(rows[0], -0.5f);
  // The same request number applies once it is whole.
  parts[1] = {1, held.data(), 0, grads.data(), false};
  ASSERT_TRUE(s.pushMany(parts, 7, 1, &r).ok());
  EXPECT_FALSE(r.duplicate());
  ASSERT_TRUE(s.pull(0, keys.data(), 200, rows.data()).ok());
  EXPECT_EQ(rows[0], -1.5f);
}

// A lower learning rate to fine-tune a restored table: the rows keep their
// Adagrad sums, which the next step divides by, on every server, and the
// checkpoints written afterwards hold the new rate.
TEST(PSShardTest, TableOptimizerHyperParametersChangeAndTheStateStays) {
  fs::path dir = tempDir("set-optimizer");
  auto shards = makeShards(2, dir.string());
  Client client(localConnections(shards));
  client.connect();
  client.createTable(tableConfig(0, 2, "adagrad", 0.1));
  std::vector<int64_t> keys = {5, 6, 7, 1000003};
  std::vector<float> grads = {1, 2, -0.5f, 0.25f, 3, 1, -2, 4};
  client.push(0, keys.data(), keys.size(), grads.data());
  v1::Optimizer lower = tableConfig(0, 2, "adagrad", 0.01).optimizer();
  client.setTableOptimizer(0, lower);
  client.push(0, keys.data(), keys.size(), grads.data());
  std::vector<float> got(grads.size());
  client.pull(0, keys.data(), keys.size(), got.data());

  runtime::OptimizerConfig o;
  o.kind = runtime::OptimizerConfig::Kind::Adagrad;
  o.learningRate = 0.1;
  o.epsilon = 1e-8;
  std::vector<float> want(grads.size(), 0.0f), sums(grads.size(), 0.0f);
  runtime::applyUpdate(o, want.data(), grads.data(), sums.data(),
                       static_cast<int64_t>(want.size()), 1);
  o.learningRate = 0.01;
  runtime::applyUpdate(o, want.data(), grads.data(), sums.data(),
                       static_cast<int64_t>(want.size()), 2);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_FLOAT_EQ(got[i], want[i]) << i;
  EXPECT_DOUBLE_EQ(client.describe(0).config().optimizer().learning_rate(),
                   0.01);

  // Another kind's state would not fit the rows; bad values are refused;
  // the table is left as it was.
  v1::Optimizer previous;
  Status st = shards[0]->setTableOptimizer(
      0, tableConfig(0, 2, "adam", 0.01).optimizer(), &previous);
  EXPECT_EQ(st.code, Code::FailedPrecondition);
  EXPECT_EQ(st.message, "table 0 't0' is trained with adagrad, whose state "
                        "its rows hold; it cannot change to adam (only the "
                        "hyper-parameters of its optimizer can)");
  v1::Optimizer negative = lower;
  negative.set_learning_rate(-1);
  EXPECT_EQ(shards[0]->setTableOptimizer(0, negative, &previous).code,
            Code::InvalidArgument);
  EXPECT_EQ(shards[0]->setTableOptimizer(9, lower, &previous).code,
            Code::NotFound);
  EXPECT_THROW(
      client.setTableOptimizer(0, tableConfig(0, 2, "sgd", 0.01).optimizer()),
      PSError);
  EXPECT_EQ(client.describe(0).config().optimizer().kind(), "adagrad");

  client.checkpoint("after", 2);
  auto restored = makeShards(2, dir.string());
  Client again(localConnections(restored));
  again.connect();
  EXPECT_EQ(again.restore("after"), 2);
  EXPECT_DOUBLE_EQ(again.describe(0).config().optimizer().learning_rate(),
                   0.01);
  fs::remove_all(dir);
}

TEST(PSShardTest, NonFiniteRowsCanBeSkipped) {
  Shard s(ShardOptions{});
  bool created;
  v1::TableConfig c = tableConfig(0, 2, "sgd", 1.0);
  c.set_non_finite(v1::NON_FINITE_SKIP);
  ASSERT_TRUE(s.createTable(c, &created).ok());
  uint64_t keys[2] = {1, 2};
  float grads[4] = {1, 1, INFINITY, 1};
  v1::PushResponse r;
  ASSERT_TRUE(s.push(0, keys, 2, grads, 0, 0, false, &r).ok());
  EXPECT_EQ(r.skipped_non_finite(), 1u);
  float rows[4];
  ASSERT_TRUE(s.pull(0, keys, 2, rows).ok());
  EXPECT_EQ(rows[0], -1.0f);
  EXPECT_EQ(rows[2], 0.0f);
}

TEST(PSShardTest, FeatureAdmissionAndTTL) {
  double seconds = 1000;
  ShardOptions options;
  options.clock = [&] { return seconds; };
  Shard s(options);
  bool created;
  v1::TableConfig c = tableConfig(0, 1, "sgd", 1.0, 5.0);
  c.set_admit_min_count(3);
  c.set_ttl_seconds(0.2);
  ASSERT_TRUE(s.createTable(c, &created).ok());
  uint64_t key = 77;
  float grad = 1, row;
  v1::PushResponse r;
  // Seen once (pull) and twice (push): not admitted, zeros, not applied.
  ASSERT_TRUE(s.pull(0, &key, 1, &row).ok());
  EXPECT_EQ(row, 0.0f);
  ASSERT_TRUE(s.push(0, &key, 1, &grad, 0, 0, false, &r).ok());
  EXPECT_EQ(r.not_admitted(), 1u);
  v1::TableStatus st;
  ASSERT_TRUE(s.describeTable(0, &st).ok());
  EXPECT_EQ(st.rows(), 0u);
  EXPECT_EQ(st.pending_keys(), 1u);
  // The third sighting admits it with its initial value.
  ASSERT_TRUE(s.pull(0, &key, 1, &row).ok());
  EXPECT_EQ(row, 5.0f);
  ASSERT_TRUE(s.push(0, &key, 1, &grad, 0, 0, false, &r).ok());
  ASSERT_TRUE(s.pull(0, &key, 1, &row).ok());
  EXPECT_EQ(row, 4.0f);
  seconds += 0.15;
  EXPECT_EQ(s.evictExpired(), 0u);
  seconds += 0.1;
  uint64_t memory = s.memoryBytes();
  EXPECT_EQ(s.evictExpired(), 1u);
  EXPECT_LT(s.memoryBytes(), memory);
  ASSERT_TRUE(s.describeTable(0, &st).ok());
  EXPECT_EQ(st.rows(), 0u);
  EXPECT_EQ(st.evicted_rows(), 1u);
}

TEST(PSShardTest, DenseTensors) {
  auto shards = makeShards(2);
  v1::DenseTensor t;
  t.set_name("w");
  t.add_shape(2);
  float v[2] = {1, 2};
  t.set_values(v, sizeof(v));
  v1::Optimizer o;
  o.set_kind("sgd");
  o.set_learning_rate(0.5);
  Shard &owner = *shards[serverOfName("w", 2)];
  Shard &other = *shards[1 - serverOfName("w", 2)];
  bool created;
  EXPECT_EQ(other.createDense(t, o, &created).code, Code::FailedPrecondition);
  ASSERT_TRUE(owner.createDense(t, o, &created).ok());
  float g[2] = {1, 1};
  v1::PushResponse r;
  ASSERT_TRUE(owner.pushDense("w", g, 2, 7, 1, &r).ok());
  ASSERT_TRUE(owner.pushDense("w", g, 2, 7, 1, &r).ok());
  EXPECT_TRUE(r.duplicate());
  EXPECT_EQ(owner.pushDense("w", g, 1, 7, 2, &r).code, Code::InvalidArgument);
  v1::DenseTensor out;
  ASSERT_TRUE(owner.pullDense("w", &out).ok());
  float got[2];
  std::memcpy(got, out.values().data(), sizeof(got));
  EXPECT_EQ(got[0], 0.5f);
  EXPECT_EQ(got[1], 1.5f);
  EXPECT_EQ(owner.pullDense("x", &out).code, Code::NotFound);
}

/// `latest` and --keep-checkpoints agree on which checkpoint is newest: the
/// one written last, whatever its step (a new run in an old run's directory
/// writes lower steps; `latest` took the highest step, pruning the last
/// written). A link to a checkpoint outside the directory is neither.
TEST(PSShardTest, LatestIsTheCheckpointWrittenLast) {
  fs::path dir = tempDir("latest"), outside = tempDir("latest-outside");
  auto checkpointAt = [](Shard &s, const std::string &name, int64_t step) {
    v1::CheckpointResponse r;
    Status st = s.checkpoint(name, step, &r);
    EXPECT_TRUE(st.ok()) << st.message;
  };
  auto restoredStep = [](Shard &s) {
    v1::RestoreResponse r;
    Status st = s.restore("latest", &r);
    EXPECT_TRUE(st.ok()) << st.message;
    return r.step();
  };
  // A checkpoint of step 100 outside, written after the others, linked in.
  ShardOptions o;
  o.checkpointDir = outside.string();
  Shard other(o);
  bool created;
  ASSERT_TRUE(other.createTable(tableConfig(0, 4, "sgd", 1.0), &created).ok());
  o.checkpointDir = dir.string();
  o.keepCheckpoints = 2;
  Shard s(o);
  ASSERT_TRUE(s.createTable(tableConfig(0, 4, "sgd", 1.0), &created).ok());
  // An old run's step 7, written an hour ago.
  checkpointAt(s, "old", 7);
  for (const fs::directory_entry &e : fs::directory_iterator(dir / "old"))
    fs::last_write_time(e.path(), fs::file_time_type::clock::now() -
                                      std::chrono::hours(1));
  checkpointAt(s, "new", 5);
  EXPECT_EQ(restoredStep(s), 5);
  checkpointAt(other, "big", 100);
  fs::create_symlink(outside / "big", dir / "zlink");
  EXPECT_EQ(restoredStep(s), 5);
  // Two kept: the old run's goes, though its step is the highest.
  checkpointAt(s, "newer", 6);
  EXPECT_FALSE(fs::exists(dir / "old"));
  EXPECT_TRUE(fs::exists(dir / "new"));
  EXPECT_TRUE(fs::exists(dir / "newer"));
  EXPECT_TRUE(fs::exists(outside / "big" / "MANIFEST.0-of-1"));
  EXPECT_EQ(restoredStep(s), 6);
  fs::remove_all(dir);
  fs::remove_all(outside);
}

/// A restore that expects tables the checkpoint does not hold as expected
/// (another vocabulary, another kind of optimizer, a missing table) is
/// refused before anything changes; hyper-parameters are not compared.
TEST(PSShardTest, ARestoreOfOtherTablesThanExpectedChangesNothing) {
  fs::path dir = tempDir("expect");
  ShardOptions o;
  o.checkpointDir = dir.string();
  Shard s(o);
  bool created;
  ASSERT_TRUE(
      s.createTable(tableConfig(0, 4, "adam", 0.1, 1.0), &created).ok());
  ASSERT_TRUE(s.createTable(tableConfig(1, 4, "sgd", 0.1, 1.0), &created).ok());
  v1::CheckpointResponse written;
  ASSERT_TRUE(s.checkpoint("ckpt", 3, &written).ok());
  // The tables move on: table 1 gets a row the checkpoint does not have.
  uint64_t key = 7;
  float row[4], grad[4] = {1, 1, 1, 1};
  v1::PushResponse pushed;
  ASSERT_TRUE(s.push(1, &key, 1, grad, 1, 1, false, &pushed).ok());
  auto restore = [&](std::vector<v1::TableConfig> expect) {
    v1::RestoreRequest request;
    request.set_name("ckpt");
    for (v1::TableConfig &c : expect)
      *request.add_expect_tables() = c;
    v1::RestoreResponse r;
    return s.restore(request, &r);
  };
  v1::TableConfig otherVocab = tableConfig(0, 4, "adam", 0.1);
  otherVocab.set_vocab(500);
  Status st = restore({otherVocab, tableConfig(1, 4, "momentum", 0.1),
                       tableConfig(2, 4, "sgd", 0.1)});
  EXPECT_EQ(st.code, Code::FailedPrecondition);
  EXPECT_NE(st.message.find("does not hold the tables as expected: table 0 "
                            "'t0': dim 4 and vocab 0 there, expected dim 4 "
                            "and vocab 500; table 1 't1': trained with sgd "
                            "there, expected momentum; table 2 't2': not in "
                            "it (a restored table keeps its kind of "
                            "optimizer"),
            std::string::npos)
      << st.message;
  ASSERT_TRUE(s.pull(1, &key, 1, row).ok());
  EXPECT_FLOAT_EQ(row[0], 0.9f) << "the refused restore changed the table";
  // Other hyper-parameters, or no optimizer (inference), restore.
  v1::TableConfig inference = tableConfig(1, 4, "sgd", 0);
  inference.clear_optimizer();
  st = restore({tableConfig(0, 4, "adam", 0.001), inference});
  EXPECT_TRUE(st.ok()) << st.message;
  ASSERT_TRUE(s.pull(1, &key, 1, row).ok());
  EXPECT_FLOAT_EQ(row[0], 1.0f) << "the restore left the pushed row";
  fs::remove_all(dir);
}

TEST(PSShardTest, CheckpointRestoresOntoAnotherServerCount) {
  fs::path dir = tempDir("reshard");
  auto three = makeShards(3, dir.string());
  auto clientOf = [](std::vector<std::unique_ptr<Shard>> &s) {
    auto c = std::make_unique<Client>(localConnections(s));
    c->connect();
    c->createTable(tableConfig(0, 4, "adam", 0.01, 0.5));
    return c;
  };
  std::unique_ptr<Client> c3 = clientOf(three);
  std::vector<int64_t> keys(5000);
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = static_cast<int64_t>(i * 1000003);
  std::vector<float> grads(keys.size() * 4);
  for (size_t i = 0; i < grads.size(); ++i)
    grads[i] = std::sin(0.1f * i);
  c3->push(0, keys.data(), keys.size(), grads.data());
  c3->checkpoint("ckpt-1", 1);
  // The checkpoint's next step, without interruption.
  c3->push(0, keys.data(), keys.size(), grads.data());
  std::vector<float> want(keys.size() * 4), got(keys.size() * 4);
  c3->pull(0, keys.data(), keys.size(), want.data());

  // Two servers restore it (with Adam's state and step counts) and take
  // the same step.
  auto two = makeShards(2, dir.string());
  auto c2 = std::make_unique<Client>(localConnections(two));
  c2->connect();
  EXPECT_EQ(c2->restore("latest"), 1);
  c2->createTable(tableConfig(0, 4, "adam", 0.01, 0.5));
  EXPECT_EQ(c2->describe(0).rows(), keys.size());
  c2->push(0, keys.data(), keys.size(), grads.data());
  c2->pull(0, keys.data(), keys.size(), got.data());
  EXPECT_EQ(want, got);

  // A corrupted file is named with its block and the tables stay as they
  // were. Server 2 of 3 wrote virtual shards 2, 5, 8...; the byte at 40 is
  // in the block of virtual shard 2, which server 0 of 2 owns now.
  fs::path file = dir / "ckpt-1" / "table-0.shard-2-of-3.rows";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  v1::RestoreResponse r;
  Status st = two[0]->restore("ckpt-1", &r);
  EXPECT_EQ(st.code, Code::FailedPrecondition);
  EXPECT_NE(st.message.find("table-0.shard-2-of-3.rows': the block of "
                            "virtual shard 2"),
            std::string::npos)
      << st.message;
  EXPECT_EQ(c2->describe(0).rows(), keys.size());
  // An interrupted checkpoint (a manifest missing) is not loadable, and
  // 'latest' skips it.
  fs::create_directories(dir / "ckpt-2");
  fs::copy_file(dir / "ckpt-1" / "MANIFEST.0-of-3",
                dir / "ckpt-2" / "MANIFEST.0-of-3");
  st = two[0]->restore("ckpt-2", &r);
  EXPECT_EQ(st.code, Code::FailedPrecondition);
  EXPECT_NE(st.message.find("incomplete"), std::string::npos) << st.message;
  // Names stay under the checkpoint directory.
  EXPECT_EQ(two[0]->restore("../x", &r).code, Code::InvalidArgument);
  EXPECT_EQ(two[0]->restore("/etc", &r).code, Code::InvalidArgument);
  fs::remove_all(dir);
}

//===----------------------------------------------------------------------===//
// Over gRPC on 127.0.0.1
//===----------------------------------------------------------------------===//

namespace {
struct Cluster {
  explicit Cluster(uint32_t n, const std::string &dir = "") {
    for (uint32_t i = 0; i < n; ++i) {
      ServerOptions o;
      o.listen = "127.0.0.1:0";
      o.shard.index = i;
      o.shard.count = n;
      o.shard.checkpointDir = dir;
      o.shard.maxKeysPerRequest = 100000;
      servers.push_back(Server::start(o));
      addresses.push_back("127.0.0.1:" +
                          std::to_string(servers.back()->port()));
    }
  }
  std::unique_ptr<Client> client(double deadline = 10) {
    ClientOptions o;
    o.deadlineSeconds = deadline;
    return client(o);
  }
  std::unique_ptr<Client> client(const ClientOptions &o) {
    std::vector<std::unique_ptr<Connection>> c;
    for (const std::string &a : addresses)
      c.push_back(connectRemote(a, o));
    return std::make_unique<Client>(std::move(c), o);
  }
  std::vector<std::unique_ptr<Server>> servers;
  std::vector<std::string> addresses;
};
} // namespace

TEST(PSServiceTest, ExactSumsOverGrpc) {
  Cluster cluster(2);
  exactSums([&] { return cluster.client(); });
}

/// Several tables pulled and pushed in one request per server end where
/// one call per table does: three tables (one with a vocabulary), keys with
/// duplicates, over gRPC to 2 servers, against the same calls made one table
/// at a time on another 2 servers.
TEST(PSServiceTest, ManyTablesInOneRequestEqualOneCallPerTable) {
  Cluster many(2), single(2);
  std::unique_ptr<Client> a = many.client(), b = single.client();
  for (Client *c : {a.get(), b.get()}) {
    c->connect();
    for (uint32_t id : {0u, 1u, 2u}) {
      v1::TableConfig config = tableConfig(id, 2 + id, "adagrad", 0.1, 0.5);
      if (id == 1)
        config.set_vocab(50);
      c->createTable(config);
    }
  }
  std::mt19937_64 rng(9);
  for (int step = 0; step < 5; ++step) {
    std::vector<std::vector<int64_t>> keys(3);
    std::vector<std::vector<float>> grads(3), rowsA(3), rowsB(3);
    std::vector<runtime::TablePull> pulls;
    std::vector<runtime::TablePush> pushes;
    for (int t = 0; t < 3; ++t) {
      for (int i = 0; i < 300; ++i)
        keys[t].push_back(static_cast<int64_t>(rng() % 200));
      int dim = 2 + t;
      for (size_t i = 0; i < keys[t].size() * dim; ++i)
        grads[t].push_back(static_cast<float>(rng() % 100) / 100 - 0.5f);
      rowsA[t].resize(keys[t].size() * dim);
      rowsB[t].resize(keys[t].size() * dim);
      pulls.push_back({t, keys[t].data(), 300, rowsA[t].data()});
      pushes.push_back({t, keys[t].data(), 300, grads[t].data()});
    }
    a->pullMany(pulls);
    for (int t = 0; t < 3; ++t)
      b->pull(t, keys[t].data(), 300, rowsB[t].data());
    for (int t = 0; t < 3; ++t)
      EXPECT_EQ(rowsA[t], rowsB[t]) << "table " << t << " step " << step;
    a->pushMany(pushes);
    for (int t = 0; t < 3; ++t)
      b->push(t, keys[t].data(), 300, grads[t].data());
  }
}

TEST(PSShardTest, PushOfSeveralTablesIsAppliedOnceAsAWhole) {
  Shard s(ShardOptions{});
  bool created;
  ASSERT_TRUE(s.createTable(tableConfig(0, 1, "sgd", 1.0, 1.0), &created).ok());
  ASSERT_TRUE(s.createTable(tableConfig(1, 2, "sgd", 1.0, 1.0), &created).ok());
  uint64_t k0 = 3, k1 = 4;
  float g0[1] = {0.5f}, g1[2] = {0.25f, 0.125f};
  std::vector<Shard::PushPart> parts = {{0, &k0, 1, g0, false},
                                        {1, &k1, 1, g1, false}};
  v1::PushResponse first, retry;
  ASSERT_TRUE(s.pushMany(parts, 42, 7, &first).ok());
  ASSERT_TRUE(s.pushMany(parts, 42, 7, &retry).ok());
  EXPECT_FALSE(first.duplicate());
  EXPECT_TRUE(retry.duplicate());
  float r0[1], r1[2];
  ASSERT_TRUE(s.pull(0, &k0, 1, r0).ok());
  ASSERT_TRUE(s.pull(1, &k1, 1, r1).ok());
  EXPECT_EQ(r0[0], 0.5f);
  EXPECT_EQ(r1[0], 0.75f);
  EXPECT_EQ(r1[1], 0.875f);
  // A bad part applies nothing.
  uint64_t bad = 5;
  parts.push_back({9, &bad, 1, g0, false});
  v1::PushResponse refused;
  EXPECT_EQ(s.pushMany(parts, 42, 8, &refused).code, Code::NotFound);
  ASSERT_TRUE(s.pull(0, &k0, 1, r0).ok());
  EXPECT_EQ(r0[0], 0.5f);
}

TEST(PSServiceTest, ClientChecksTheServerList) {
  Cluster cluster(2);
  ClientOptions o;
  std::vector<std::unique_ptr<Connection>> c;
  c.push_back(connectRemote(cluster.addresses[1], o));
  c.push_back(connectRemote(cluster.addresses[0], o));
  Client swapped(std::move(c), o);
  try {
    swapped.connect();
    FAIL() << "a swapped server list was accepted";
  } catch (const PSError &e) {
    EXPECT_EQ(e.code, Code::FailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("it is shard 1 of 2"),
              std::string::npos)
        << e.what();
  }
}

TEST(PSServiceTest, StoppedServerIsUnavailableWithinTheDeadline) {
  Cluster cluster(1);
  std::unique_ptr<Client> c = cluster.client(1.0);
  c->connect();
  c->createTable(tableConfig(0, 4, "sgd", 0.1));
  cluster.servers[0]->shutdown(0);
  cluster.servers.clear();
  int64_t key = 3;
  float row[4];
  auto start = std::chrono::steady_clock::now();
  try {
    c->pull(0, &key, 1, row);
    FAIL() << "a pull from a stopped server succeeded";
  } catch (const PSError &e) {
    EXPECT_EQ(e.code, Code::Unavailable) << e.what();
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, 3.0);
}

/// A table's hyper-parameters change on all of its servers or none: when
/// server 1 is down, server 0, changed first, is set back.
TEST(PSServiceTest, ATableOptimizerChangeThatAServerRefusesIsSetBack) {
  Cluster cluster(2);
  std::unique_ptr<Client> c = cluster.client(1.0);
  c->connect();
  c->createTable(tableConfig(0, 2, "adagrad", 0.1));
  cluster.servers[1]->shutdown(0);
  cluster.servers.pop_back();
  try {
    c->setTableOptimizer(0, tableConfig(0, 2, "adagrad", 0.01).optimizer());
    FAIL() << "a change with a server down succeeded";
  } catch (const PSError &e) {
    EXPECT_EQ(e.code, Code::Unavailable) << e.what();
    std::string what = e.what();
    EXPECT_EQ(
        what.rfind("setting the optimizer of table 0 't0' on PS server 1", 0),
        0u)
        << what;
    EXPECT_NE(what.find("; PS server 0 was set back"), std::string::npos)
        << what;
  }
  std::unique_ptr<Connection> first =
      connectRemote(cluster.addresses[0], ClientOptions{});
  v1::TableStatus status;
  ASSERT_TRUE(first->describeTable(0, &status).ok());
  EXPECT_DOUBLE_EQ(status.config().optimizer().learning_rate(), 0.1);
}

TEST(PSServiceTest, MalformedRequestsGetInvalidArgument) {
  Cluster cluster(1);
  std::unique_ptr<Client> c = cluster.client();
  c->createTable(tableConfig(0, 4, "sgd", 0.1));
  auto channel = grpc::CreateChannel(cluster.addresses[0],
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::ParameterServer::NewStub(channel);
  grpc::ClientContext c1, c2, c3;
  v1::PullRequest pull;
  pull.set_table_id(0);
  pull.set_keys(std::string(12, 'x'));
  v1::PullResponse pr;
  grpc::Status s = stub->Pull(&c1, pull, &pr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("not a multiple of 8"), std::string::npos);
  v1::PushRequest push;
  push.set_table_id(0);
  push.set_keys(std::string(16, '\0'));
  push.set_grads(std::string(12, '\0'));
  v1::PushResponse resp;
  s = stub->Push(&c2, push, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("need 32 bytes of gradients, got 12"),
            std::string::npos)
      << s.error_message();
  push.set_table_id(9);
  s = stub->Push(&c3, push, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
}

/// Pulls are answered from raw buffers (PullFrames.h); a client generated
/// from ps.proto reads them as the messages ps.proto declares, in every
/// wire format, and a request that is not a PullRequest is refused.
TEST(PSServiceTest, GeneratedStubsReadPullsAsMessages) {
  Cluster cluster(1);
  std::unique_ptr<Client> c = cluster.client();
  c->createTable(tableConfig(0, 3, "sgd", 1.0));
  c->createTable(tableConfig(1, 2, "sgd", 1.0));
  std::vector<int64_t> keys = {5, 9, 5, 1 << 20};
  std::vector<float> grads = {1, 2, 3, -1, -2, -3, 0.5f, 0.25f, 4, 8, 16, 32};
  c->push(0, keys.data(), 4, grads.data());
  std::vector<float> want(12);
  c->pull(0, keys.data(), 4, want.data());
  std::string keyBytes(reinterpret_cast<const char *>(keys.data()),
                       keys.size() * sizeof(int64_t));

  auto channel = grpc::CreateChannel(cluster.addresses[0],
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::ParameterServer::NewStub(channel);
  for (v1::Wire wire : {v1::WIRE_F32, v1::WIRE_F16, v1::WIRE_BF16}) {
    v1::PullManyRequest request;
    for (uint32_t table : {0u, 1u}) {
      v1::PullRequest *pull = request.add_pulls();
      pull->set_table_id(table);
      pull->set_keys(table == 0 ? keyBytes : "");
      pull->set_wire(wire);
    }
    grpc::ClientContext c1, c2;
    v1::PullResponse one;
    ASSERT_TRUE(stub->Pull(&c1, request.pulls(0), &one).ok());
    v1::PullManyResponse many;
    ASSERT_TRUE(stub->PullMany(&c2, request, &many).ok());
    ASSERT_EQ(many.pulls_size(), 2);
    EXPECT_TRUE(many.pulls(1).rows().empty());
    for (const std::string *rows : {&one.rows(), &many.pulls(0).rows()}) {
      std::vector<float> got(12);
      ASSERT_TRUE(decodeFloats(wire, *rows, 12, got.data())) << rows->size();
      for (size_t i = 0; i < 12; ++i)
        EXPECT_NEAR(got[i], want[i], wire == v1::WIRE_F32 ? 0 : 0.1) << i;
    }
  }
  grpc::GenericStub generic(channel);
  grpc::ClientContext c3;
  grpc::Slice garbage(std::string("\xff\xff\xff"));
  grpc::ByteBuffer request(&garbage, 1), response;
  std::promise<grpc::Status> answered;
  generic.UnaryCall(&c3, "/heterps.ps.v1.ParameterServer/Pull",
                    grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) { answered.set_value(s); });
  grpc::Status s = answered.get_future().get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "the request is not a heterps.ps.v1.PullRequest");
}

TEST(PSServiceTest, FuzzedRequestsNeverStopTheServer) {
  Cluster cluster(1);
  std::unique_ptr<Client> c = cluster.client();
  c->createTable(tableConfig(0, 3, "adagrad", 0.1));
  auto channel = grpc::CreateChannel(cluster.addresses[0],
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::ParameterServer::NewStub(channel);
  std::mt19937_64 rng(12345);
  auto bytes = [&](size_t max) {
    std::string s(rng() % (max + 1), '\0');
    for (char &ch : s)
      ch = static_cast<char>(rng());
    return s;
  };
  int ok = 0, rejected = 0;
  for (int i = 0; i < 1500; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    grpc::Status s;
    switch (rng() % 5) {
    case 0: {
      v1::PullRequest r;
      r.set_table_id(rng() % 3);
      r.set_keys(bytes(64));
      v1::PullResponse out;
      s = stub->Pull(&ctx, r, &out);
      break;
    }
    case 1: {
      v1::PushRequest r;
      // Random bytes parsed as a request: any field may be anything.
      r.ParseFromString(bytes(96));
      if (rng() % 2)
        r.set_table_id(0);
      v1::PushResponse out;
      s = stub->Push(&ctx, r, &out);
      break;
    }
    case 2: {
      v1::PushRequest r;
      r.set_table_id(0);
      size_t n = rng() % 8;
      r.set_keys(bytes(0) + std::string(n * 8, '\0'));
      std::string g = bytes(n * 12);
      if (rng() % 2)
        g.resize(n * 12);
      r.set_grads(g);
      r.set_client_id(rng() % 4);
      r.set_seq(rng() % 20);
      v1::PushResponse out;
      s = stub->Push(&ctx, r, &out);
      break;
    }
    case 3: {
      v1::CreateTableRequest r;
      r.ParseFromString(bytes(64));
      r.mutable_config()->set_table_id(100 + rng() % 50);
      v1::CreateTableResponse out;
      s = stub->CreateTable(&ctx, r, &out);
      break;
    }
    default: {
      v1::RestoreRequest r;
      std::string name = bytes(12);
      for (char &ch : name)
        ch = "ab./-_latest"[static_cast<unsigned char>(ch) % 12];
      r.set_name(name);
      v1::RestoreResponse out;
      s = stub->Restore(&ctx, r, &out);
      break;
    }
    }
    ASSERT_NE(s.error_code(), grpc::StatusCode::UNAVAILABLE) << "request " << i;
    ASSERT_NE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    (s.ok() ? ok : rejected) += 1;
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(rejected, 0);
  // Still serving.
  int64_t key = 1;
  float row[3];
  c->pull(0, &key, 1, row);
}

TEST(PSShardTest, RocksDBTierHoldsTablesLargerThanMemory) {
  fs::path dir = tempDir("rocksdb");
  constexpr int K = 20000, D = 16, W = 2, R = 3;
  auto makeShard = [&](uint32_t index, uint32_t count) {
    ShardOptions o;
    o.index = index;
    o.count = count;
    // Two workers' 1,000-key pushes may apply at once, each holding its
    // rows in memory meanwhile (2 x 124,000 bytes beside the cache).
    o.maxMemoryBytes = 512 << 10;
    o.rocksdbDir = (dir / "db").string();
    o.checkpointDir = (dir / "ckpt").string();
    return std::make_unique<Shard>(o);
  };
  std::vector<std::unique_ptr<Shard>> one;
  one.push_back(makeShard(0, 1));
  ClientOptions co;
  co.maxKeysPerRequest = 1000;
  std::vector<int64_t> keys(K);
  for (int k = 0; k < K; ++k)
    keys[k] = k * 104729LL;
  std::vector<float> grads(K * D, 0.5f), rows(K * D);

  // In memory the table does not fit: 20000 rows of 124 bytes.
  std::vector<std::unique_ptr<Shard>> memoryOnly;
  memoryOnly.push_back(makeShard(0, 1));
  Client memoryClient(localConnections(memoryOnly), co);
  memoryClient.createTable(tableConfig(1, D, "sgd", 1.0, 2.0));
  try {
    memoryClient.push(1, keys.data(), K, grads.data());
    FAIL() << "20000 rows fit in 512 KiB";
  } catch (const PSError &e) {
    EXPECT_EQ(e.code, Code::ResourceExhausted) << e.what();
  }

  // With the RocksDB tier it does, and the sums stay exact.
  v1::TableConfig c = rocksdbTableConfig(2, D, 640, 2.0);
  {
    Client setup(localConnections(one), co);
    setup.createTable(c);
  }
  std::vector<std::thread> workers;
  std::vector<std::string> errors(W);
  for (int w = 0; w < W; ++w)
    workers.emplace_back([&, w] {
      try {
        Client client(localConnections(one), co);
        client.createTable(c);
        for (int r = 0; r < R; ++r)
          client.push(2, keys.data(), K, grads.data());
      } catch (const std::exception &e) {
        errors[w] = e.what();
      }
    });
  for (std::thread &t : workers)
    t.join();
  for (const std::string &e : errors)
    ASSERT_EQ(e, "");
  Client client(localConnections(one), co);
  client.createTable(c);
  v1::TableStatus s = client.describe(2);
  EXPECT_EQ(s.rows(), static_cast<uint64_t>(K));
  EXPECT_GT(s.disk_rows(), static_cast<uint64_t>(K / 2));
  EXPECT_LE(s.memory_bytes(), 512u << 10);
  client.pull(2, keys.data(), K, rows.data());
  for (int i = 0; i < K * D; ++i)
    ASSERT_EQ(rows[i], 2.0f - W * R * 0.5f) << "key " << keys[i / D];

  // Its checkpoint holds the rows of memory and RocksDB, and restores onto
  // two servers (their own RocksDB directories).
  client.checkpoint("big", 7);
  std::vector<std::unique_ptr<Shard>> two;
  two.push_back(makeShard(0, 2));
  two.push_back(makeShard(1, 2));
  Client restored(localConnections(two), co);
  restored.connect();
  EXPECT_EQ(restored.restore("big"), 7);
  restored.createTable(c);
  EXPECT_EQ(restored.describe(2).rows(), static_cast<uint64_t>(K));
  std::vector<float> again(K * D);
  restored.pull(2, keys.data(), K, again.data());
  EXPECT_EQ(rows, again);
  fs::remove_all(dir);
}

/// A push with more keys than a RocksDB table's cache holds them all in
/// memory while it applies (a row that holds one of its gradients is not
/// moved out), so it reserves memory for them all: at a limit that the
/// cache fits but those rows do not, it is refused whole. (It reserved only
/// the cache's room, and failed part-way with some rows applied.)
TEST(PSShardTest, APushLargerThanATablesCacheReservesAllItsRows) {
  fs::path dir = tempDir("rocksdb-reserve");
  v1::TableConfig c = rocksdbTableConfig(0, 16, 640);
  ShardOptions o;
  // 640 rows of 124 bytes (79,360 bytes) fit; 1,000 (124,000) do not.
  o.maxMemoryBytes = 100 << 10;
  o.rocksdbDir = (dir / "db").string();
  Shard shard(o);
  bool created;
  ASSERT_TRUE(shard.createTable(c, &created).ok());
  constexpr int K = 1000;
  std::vector<uint64_t> keys(K);
  for (int k = 0; k < K; ++k)
    keys[k] = static_cast<uint64_t>(k) * 7919;
  std::vector<float> grads(K * 16, 0.5f);
  v1::PushResponse response;
  Status s =
      shard.push(0, keys.data(), K, grads.data(), 0, 0, false, &response);
  EXPECT_EQ(s.code, Code::ResourceExhausted);
  EXPECT_NE(s.message.find("nothing of it was applied"), std::string::npos)
      << s.message;
  v1::TableStatus status;
  ASSERT_TRUE(shard.describeTable(0, &status).ok());
  EXPECT_EQ(status.rows(), 0u);
  // Half of it fits, and applies.
  EXPECT_TRUE(
      shard.push(0, keys.data(), K / 2, grads.data(), 0, 0, false, &response)
          .ok());
  ASSERT_TRUE(shard.describeTable(0, &status).ok());
  EXPECT_EQ(status.rows(), static_cast<uint64_t>(K / 2));
  fs::remove_all(dir);
}

/// A push first reserves a row per key, more than it creates when its keys
/// have rows. A push whose count of new rows fits only once such a push
/// settles waits for it (it was refused with RESOURCE_EXHAUSTED), and one
/// that cannot fit even then is refused at once.
TEST(PSShardTest, APushWaitsForTheReservationsOfPushesBeingApplied) {
  const uint64_t rowBytes = sgdRowBytes();
  // The first push that reserves is held there until `release`.
  std::mutex m;
  std::condition_variable cv;
  bool hold = false, holding = false, release = false;
  ShardOptions o;
  o.maxMemoryBytes = 150 * rowBytes;
  o.pushReserved = [&] {
    std::unique_lock<std::mutex> l(m);
    if (!hold)
      return;
    hold = false;
    holding = true;
    cv.notify_all();
    cv.wait(l, [&] { return release; });
  };
  Shard s(o);
  bool created;
  ASSERT_TRUE(s.createTable(tableConfig(0, 4, "sgd", 1.0), &created).ok());
  ASSERT_TRUE(s.createTable(tableConfig(1, 4, "sgd", 1.0), &created).ok());
  auto keys = [](uint64_t from, uint64_t n) {
    std::vector<uint64_t> k(n);
    std::iota(k.begin(), k.end(), from);
    return k;
  };
  std::vector<uint64_t> held = keys(0, 60);
  std::vector<float> rows(held.size() * 4), grads(100 * 4, 1.0f);
  ASSERT_TRUE(s.pull(0, held.data(), held.size(), rows.data()).ok());
  ASSERT_EQ(s.memoryBytes(), 60 * rowBytes);
  // A: a push of the 60 rows held, which reserves 60 more.
  {
    std::lock_guard<std::mutex> l(m);
    hold = true;
  }
  auto a = std::async(std::launch::async, [&] {
    v1::PushResponse r;
    return s.push(0, held.data(), held.size(), grads.data(), 0, 0, false, &r);
  });
  {
    std::unique_lock<std::mutex> l(m);
    ASSERT_TRUE(
        cv.wait_for(l, std::chrono::seconds(60), [&] { return holding; }));
  }
  EXPECT_EQ(s.memoryBytes(), 120 * rowBytes);
  // 100 new rows do not fit beside the 60 held even when A creates none.
  std::vector<uint64_t> c0 = keys(1000, 60), c1 = keys(1000, 40);
  v1::PushResponse r;
  Status c = s.pushMany({{0, c0.data(), c0.size(), grads.data(), false},
                         {1, c1.data(), c1.size(), grads.data(), false}},
                        0, 0, &r);
  EXPECT_EQ(c.code, Code::ResourceExhausted);
  EXPECT_NE(c.message.find("the push of 2 tables would create up to 100 rows"),
            std::string::npos)
      << c.message;
  // 50 new rows fit once A settles: this push waits for it.
  std::vector<uint64_t> b1 = keys(2000, 50);
  auto b = std::async(std::launch::async, [&] {
    v1::PushResponse r;
    return s.push(1, b1.data(), b1.size(), grads.data(), 0, 0, false, &r);
  });
  EXPECT_EQ(b.wait_for(std::chrono::milliseconds(200)),
            std::future_status::timeout);
  {
    std::lock_guard<std::mutex> l(m);
    release = true;
  }
  cv.notify_all();
  Status sa = a.get(), sb = b.get();
  EXPECT_TRUE(sa.ok()) << sa.message;
  EXPECT_TRUE(sb.ok()) << sb.message;
  EXPECT_EQ(s.memoryBytes(), 110 * rowBytes);
  ASSERT_TRUE(s.pull(1, b1.data(), b1.size(), rows.data()).ok());
  EXPECT_EQ(rows[0], -1.0f);
}

/// A push that fails part-way (here rows that expired between its count
/// and its update, with memory full meanwhile) has changed the rows of the
/// virtual shards before the failure: its sequence number counts, so a
/// retry of it is a repeat and does not apply them twice.
TEST(PSShardTest, APushAppliedInPartIsNotAppliedAgain) {
  const uint64_t rowBytes = sgdRowBytes();
  double now = 0;
  std::function<void()> meanwhile;
  ShardOptions o;
  o.maxMemoryBytes = 150 * rowBytes;
  o.clock = [&] { return now; };
  o.pushReserved = [&] {
    if (meanwhile)
      std::exchange(meanwhile, nullptr)();
  };
  Shard s(o);
  v1::TableConfig c = tableConfig(0, 4, "sgd", 1.0);
  c.set_ttl_seconds(10);
  bool created;
  ASSERT_TRUE(s.createTable(c, &created).ok());
  // 40 keys of the first half of the virtual shards (applied first), 40 of
  // the second.
  std::vector<uint64_t> early, late;
  for (uint64_t k = 0; early.size() < 40 || late.size() < 40; ++k)
    (virtualShardOf(k) < kVirtualShards / 2 ? early : late).push_back(k);
  early.resize(40);
  late.resize(40);
  std::vector<float> rows(80 * 4);
  ASSERT_TRUE(s.pull(0, late.data(), late.size(), rows.data()).ok());
  now = 95;
  ASSERT_TRUE(s.pull(0, early.data(), early.size(), rows.data()).ok());
  // Once the push has counted no new row, the late rows expire and other
  // keys fill memory (on another thread: the push holds the tables' lock).
  meanwhile = [&] {
    std::async(std::launch::async, [&] {
      now = 100;
      EXPECT_EQ(s.evictExpired(), 40u);
      for (uint64_t k = 1000000;; ++k) {
        float row[4];
        if (!s.pull(0, &k, 1, row).ok())
          break;
      }
    }).get();
  };
  std::vector<uint64_t> keys = early;
  keys.insert(keys.end(), late.begin(), late.end());
  std::vector<float> grads(keys.size() * 4, 1.0f);
  v1::PushResponse r;
  Status st =
      s.push(0, keys.data(), keys.size(), grads.data(), 7, 1, false, &r);
  EXPECT_EQ(st.code, Code::ResourceExhausted);
  EXPECT_NE(st.message.find("the push's rows before that one were applied, "
                            "and a retry does not apply them again"),
            std::string::npos)
      << st.message;
  ASSERT_TRUE(s.pull(0, early.data(), early.size(), rows.data()).ok());
  EXPECT_EQ(rows[0], -1.0f);
  // The retry of the same push is a repeat.
  st = s.push(0, keys.data(), keys.size(), grads.data(), 7, 1, false, &r);
  EXPECT_TRUE(st.ok()) << st.message;
  EXPECT_TRUE(r.duplicate());
  ASSERT_TRUE(s.pull(0, early.data(), early.size(), rows.data()).ok());
  for (size_t i = 0; i < early.size() * 4; ++i)
    ASSERT_EQ(rows[i], -1.0f) << "key " << early[i / 4];
}

/// A sweeper drops the rows of TTL tables once they expire, looking for such
/// tables as they are created.
TEST(PSShardTest, ASweeperDropsExpiredRows) {
  std::atomic<double> now{0};
  ShardOptions o;
  o.clock = [&] { return now.load(); };
  Shard s(o);
  ExpirySweeper sweeper(s);
  v1::TableConfig c = tableConfig(0, 4, "sgd", 1.0);
  c.set_ttl_seconds(0.05);
  bool created;
  ASSERT_TRUE(s.createTable(c, &created).ok());
  std::vector<uint64_t> keys = {1, 2, 3};
  std::vector<float> rows(12);
  ASSERT_TRUE(s.pull(0, keys.data(), keys.size(), rows.data()).ok());
  EXPECT_EQ(s.shortestTtlSeconds(), 0.05);
  now = 1;
  v1::TableStatus status;
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(s.describeTable(0, &status).ok());
    if (status.rows() == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status.rows(), 0u);
  EXPECT_EQ(status.evicted_rows(), 3u);
  EXPECT_EQ(s.memoryBytes(), 0u);
}

/// A push holds all its keys' rows in memory while it applies, past a
/// RocksDB table's cache; once applied, the part goes back to its cache
/// (it stayed grown: one large push made the cache that push's size).
TEST(PSShardTest, ARocksDBTableReturnsToItsCacheAfterALargePush) {
  fs::path dir = tempDir("rocksdb-shrink");
  v1::TableConfig c = rocksdbTableConfig(0, 4, 64);
  ShardOptions o;
  o.rocksdbDir = (dir / "db").string();
  Shard shard(o);
  bool created;
  ASSERT_TRUE(shard.createTable(c, &created).ok());
  constexpr int K = 2000;
  std::vector<uint64_t> keys(K);
  std::iota(keys.begin(), keys.end(), 0);
  std::vector<float> grads(K * 4, 0.5f), rows(K * 4);
  v1::PushResponse response;
  ASSERT_TRUE(
      shard.push(0, keys.data(), K, grads.data(), 0, 0, false, &response).ok());
  v1::TableStatus status;
  ASSERT_TRUE(shard.describeTable(0, &status).ok());
  EXPECT_EQ(status.rows(), static_cast<uint64_t>(K));
  // One row per virtual shard stays in memory.
  EXPECT_EQ(status.disk_rows(), static_cast<uint64_t>(K - 64));
  EXPECT_EQ(shard.memoryBytes(), status.memory_bytes());
  EXPECT_EQ(status.memory_bytes(), 64 * (status.memory_bytes() / 64));
  ASSERT_TRUE(
      shard.push(0, keys.data(), K, grads.data(), 0, 0, false, &response).ok());
  ASSERT_TRUE(shard.describeTable(0, &status).ok());
  EXPECT_EQ(status.disk_rows(), static_cast<uint64_t>(K - 64))
      << "after push 2";
  ASSERT_TRUE(shard.pull(0, keys.data(), K, rows.data()).ok());
  for (int i = 0; i < K * 4; ++i)
    ASSERT_EQ(rows[i], -1.0f) << "key " << i / 4;
  ASSERT_TRUE(shard.describeTable(0, &status).ok());
  EXPECT_EQ(status.disk_rows(), static_cast<uint64_t>(K - 64));
  fs::remove_all(dir);
}

TEST(PSShardTest, RepeatedKeysResolveAcrossRequestSizes) {
  // The client deduplicates a request's keys in a table that keeps the
  // largest request's capacity and uses the part each request needs:
  // requests of other sizes, with repeats, must each see their own keys.
  std::vector<std::unique_ptr<Shard>> one;
  one.push_back(std::make_unique<Shard>(ShardOptions{}));
  Client client(localConnections(one));
  constexpr int D = 2, K = 40000;
  client.createTable(tableConfig(1, D, "sgd", 1.0));
  std::vector<int64_t> keys(K);
  std::vector<float> values(K * D);
  for (int k = 0; k < K; ++k) {
    keys[k] = k * 2654435761LL;
    values[k * D] = static_cast<float>(k);
    values[k * D + 1] = -static_cast<float>(k);
  }
  client.assign(1, keys.data(), K, values.data());
  std::mt19937 rng(3);
  for (int n : {30000, 7, 100, 30000, 1, 5000, 12}) {
    std::vector<int> pick(n);
    // Draw from a few keys for small requests, so that they repeat.
    std::uniform_int_distribution<int> key(0, n < 100 ? 3 : K - 1);
    std::vector<int64_t> ask(n);
    for (int i = 0; i < n; ++i)
      ask[i] = keys[pick[i] = key(rng)];
    std::vector<float> rows(n * D);
    client.pull(1, ask.data(), n, rows.data());
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(rows[i * D], static_cast<float>(pick[i])) << n << " " << i;
      ASSERT_EQ(rows[i * D + 1], -static_cast<float>(pick[i]));
    }
  }
}

TEST(PSShardTest, PullsThatEvictRowsReturnEveryRowsOwnValues) {
  // Pulls look rows up ahead of copying them. When a pull reloads a row
  // from RocksDB into a full cache, the row it evicts may be one the same
  // pull found earlier and has not copied yet: every key must still get
  // its own value.
  fs::path dir = tempDir("rocksdb-evict");
  constexpr int K = 6000, D = 8;
  ShardOptions o;
  o.rocksdbDir = (dir / "db").string();
  std::vector<std::unique_ptr<Shard>> one;
  one.push_back(std::make_unique<Shard>(o));
  Client client(localConnections(one));
  // 10 rows per virtual shard.
  v1::TableConfig c = rocksdbTableConfig(1, D, 640);
  client.createTable(c);
  std::vector<int64_t> keys(K);
  std::vector<float> values(K * D);
  for (int k = 0; k < K; ++k) {
    keys[k] = k * 7919LL;
    for (int d = 0; d < D; ++d)
      values[k * D + d] = static_cast<float>(k * D + d);
  }
  // Rows of the push being applied are not evicted: assigned in small
  // pushes, most rows go to RocksDB.
  for (int k = 0; k < K; k += 200)
    client.assign(1, keys.data() + k, 200, values.data() + k * D);
  ASSERT_GT(client.describe(1).disk_rows(), static_cast<uint64_t>(K / 2));
  // Every pull mixes rows in memory with rows in RocksDB, in an order
  // that differs from the one they were cached in.
  std::mt19937 rng(7);
  for (int round = 0; round < 4; ++round) {
    std::vector<int> order(K);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int64_t> ask(K);
    for (int i = 0; i < K; ++i)
      ask[i] = keys[order[i]];
    std::vector<float> rows(K * D);
    client.pull(1, ask.data(), K, rows.data());
    for (int i = 0; i < K; ++i)
      for (int d = 0; d < D; ++d)
        ASSERT_EQ(rows[i * D + d], values[order[i] * D + d])
            << "round " << round << ", key " << ask[i];
  }
  fs::remove_all(dir);
}

TEST(PSServiceTest, ServesTheHealthService) {
  // grpc.health.v1.Health/Check with an empty request (the whole server);
  // the answer is HealthCheckResponse{status: SERVING = 1}, bytes 08 01.
  Cluster cluster(1);
  auto channel = grpc::CreateChannel(cluster.addresses[0],
                                     grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  grpc::ByteBuffer request, response;
  grpc::Slice empty("");
  request = grpc::ByteBuffer(&empty, 1);
  grpc::CompletionQueue queue;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request,
                            &queue);
  call->StartCall();
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void *>(1));
  void *tag;
  bool ok;
  ASSERT_TRUE(queue.Next(&tag, &ok));
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice &s : slices)
    bytes.append(reinterpret_cast<const char *>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
}

TEST(PSServiceTest, RetriesUntilARestartedServerAnswers) {
  // A server goes away and comes back on its port 400 ms later: a pull
  // issued meanwhile waits and succeeds within its deadline, and a push
  // retried across the restart is applied once.
  ServerOptions o;
  std::unique_ptr<Server> first = Server::start(o);
  int port = first->port();
  std::string address = "127.0.0.1:" + std::to_string(port);
  ClientOptions co;
  co.deadlineSeconds = 5;
  std::vector<std::unique_ptr<Connection>> c;
  c.push_back(connectRemote(address, co));
  Client client(std::move(c), co);
  client.connect();
  first->shutdown(0);
  first.reset();
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    ServerOptions again;
    again.listen = address;
    first = Server::start(again);
  });
  auto start = std::chrono::steady_clock::now();
  client.createTable(tableConfig(0, 2, "sgd", 1.0, 3.0));
  int64_t key = 11;
  float grad[2] = {1, 1}, row[2];
  client.push(0, &key, 1, grad);
  client.pull(0, &key, 1, row);
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  restart.join();
  EXPECT_EQ(row[0], 2.0f);
  EXPECT_GE(secs, 0.3);
  EXPECT_LT(secs, 5.0);
}

TEST(PSServiceTest, ConcurrentCallsRetryARestartedServer) {
  // Two servers called at once; the second goes away and comes back (from
  // a checkpoint) 1.5 s later. Its first attempt times out (a quarter of
  // the 5 s deadline), the push is retried on the caller's thread and
  // applied once, and the pull that follows sees it.
  std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "ps-restart-two").string();
  std::filesystem::remove_all(dir);
  Cluster cluster(2, dir);
  ClientOptions co;
  co.deadlineSeconds = 5;
  std::vector<std::unique_ptr<Connection>> connections;
  for (const std::string &a : cluster.addresses)
    connections.push_back(connectRemote(a, co));
  Client client(std::move(connections), co);
  client.connect();
  client.createTable(tableConfig(0, 2, "sgd", 1.0, 3.0));
  client.checkpoint("before", 0);
  cluster.servers[1]->shutdown(0);
  cluster.servers[1].reset();
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ServerOptions again;
    again.listen = cluster.addresses[1];
    again.shard.index = 1;
    again.shard.count = 2;
    again.shard.checkpointDir = dir;
    again.restore = "before";
    cluster.servers[1] = Server::start(again);
  });
  std::vector<int64_t> keys(64);
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = static_cast<int64_t>(i);
  std::vector<float> grads(keys.size() * 2, 1.0f), rows(keys.size() * 2);
  auto start = std::chrono::steady_clock::now();
  client.pushMany({{0, keys.data(), 64, grads.data()}});
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  restart.join();
  client.pullMany({{0, keys.data(), 64, rows.data()}});
  for (float v : rows)
    ASSERT_EQ(v, 2.0f);
  EXPECT_GE(secs, 1.2);
  EXPECT_LT(secs, 5.0);
  std::filesystem::remove_all(dir);
}

TEST(PSServiceTest, RepeatedPushesOverGrpcAreDuplicates) {
  Cluster cluster(1);
  std::unique_ptr<Client> c = cluster.client();
  c->createTable(tableConfig(0, 1, "sgd", 1.0, 0.0));
  auto stub = v1::ParameterServer::NewStub(grpc::CreateChannel(
      cluster.addresses[0], grpc::InsecureChannelCredentials()));
  v1::PushRequest push;
  uint64_t key = 4;
  float grad = 1;
  push.set_table_id(0);
  push.set_keys(&key, 8);
  push.set_grads(&grad, 4);
  push.set_client_id(99);
  push.set_seq(1);
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    v1::PushResponse response;
    ASSERT_TRUE(stub->Push(&context, push, &response).ok());
    EXPECT_EQ(response.duplicate(), i > 0);
  }
  int64_t k = 4;
  float row;
  c->pull(0, &k, 1, &row);
  EXPECT_EQ(row, -1.0f);
  EXPECT_EQ(c->describe(0).duplicate_pushes(), 2u);
}

/// The rows pulled with a push (PushManyRequest.then_pull) are the rows as
/// the push left them: the same as a pull after it, with requests cut in
/// several (50 keys each) and keys of a table with a vocabulary.
TEST(PSServiceTest, PushThenPullAnswersTheRowsAfterThePush) {
  Cluster cluster(2);
  ClientOptions o;
  o.maxKeysPerRequest = 50;
  std::unique_ptr<Client> client = cluster.client(o);
  Client &c = *client;
  c.connect();
  for (uint32_t id : {0u, 1u}) {
    v1::TableConfig config = tableConfig(id, 3 + id, "adagrad", 0.1, 0.5);
    if (id == 1)
      config.set_vocab(40);
    c.createTable(config);
  }
  std::mt19937_64 rng(5);
  for (int step = 0; step < 4; ++step) {
    std::vector<std::vector<int64_t>> keys(2), later(2);
    std::vector<std::vector<float>> grads(2), with(2), after(2);
    std::vector<runtime::TablePush> pushes;
    std::vector<runtime::TablePull> pulls, check;
    for (int t = 0; t < 2; ++t) {
      int dim = 3 + t;
      for (int i = 0; i < 120; ++i) {
        keys[t].push_back(static_cast<int64_t>(rng() % 100));
        later[t].push_back(static_cast<int64_t>(rng() % 150));
      }
      for (size_t i = 0; i < keys[t].size() * dim; ++i)
        grads[t].push_back(static_cast<float>(rng() % 100) / 100 - 0.5f);
      with[t].resize(later[t].size() * dim);
      after[t].resize(later[t].size() * dim);
      pushes.push_back({t, keys[t].data(), 120, grads[t].data()});
      pulls.push_back({t, later[t].data(), 120, with[t].data()});
      check.push_back({t, later[t].data(), 120, after[t].data()});
    }
    c.pushManyThenPull(pushes, pulls);
    c.pullMany(check);
    for (int t = 0; t < 2; ++t)
      EXPECT_EQ(with[t], after[t]) << "table " << t << " step " << step;
  }
}

/// A client's pulls and pushes go in two lanes: one thread pulls while
/// another pushes (a pull ahead during a step's push), and pushes whose
/// pulls go on their own (more than a request's keys) hand them to the
/// pull lane. The pushes' sums stay exact, each pushManyThenPull sees its
/// own push applied, and every row a concurrent pull sees is one the pushes
/// made.
TEST(PSServiceTest, APullAndAPushOfOneClientRunAtOnce) {
  Cluster cluster(2);
  ClientOptions o;
  o.maxKeysPerRequest = 50;
  std::unique_ptr<Client> client = cluster.client(o);
  Client &c = *client;
  c.connect();
  c.createTable(tableConfig(0, 4, "sgd", 1.0));
  constexpr int K = 300, Steps = 60;
  std::vector<int64_t> keys(K);
  std::iota(keys.begin(), keys.end(), 0);
  std::vector<float> grads(K * 4, 0.5f);
  std::atomic<bool> pushing{true};
  std::string pullError;
  std::thread puller([&] {
    std::vector<float> rows(K * 4);
    while (pushing && pullError.empty()) {
      try {
        c.pullMany({{0, keys.data(), K, rows.data()}});
      } catch (const std::exception &e) {
        pullError = e.what();
      }
      for (float v : rows)
        if (v > 0 || v < -0.5f * Steps || std::fmod(v, 0.5f) != 0)
          pullError = "a pull saw " + std::to_string(v);
    }
  });
  std::vector<float> after(120 * 4);
  std::string pushError;
  for (int step = 1; step <= Steps && pushError.empty(); ++step) {
    try {
      c.pushManyThenPull({{0, keys.data(), K, grads.data()}},
                         {{0, keys.data(), 120, after.data()}});
    } catch (const std::exception &e) {
      pushError = e.what();
    }
    for (float v : after)
      if (pushError.empty() && v != -0.5f * step)
        pushError = "step " + std::to_string(step) + " pulled " +
                    std::to_string(v) + " after its push";
  }
  pushing = false;
  puller.join();
  ASSERT_EQ(pushError, "");
  EXPECT_EQ(pullError, "");
  std::vector<float> rows(K * 4);
  c.pull(0, keys.data(), K, rows.data());
  for (float v : rows)
    ASSERT_EQ(v, -0.5f * Steps);
}

/// With one server and no repeated keys the rows are decoded straight
/// into the caller's buffer; they equal those of one-key pulls.
TEST(PSServiceTest, OneServerPullsWithoutRepeatsGoInPlace) {
  Cluster cluster(1);
  std::unique_ptr<Client> c = cluster.client();
  c->connect();
  c->createTable(tableConfig(0, 3, "sgd", 0.1, 0.5));
  std::vector<int64_t> keys(500);
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = static_cast<int64_t>(i * 7919 % 1000);
  // Distinct rows: a gradient per key and dimension.
  std::vector<float> grads(keys.size() * 3);
  for (size_t i = 0; i < grads.size(); ++i)
    grads[i] = static_cast<float>(keys[i / 3] * 3 + i % 3);
  c->push(0, keys.data(), 500, grads.data());
  std::vector<float> whole(keys.size() * 3), many(keys.size() * 3), one(3);
  c->pull(0, keys.data(), 500, whole.data());
  EXPECT_NE(whole[3], whole[6]);
  c->pullMany({{0, keys.data(), 500, many.data()}});
  for (size_t i = 0; i < keys.size(); ++i) {
    c->pull(0, &keys[i], 1, one.data());
    for (int d = 0; d < 3; ++d) {
      ASSERT_EQ(whole[i * 3 + d], one[d]) << "key " << keys[i];
      ASSERT_EQ(many[i * 3 + d], one[d]) << "key " << keys[i];
    }
  }
}

/// A pull writes each row from the answer once, to the first place its key
/// appears, and copies it to the key's repeats. Rows assigned known values
/// (exact in 16 bits) are pulled back with many repeated keys through pull,
/// pullMany and pushManyThenPull, from 1 and 2 servers, embedded and over
/// gRPC in f32 and f16, in requests of 64 keys, one table wrapping its ids.
TEST(PSServiceTest, PullsWriteEveryRepeatOfAKey) {
  // At most 8 significant bits: exact in bf16, in which f16 clients send
  // values.
  auto value = [](int64_t row, int d) {
    return std::ldexp(static_cast<float>(row + 1), d);
  };
  auto check = [&](Client &c, const std::string &where) {
    SCOPED_TRACE(where);
    c.connect();
    c.createTable(tableConfig(0, 3, "sgd", 0.5));
    v1::TableConfig wrapped = tableConfig(1, 5, "sgd", 0.5);
    wrapped.set_vocab(150);
    c.createTable(wrapped);
    const int dims[2] = {3, 5};
    const int64_t rows[2] = {200, 150};
    for (int t = 0; t < 2; ++t) {
      std::vector<int64_t> all(rows[t]);
      std::iota(all.begin(), all.end(), 0);
      std::vector<float> values;
      for (int64_t k : all)
        for (int d = 0; d < dims[t]; ++d)
          values.push_back(value(k, d));
      c.assign(t, all.data(), rows[t], values.data());
    }
    std::mt19937_64 rng(17);
    std::vector<std::vector<int64_t>> keys(2);
    std::vector<std::vector<float>> one(2), many(2), then(2), zero(2);
    std::vector<runtime::TablePull> pulls, thenPulls;
    std::vector<runtime::TablePush> pushes;
    for (int t = 0; t < 2; ++t) {
      for (int i = 0; i < 300; ++i)
        keys[t].push_back(static_cast<int64_t>(rng() % 200));
      for (auto *v : {&one[t], &many[t], &then[t], &zero[t]})
        v->assign(300 * dims[t], -1.0f);
      std::fill(zero[t].begin(), zero[t].end(), 0.0f);
      c.pull(t, keys[t].data(), 300, one[t].data());
      pulls.push_back({t, keys[t].data(), 300, many[t].data()});
      thenPulls.push_back({t, keys[t].data(), 300, then[t].data()});
      pushes.push_back({t, keys[t].data(), 300, zero[t].data()});
    }
    c.pullMany(pulls);
    c.pushManyThenPull(pushes, thenPulls);
    for (int t = 0; t < 2; ++t)
      for (int i = 0; i < 300; ++i)
        for (int d = 0; d < dims[t]; ++d) {
          float want = value(keys[t][i] % rows[t], d);
          size_t at = static_cast<size_t>(i) * dims[t] + d;
          ASSERT_EQ(one[t][at], want)
              << "pull, table " << t << " key " << keys[t][i] << " at " << i;
          ASSERT_EQ(many[t][at], want) << "pullMany, table " << t << " key "
                                       << keys[t][i] << " at " << i;
          ASSERT_EQ(then[t][at], want) << "pushManyThenPull, table " << t
                                       << " key " << keys[t][i] << " at " << i;
        }
  };
  for (uint32_t n : {1u, 2u}) {
    ClientOptions o;
    o.maxKeysPerRequest = 64;
    std::vector<std::unique_ptr<Shard>> shards = makeShards(n);
    Client embedded(localConnections(shards), o);
    check(embedded, "embedded, " + std::to_string(n) + " servers");
    for (const char *wire : {"f32", "f16"}) {
      Cluster cluster(n);
      o.wire = wire;
      check(*cluster.client(o), std::string("gRPC ") + wire + ", " +
                                    std::to_string(n) + " servers");
    }
  }
}

/// A retried push answers its pulls too; a pull of an unknown table
/// refuses the whole request before the push is applied.
TEST(PSServiceTest, PushThenPullOverGrpcIsCheckedFirst) {
  Cluster cluster(1);
  std::unique_ptr<Client> c = cluster.client();
  c->createTable(tableConfig(0, 1, "sgd", 1.0, 0.0));
  auto stub = v1::ParameterServer::NewStub(grpc::CreateChannel(
      cluster.addresses[0], grpc::InsecureChannelCredentials()));
  uint64_t key = 4;
  float grad = 1;
  v1::PushManyRequest request;
  v1::PushRequest *push = request.add_pushes();
  push->set_table_id(0);
  push->set_keys(&key, 8);
  push->set_grads(&grad, 4);
  v1::PullRequest *pull = request.add_then_pull();
  pull->set_table_id(0);
  pull->set_keys(&key, 8);
  request.set_client_id(7);
  request.set_seq(1);
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext context;
    v1::PushResponse response;
    ASSERT_TRUE(stub->PushMany(&context, request, &response).ok());
    EXPECT_EQ(response.duplicate(), i > 0);
    ASSERT_EQ(response.pulled_size(), 1);
    float row;
    ASSERT_EQ(response.pulled(0).rows().size(), sizeof(row));
    std::memcpy(&row, response.pulled(0).rows().data(), sizeof(row));
    EXPECT_EQ(row, -1.0f);
  }
  request.set_seq(2);
  request.mutable_then_pull(0)->set_table_id(3);
  grpc::ClientContext context;
  v1::PushResponse response;
  grpc::Status refused = stub->PushMany(&context, request, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::NOT_FOUND)
      << refused.error_message();
  int64_t k = 4;
  float row;
  c->pull(0, &k, 1, &row);
  EXPECT_EQ(row, -1.0f);
}

/// With a token per worker, a push's client id counts within its token: a
/// worker that forges another worker's client id and a large sequence
/// number does not make that worker's next push look like a repeat. Worker
/// tokens allow data calls, not admin ones; other tokens are refused.
TEST(PSServiceTest, WorkerTokensBindClientIds) {
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.adminToken = "admin-token-0123456789";
  o.workerTokens = {{"w0", "token-of-worker-zero"},
                    {"w1", "token-of-worker-one!"}};
  std::unique_ptr<Server> server = Server::start(o);
  auto stub = v1::ParameterServer::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()),
                          grpc::InsecureChannelCredentials()));
  auto call = [&](const std::string &token, auto rpc) {
    grpc::ClientContext context;
    if (!token.empty())
      context.AddMetadata("authorization", "Bearer " + token);
    return rpc(&context);
  };
  v1::CreateTableRequest create;
  *create.mutable_config() = tableConfig(0, 1, "sgd", 1.0, 0.0);
  v1::CreateTableResponse created;
  ASSERT_TRUE(call(o.adminToken, [&](grpc::ClientContext *c) {
                return stub->CreateTable(c, create, &created);
              }).ok());
  // Changing a table's optimizer is the admin's.
  v1::SetTableOptimizerRequest set;
  set.set_table_id(0);
  *set.mutable_optimizer() = tableConfig(0, 1, "sgd", 0.5).optimizer();
  v1::SetTableOptimizerResponse previous;
  EXPECT_EQ(call("token-of-worker-zero",
                 [&](grpc::ClientContext *c) {
                   return stub->SetTableOptimizer(c, set, &previous);
                 })
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(call(o.adminToken, [&](grpc::ClientContext *c) {
                return stub->SetTableOptimizer(c, set, &previous);
              }).ok());
  EXPECT_EQ(previous.previous().learning_rate(), 1.0);
  set.mutable_optimizer()->set_learning_rate(1.0);
  ASSERT_TRUE(call(o.adminToken, [&](grpc::ClientContext *c) {
                return stub->SetTableOptimizer(c, set, &previous);
              }).ok());
  create.mutable_config()->set_table_id(1);
  EXPECT_EQ(call("token-of-worker-zero",
                 [&](grpc::ClientContext *c) {
                   return stub->CreateTable(c, create, &created);
                 })
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  uint64_t key = 4;
  float grad = 1;
  auto push = [&](const std::string &token, uint64_t client, uint64_t seq,
                  v1::PushResponse *response) {
    v1::PushRequest request;
    request.set_table_id(0);
    request.set_keys(&key, 8);
    request.set_grads(&grad, 4);
    request.set_client_id(client);
    request.set_seq(seq);
    return call(token, [&](grpc::ClientContext *c) {
      return stub->Push(c, request, response);
    });
  };
  v1::PushResponse response;
  ASSERT_TRUE(push("token-of-worker-zero", 77, 1, &response).ok());
  EXPECT_FALSE(response.duplicate());
  // Worker 1 forges worker 0's client id with a sequence number ahead.
  ASSERT_TRUE(push("token-of-worker-one!", 77, 1000, &response).ok());
  EXPECT_FALSE(response.duplicate());
  ASSERT_TRUE(push("token-of-worker-zero", 77, 2, &response).ok());
  EXPECT_FALSE(response.duplicate());
  ASSERT_TRUE(push("token-of-worker-zero", 77, 2, &response).ok());
  EXPECT_TRUE(response.duplicate());
  EXPECT_EQ(push("not-a-token-of-this-server", 77, 3, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(push("", 77, 3, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::PullRequest pull;
  pull.set_table_id(0);
  pull.set_keys(&key, 8);
  v1::PullResponse pulled;
  ASSERT_TRUE(call("token-of-worker-one!", [&](grpc::ClientContext *c) {
                return stub->Pull(c, pull, &pulled);
              }).ok());
  float row;
  ASSERT_EQ(pulled.rows().size(), sizeof(row));
  std::memcpy(&row, pulled.rows().data(), sizeof(row));
  EXPECT_EQ(row, -3.0f); // three pushes applied, one repeat
  server->shutdown(1);
}

TEST(PSServiceTest, WorkerTokensFileIsChecked) {
  std::string dir = ::testing::TempDir();
  auto write = [&](const std::string &name, const std::string &text) {
    std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
  };
  std::map<std::string, std::string> tokens = readWorkerTokens(
      write("good.tokens", "# workers\nw0 aaaaaaaaaaaaaaaa\n\nw-1.b "
                           "bbbbbbbbbbbbbbbb\n"));
  EXPECT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens["w-1.b"], "bbbbbbbbbbbbbbbb");
  auto error = [&](const std::string &text) {
    try {
      readWorkerTokens(write("bad.tokens", text));
    } catch (const runtime::RuntimeError &e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error("w0\n").find("line 1: expected 'NAME TOKEN'"),
            std::string::npos);
  EXPECT_NE(error("w0 short\n").find("has 5 characters; at least 16"),
            std::string::npos);
  EXPECT_NE(error("w0 aaaaaaaaaaaaaaaa\nw0 bbbbbbbbbbbbbbbb\n")
                .find("line 2: worker 'w0' is listed twice"),
            std::string::npos);
  EXPECT_NE(error("w0 aaaaaaaaaaaaaaaa\nw1 aaaaaaaaaaaaaaaa\n")
                .find("line 2: worker 'w1' has the token of another worker"),
            std::string::npos);
  EXPECT_NE(error("w/0 aaaaaaaaaaaaaaaa\n").find("worker name 'w/0'"),
            std::string::npos);
  EXPECT_NE(error("# none\n").find("names no worker"), std::string::npos);
}

TEST(PSShardTest, KeyIndexAgreesWithAStandardMap) {
  // Random inserts, lookups and erases (runs of colliding keys included)
  // against std::unordered_map.
  KeyIndex index;
  std::unordered_map<uint64_t, uint32_t> reference;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint64_t key = rng() % 5000;
    if (rng() % 8 == 0)
      key <<= 40; // keys that differ only in high bits
    uint32_t found = index.find(key);
    auto it = reference.find(key);
    ASSERT_EQ(found == KeyIndex::kNone, it == reference.end()) << key;
    if (it != reference.end()) {
      ASSERT_EQ(found, it->second);
    }
    if (rng() % 3 == 0) {
      ASSERT_EQ(index.erase(key), it != reference.end());
      reference.erase(key);
    } else if (it == reference.end()) {
      index.insert(key, static_cast<uint32_t>(i));
      reference[key] = static_cast<uint32_t>(i);
    }
    ASSERT_EQ(index.size(), reference.size());
  }
  size_t seen = 0;
  index.forEach([&](uint64_t key, uint32_t slot) {
    ++seen;
    EXPECT_EQ(reference.at(key), slot);
  });
  EXPECT_EQ(seen, reference.size());
}

TEST(PSShardTest, KeysOfAnotherServerAreRefused) {
  auto shards = makeShards(2);
  bool created;
  for (auto &s : shards)
    ASSERT_TRUE(s->createTable(tableConfig(0, 2, "sgd", 1.0), &created).ok());
  uint64_t key = 0;
  while (serverOfShard(virtualShardOf(key), 2) != 1)
    ++key;
  float row[2];
  Status st = shards[0]->pull(0, &key, 1, row);
  EXPECT_EQ(st.code, Code::FailedPrecondition);
  EXPECT_NE(st.message.find("belongs to PS server 1 of 2"), std::string::npos)
      << st.message;
  v1::PushResponse r;
  EXPECT_EQ(shards[0]->push(0, &key, 1, row, 5, 1, false, &r).code,
            Code::FailedPrecondition);
  EXPECT_TRUE(shards[1]->pull(0, &key, 1, row).ok());
}

/// Ids map to rows as ONNX's Gather indexes: modulo the vocabulary,
/// negative ones from the end, without overflow at the extremes.
TEST(TableKey, WrapsIdsAndCountsNegativeOnesFromTheEnd) {
  using runtime::tableKey;
  EXPECT_EQ(tableKey(7, 0), 7u);
  EXPECT_EQ(tableKey(-1, 0), UINT64_MAX);
  EXPECT_EQ(tableKey(5, 100), 5u);
  EXPECT_EQ(tableKey(105, 100), 5u);
  EXPECT_EQ(tableKey(-1, 100), 99u);
  EXPECT_EQ(tableKey(-100, 100), 0u);
  EXPECT_EQ(tableKey(-101, 100), 99u);
  EXPECT_EQ(tableKey(INT64_MIN, 1), 0u);
  // |INT64_MIN| is 2^63.
  EXPECT_EQ(tableKey(INT64_MIN, 1000000000000000000ull),
            1000000000000000000ull -
                9223372036854775808ull % 1000000000000000000ull);
  EXPECT_EQ(tableKey(INT64_MAX, UINT64_MAX), uint64_t(INT64_MAX));
  EXPECT_EQ(tableKey(-1, UINT64_MAX), UINT64_MAX - 1);
}
