//===- Server.cpp - The PS gRPC server ------------------------------------===//

#include "heterps/PS/Server.h"

#include "heterps/PS/ExpirySweeper.h"
#include "heterps/PS/Log.h"
#include "heterps/PS/PullFrames.h"
#include "heterps/PS/Wire.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Support/AtomicFile.h"
#include "heterps/ps.grpc.pb.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

using namespace heterps;
using namespace heterps::ps;

namespace {

grpc::Status toGrpc(const Status &s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code), s.message);
}

grpc::Status invalid(const std::string &message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

/// What a call may do: read and train (Pull, Push, dense tensors,
/// DescribeTable, ServerInfo), or change what the service holds
/// (CreateTable, SetTableOptimizer, CreateDense, Checkpoint, Restore, pushes
/// that assign rows).
enum class Access { Data, Admin };

/// The tokens a server checks: each call carries "authorization: Bearer
/// TOKEN". Without an admin token, the token allows admin calls too; the
/// admin token allows every call. Worker tokens allow data calls, each as
/// an identity of its own (1, 2, ...; 0 is the shared token's or none).
class AccessCheck {
public:
  AccessCheck(std::string token, std::string adminToken,
              const std::map<std::string, std::string> &workerTokens)
      : token(std::move(token)), adminToken(std::move(adminToken)) {
    for (const auto &[name, workerToken] : workerTokens)
      workers.push_back(workerToken);
  }

  bool perWorker() const { return !workers.empty(); }

  grpc::Status check(grpc::ServerContextBase *context, Access access,
                     uint32_t *identity = nullptr) const {
    if (identity)
      *identity = 0;
    if (token.empty() && adminToken.empty() && workers.empty())
      return grpc::Status::OK;
    std::string given;
    auto range = context->client_metadata().equal_range("authorization");
    for (auto it = range.first; it != range.second; ++it) {
      std::string value(it->second.data(), it->second.size());
      if (value.rfind("Bearer ", 0) == 0)
        given = value.substr(7);
    }
    bool admin =
        !adminToken.empty() ? same(given, adminToken) : same(given, token);
    if (admin) {
      if (identity)
        *identity = static_cast<uint32_t>(workers.size()) + 1;
      return grpc::Status::OK;
    }
    if (access == Access::Data &&
        ((token.empty() && workers.empty()) || same(given, token)))
      return grpc::Status::OK;
    int worker = -1;
    // Every worker token is compared, so the time says nothing of which.
    for (size_t i = 0; i < workers.size(); ++i)
      if (same(given, workers[i]))
        worker = static_cast<int>(i);
    if (worker >= 0 && access == Access::Data) {
      if (identity)
        *identity = static_cast<uint32_t>(worker) + 1;
      return grpc::Status::OK;
    }
    if (given.empty())
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "this server needs a token (--ps-token-file)");
    bool dataToken = same(given, token) || worker >= 0;
    return grpc::Status(access == Access::Admin && dataToken
                            ? grpc::StatusCode::PERMISSION_DENIED
                            : grpc::StatusCode::UNAUTHENTICATED,
                        access == Access::Admin && dataToken
                            ? "this call needs the admin token"
                            : "the token is not this server's");
  }

private:
  /// Compares in time that depends only on the lengths.
  static bool same(const std::string &a, const std::string &b) {
    if (a.size() != b.size() || a.empty())
      return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i)
      diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
  }
  std::string token, adminToken;
  std::vector<std::string> workers;
};

/// With worker tokens, a push's client id counts within its token's
/// identity: the server keeps sequence numbers per (identity, client id)
/// under a key of its own, so a worker cannot make another worker's pushes
/// look like repeats by forging its client id.
class ClientKeys {
public:
  explicit ClientKeys(bool perIdentity) : perIdentity(perIdentity) {}
  uint64_t key(uint32_t identity, uint64_t client) {
    // Client 0 is not deduplicated, whoever sends it.
    if (!perIdentity || client == 0)
      return client;
    std::lock_guard<std::mutex> lock(mutex);
    uint64_t &k = keys[{identity, client}];
    if (k == 0)
      k = ++last;
    return k;
  }

private:
  bool perIdentity;
  std::mutex mutex;
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> keys;
  uint64_t last = 0;
};

/// Pull and PullMany answer raw byte buffers (PullFrames.h): their rows
/// are sent from where the lookup wrote them.
using ServiceBase = v1::ParameterServer::WithRawCallbackMethod_Pull<
    v1::ParameterServer::WithRawCallbackMethod_PullMany<
        v1::ParameterServer::Service>>;

class Service final : public ServiceBase {
public:
  Service(Shard &shard, const ServerOptions &options)
      : shard(shard),
        access(options.authToken, options.adminToken, options.workerTokens),
        clientKeys(access.perWorker()) {}

  grpc::Status handleCreateTable(grpc::ServerContext *context,
                                 const v1::CreateTableRequest *request,
                                 v1::CreateTableResponse *response) {
    // Workers "create" their tables at start-up: with the data token that
    // is allowed where it only checks a table that exists.
    if (grpc::Status denied = access.check(context, Access::Admin);
        !denied.ok()) {
      v1::TableStatus status;
      if (!access.check(context, Access::Data).ok() ||
          !shard.describeTable(request->config().table_id(), &status).ok())
        return denied;
    }
    bool created = false;
    Status s = shard.createTable(request->config(), &created);
    response->set_created(created);
    return toGrpc(s);
  }

  grpc::Status
  handleSetTableOptimizer(grpc::ServerContext *context,
                          const v1::SetTableOptimizerRequest *request,
                          v1::SetTableOptimizerResponse *response) {
    if (grpc::Status denied = access.check(context, Access::Admin);
        !denied.ok())
      return denied;
    Status s =
        shard.setTableOptimizer(request->table_id(), request->optimizer(),
                                response->mutable_previous());
    if (s.ok())
      log(LogLevel::Info,
          "table " + std::to_string(request->table_id()) + ": optimizer " +
              response->previous().ShortDebugString() + " replaced by " +
              request->optimizer().ShortDebugString());
    return toGrpc(s);
  }

  grpc::Status handleDescribeTable(grpc::ServerContext *context,
                                   const v1::DescribeTableRequest *request,
                                   v1::TableStatus *response) {
    if (grpc::Status denied = access.check(context, Access::Data); !denied.ok())
      return denied;
    return toGrpc(shard.describeTable(request->table_id(), response));
  }

  grpc::Status handlePull(grpc::ServerContextBase *context,
                          const v1::PullRequest &request,
                          grpc::ByteBuffer *response) {
    if (grpc::Status denied = access.check(context, Access::Data); !denied.ok())
      return denied;
    if (grpc::Status s = checkWire(request.table_id(), request.wire()); !s.ok())
      return s;
    thread_local std::vector<uint64_t> keys;
    uint32_t dim;
    if (grpc::Status s =
            decodeKeys(request.table_id(), request.keys(), keys, &dim);
        !s.ok())
      return s;
    v1::Wire wire = static_cast<v1::Wire>(request.wire());
    PullResponseFrames frames(*rowBuffers, {wireBytes(wire, keys.size() * dim)},
                              /*many=*/false);
    if (grpc::Status s =
            pullRows(request.table_id(), keys, dim, wire, frames.rows(0));
        !s.ok())
      return s;
    *response = frames.release();
    return grpc::Status::OK;
  }

  grpc::Status handlePush(grpc::ServerContext *context,
                          const v1::PushRequest *request,
                          v1::PushResponse *response) {
    uint32_t identity;
    if (grpc::Status denied = access.check(
            context, (request->assign() ? Access::Admin : Access::Data),
            &identity);
        !denied.ok())
      return denied;
    thread_local std::vector<uint64_t> keys;
    thread_local std::vector<float> grads;
    uint32_t dim;
    if (grpc::Status s =
            decodeKeys(request->table_id(), request->keys(), keys, &dim);
        !s.ok())
      return s;
    if (grpc::Status s = decodeValues(*request, keys.size(), dim, grads);
        !s.ok())
      return s;
    return toGrpc(shard.push(request->table_id(), keys.data(), keys.size(),
                             grads.data(),
                             clientKeys.key(identity, request->client_id()),
                             request->seq(), request->assign(), response));
  }

  grpc::Status handlePullMany(grpc::ServerContextBase *context,
                              const v1::PullManyRequest &request,
                              grpc::ByteBuffer *response) {
    if (grpc::Status denied = access.check(context, Access::Data); !denied.ok())
      return denied;
    if (grpc::Status s = checkTotalKeys(request.pulls()); !s.ok())
      return s;
    // Every part is checked before the response is laid out.
    thread_local std::vector<std::vector<uint64_t>> keys;
    thread_local std::vector<uint32_t> dims;
    thread_local std::vector<size_t> rowBytes;
    size_t count = request.pulls_size();
    if (keys.size() < count)
      keys.resize(count);
    dims.resize(count);
    rowBytes.resize(count);
    for (size_t i = 0; i < count; ++i) {
      const v1::PullRequest &pull = request.pulls(i);
      if (grpc::Status s = checkWire(pull.table_id(), pull.wire()); !s.ok())
        return s;
      if (grpc::Status s =
              decodeKeys(pull.table_id(), pull.keys(), keys[i], &dims[i]);
          !s.ok())
        return s;
      rowBytes[i] = wireBytes(static_cast<v1::Wire>(pull.wire()),
                              keys[i].size() * dims[i]);
    }
    PullResponseFrames frames(*rowBuffers, rowBytes, /*many=*/true);
    for (size_t i = 0; i < count; ++i) {
      const v1::PullRequest &pull = request.pulls(i);
      if (grpc::Status s =
              pullRows(pull.table_id(), keys[i], dims[i],
                       static_cast<v1::Wire>(pull.wire()), frames.rows(i));
          !s.ok())
        return s;
    }
    *response = frames.release();
    return grpc::Status::OK;
  }

  grpc::Status handlePushMany(grpc::ServerContext *context,
                              const v1::PushManyRequest *request,
                              v1::PushResponse *response) {
    bool assign = false;
    for (const v1::PushRequest &push : request->pushes())
      assign |= push.assign();
    uint32_t identity;
    if (grpc::Status denied = access.check(
            context, assign ? Access::Admin : Access::Data, &identity);
        !denied.ok())
      return denied;
    if (grpc::Status s = checkTotalKeys(request->pushes()); !s.ok())
      return s;
    if (grpc::Status s = checkTotalKeys(request->then_pull()); !s.ok())
      return s;
    thread_local std::vector<std::vector<uint64_t>> keys;
    thread_local std::vector<std::vector<float>> values;
    size_t count = request->pushes_size();
    if (keys.size() < count) {
      keys.resize(count);
      values.resize(count);
    }
    std::vector<Shard::PushPart> parts(count);
    for (size_t i = 0; i < count; ++i) {
      const v1::PushRequest &push = request->pushes(i);
      uint32_t dim;
      if (grpc::Status s =
              decodeKeys(push.table_id(), push.keys(), keys[i], &dim);
          !s.ok())
        return s;
      if (grpc::Status s = decodeValues(push, keys[i].size(), dim, values[i]);
          !s.ok())
        return s;
      parts[i] = {push.table_id(), keys[i].data(), keys[i].size(),
                  values[i].data(), push.assign()};
    }
    // The rows to answer after the pushes are checked first: a request
    // that is refused applies nothing.
    thread_local std::vector<std::vector<uint64_t>> pullKeys;
    thread_local std::vector<uint32_t> pullDims;
    size_t pulls = request->then_pull_size();
    if (pullKeys.size() < pulls)
      pullKeys.resize(pulls);
    pullDims.resize(pulls);
    for (size_t i = 0; i < pulls; ++i) {
      const v1::PullRequest &pull = request->then_pull(i);
      if (grpc::Status s = checkWire(pull.table_id(), pull.wire()); !s.ok())
        return s;
      if (grpc::Status s = decodeKeys(pull.table_id(), pull.keys(), pullKeys[i],
                                      &pullDims[i]);
          !s.ok())
        return s;
    }
    if (Status s = shard.pushMany(
            parts, clientKeys.key(identity, request->client_id()),
            request->seq(), response);
        !s.ok())
      return toGrpc(s);
    for (size_t i = 0; i < pulls; ++i) {
      const v1::PullRequest &pull = request->then_pull(i);
      v1::Wire wire = static_cast<v1::Wire>(pull.wire());
      std::string *rows = response->add_pulled()->mutable_rows();
      rows->resize(wireBytes(wire, pullKeys[i].size() * pullDims[i]));
      if (grpc::Status s = pullRows(pull.table_id(), pullKeys[i], pullDims[i],
                                    wire, rows->data());
          !s.ok())
        return s;
    }
    return grpc::Status::OK;
  }

  grpc::Status handleCreateDense(grpc::ServerContext *context,
                                 const v1::CreateDenseRequest *request,
                                 v1::CreateDenseResponse *response) {
    if (grpc::Status denied = access.check(context, Access::Admin);
        !denied.ok()) {
      v1::DenseTensor existing;
      if (!access.check(context, Access::Data).ok() ||
          !shard.pullDense(request->tensor().name(), &existing).ok())
        return denied;
    }
    bool created = false;
    Status s =
        shard.createDense(request->tensor(), request->optimizer(), &created);
    response->set_created(created);
    return toGrpc(s);
  }

  grpc::Status handlePullDense(grpc::ServerContext *context,
                               const v1::PullDenseRequest *request,
                               v1::DenseTensor *response) {
    if (grpc::Status denied = access.check(context, Access::Data); !denied.ok())
      return denied;
    return toGrpc(shard.pullDense(request->name(), response));
  }

  grpc::Status handlePushDense(grpc::ServerContext *context,
                               const v1::PushDenseRequest *request,
                               v1::PushResponse *response) {
    uint32_t identity;
    if (grpc::Status denied = access.check(context, Access::Data, &identity);
        !denied.ok())
      return denied;
    if (request->grads().size() % sizeof(float))
      return invalid("dense tensor '" + request->name() + "': gradient of " +
                     std::to_string(request->grads().size()) +
                     " bytes, not a multiple of 4 (little-endian f32)");
    std::vector<float> grads(request->grads().size() / sizeof(float));
    if (!grads.empty())
      std::memcpy(grads.data(), request->grads().data(),
                  request->grads().size());
    return toGrpc(
        shard.pushDense(request->name(), grads.data(), grads.size(),
                        clientKeys.key(identity, request->client_id()),
                        request->seq(), response));
  }

  grpc::Status handleCheckpoint(grpc::ServerContext *context,
                                const v1::CheckpointRequest *request,
                                v1::CheckpointResponse *response) {
    if (grpc::Status denied = access.check(context, Access::Admin);
        !denied.ok())
      return denied;
    Status s = shard.checkpoint(request->name(), request->step(), response);
    std::string what = "checkpoint '" + request->name() + "' at step " +
                       std::to_string(request->step());
    if (!s.ok()) {
      log(LogLevel::Warning, what + ": " + codeName(s.code) + ": " + s.message);
      return toGrpc(s);
    }
    what += ": " + std::to_string(response->files()) + " files, " +
            std::to_string(response->bytes()) + " bytes";
    for (int i = 0; i < response->pruned_size(); ++i)
      what += (i ? ", '" : "; deleted by --keep-checkpoints: '") +
              response->pruned(i) + "'";
    log(LogLevel::Info, what);
    return grpc::Status::OK;
  }

  grpc::Status handleRestore(grpc::ServerContext *context,
                             const v1::RestoreRequest *request,
                             v1::RestoreResponse *response) {
    if (grpc::Status denied = access.check(context, Access::Admin);
        !denied.ok())
      return denied;
    Status s = shard.restore(*request, response);
    if (s.ok())
      log(LogLevel::Info, "restored '" + response->name() + "' at step " +
                              std::to_string(response->step()) + " (" +
                              std::to_string(response->rows()) + " rows)");
    else
      log(LogLevel::Warning, "restoring '" + request->name() +
                                 "': " + codeName(s.code) + ": " + s.message);
    return toGrpc(s);
  }

  grpc::Status handleServerInfo(grpc::ServerContext *context,
                                const v1::ServerInfoRequest *,
                                v1::ServerInfoResponse *response) {
    if (grpc::Status denied = access.check(context, Access::Data); !denied.ok())
      return denied;
    shard.info(response);
    response->set_caller_access(access.check(context, Access::Admin).ok()
                                    ? v1::CALLER_ACCESS_ADMIN
                                    : v1::CALLER_ACCESS_DATA);
    return grpc::Status::OK;
  }

  // The calls, each timed into its method's histogram.
  grpc::Status
  SetTableOptimizer(grpc::ServerContext *context,
                    const v1::SetTableOptimizerRequest *request,
                    v1::SetTableOptimizerResponse *response) override {
    return timed(Method::SetTableOptimizer, [&] {
      return handleSetTableOptimizer(context, request, response);
    });
  }

  grpc::Status CreateTable(grpc::ServerContext *context,
                           const v1::CreateTableRequest *request,
                           v1::CreateTableResponse *response) override {
    return timed(Method::CreateTable,
                 [&] { return handleCreateTable(context, request, response); });
  }

  grpc::Status DescribeTable(grpc::ServerContext *context,
                             const v1::DescribeTableRequest *request,
                             v1::TableStatus *response) override {
    return timed(Method::DescribeTable, [&] {
      return handleDescribeTable(context, request, response);
    });
  }

  grpc::ServerUnaryReactor *Pull(grpc::CallbackServerContext *context,
                                 const grpc::ByteBuffer *request,
                                 grpc::ByteBuffer *response) override {
    return answerRaw<v1::PullRequest>(
        context, Method::Pull, *request, [&](const v1::PullRequest &pull) {
          pulledKeys += pull.keys().size() / sizeof(uint64_t);
          return handlePull(context, pull, response);
        });
  }

  grpc::Status Push(grpc::ServerContext *context,
                    const v1::PushRequest *request,
                    v1::PushResponse *response) override {
    pushedKeys += request->keys().size() / sizeof(uint64_t);
    return timed(Method::Push,
                 [&] { return handlePush(context, request, response); });
  }

  grpc::ServerUnaryReactor *PullMany(grpc::CallbackServerContext *context,
                                     const grpc::ByteBuffer *request,
                                     grpc::ByteBuffer *response) override {
    return answerRaw<v1::PullManyRequest>(
        context, Method::PullMany, *request,
        [&](const v1::PullManyRequest &pulls) {
          for (const v1::PullRequest &pull : pulls.pulls())
            pulledKeys += pull.keys().size() / sizeof(uint64_t);
          return handlePullMany(context, pulls, response);
        });
  }

  grpc::Status PushMany(grpc::ServerContext *context,
                        const v1::PushManyRequest *request,
                        v1::PushResponse *response) override {
    for (const v1::PushRequest &push : request->pushes())
      pushedKeys += push.keys().size() / sizeof(uint64_t);
    return timed(Method::PushMany,
                 [&] { return handlePushMany(context, request, response); });
  }

  grpc::Status CreateDense(grpc::ServerContext *context,
                           const v1::CreateDenseRequest *request,
                           v1::CreateDenseResponse *response) override {
    return timed(Method::CreateDense,
                 [&] { return handleCreateDense(context, request, response); });
  }

  grpc::Status PullDense(grpc::ServerContext *context,
                         const v1::PullDenseRequest *request,
                         v1::DenseTensor *response) override {
    return timed(Method::PullDense,
                 [&] { return handlePullDense(context, request, response); });
  }

  grpc::Status PushDense(grpc::ServerContext *context,
                         const v1::PushDenseRequest *request,
                         v1::PushResponse *response) override {
    return timed(Method::PushDense,
                 [&] { return handlePushDense(context, request, response); });
  }

  grpc::Status Checkpoint(grpc::ServerContext *context,
                          const v1::CheckpointRequest *request,
                          v1::CheckpointResponse *response) override {
    return timed(Method::Checkpoint,
                 [&] { return handleCheckpoint(context, request, response); });
  }

  grpc::Status Restore(grpc::ServerContext *context,
                       const v1::RestoreRequest *request,
                       v1::RestoreResponse *response) override {
    return timed(Method::Restore,
                 [&] { return handleRestore(context, request, response); });
  }

  grpc::Status ServerInfo(grpc::ServerContext *context,
                          const v1::ServerInfoRequest *request,
                          v1::ServerInfoResponse *response) override {
    return timed(Method::ServerInfo,
                 [&] { return handleServerInfo(context, request, response); });
  }

  grpc::Status Metrics(grpc::ServerContext *context, const v1::MetricsRequest *,
                       v1::MetricsResponse *response) override {
    return timed(Method::Metrics, [&] {
      if (grpc::Status denied = access.check(context, Access::Data);
          !denied.ok())
        return denied;
      response->set_text(metricsText());
      return grpc::Status::OK;
    });
  }

private:
  enum class Method {
    CreateTable,
    DescribeTable,
    SetTableOptimizer,
    Pull,
    Push,
    PullMany,
    PushMany,
    CreateDense,
    PullDense,
    PushDense,
    Checkpoint,
    Restore,
    ServerInfo,
    Metrics,
    Count
  };
  static constexpr const char *kMethodNames[] = {
      "CreateTable", "DescribeTable", "SetTableOptimizer", "Pull",
      "Push",        "PullMany",      "PushMany",          "CreateDense",
      "PullDense",   "PushDense",     "Checkpoint",        "Restore",
      "ServerInfo",  "Metrics"};
  /// Upper bounds of the latency histogram's buckets, in seconds.
  static constexpr double kBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                        0.005,  0.01,    0.025,  0.05,  0.1,
                                        0.25,   0.5,     1,      2.5,   10};
  static constexpr size_t kNumBuckets = sizeof(kBuckets) / sizeof(double);
  struct MethodStats {
    std::atomic<uint64_t> calls{0}, errors{0}, nanos{0};
    std::atomic<uint64_t> buckets[kNumBuckets + 1] = {};
  };
  MethodStats stats[static_cast<size_t>(Method::Count)];

  template <typename Fn> grpc::Status timed(Method method, Fn &&fn) {
    auto start = std::chrono::steady_clock::now();
    grpc::Status status = fn();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    MethodStats &m = stats[static_cast<size_t>(method)];
    ++m.calls;
    if (!status.ok())
      ++m.errors;
    m.nanos += static_cast<uint64_t>(seconds * 1e9);
    size_t b = 0;
    while (b < kNumBuckets && seconds > kBuckets[b])
      ++b;
    ++m.buckets[b];
    return status;
  }

  /// The server's metrics in Prometheus's text format.
  std::string metricsText() {
    std::ostringstream out;
    auto label = [](const std::string &value) {
      std::string escaped;
      for (char c : value) {
        if (c == '\\' || c == '"')
          escaped += '\\';
        if (c == '\n') {
          escaped += "\\n";
          continue;
        }
        escaped += c;
      }
      return escaped;
    };
    out << "# HELP heterps_ps_rpc_seconds Time to answer a call.\n"
           "# TYPE heterps_ps_rpc_seconds histogram\n";
    for (size_t m = 0; m < static_cast<size_t>(Method::Count); ++m) {
      const MethodStats &st = stats[m];
      uint64_t cumulative = 0;
      for (size_t b = 0; b <= kNumBuckets; ++b) {
        cumulative += st.buckets[b];
        out << "heterps_ps_rpc_seconds_bucket{method=\"" << kMethodNames[m]
            << "\",le=\"";
        if (b == kNumBuckets)
          out << "+Inf";
        else
          out << kBuckets[b];
        out << "\"} " << cumulative << "\n";
      }
      out << "heterps_ps_rpc_seconds_sum{method=\"" << kMethodNames[m] << "\"} "
          << st.nanos * 1e-9 << "\n";
      out << "heterps_ps_rpc_seconds_count{method=\"" << kMethodNames[m]
          << "\"} " << st.calls << "\n";
    }
    out << "# HELP heterps_ps_rpc_errors_total Calls answered with an "
           "error.\n# TYPE heterps_ps_rpc_errors_total counter\n";
    for (size_t m = 0; m < static_cast<size_t>(Method::Count); ++m)
      out << "heterps_ps_rpc_errors_total{method=\"" << kMethodNames[m]
          << "\"} " << stats[m].errors << "\n";
    out << "# HELP heterps_ps_pulled_keys_total Keys pulled.\n"
           "# TYPE heterps_ps_pulled_keys_total counter\n"
           "heterps_ps_pulled_keys_total "
        << pulledKeys << "\n";
    out << "# HELP heterps_ps_pushed_keys_total Keys pushed.\n"
           "# TYPE heterps_ps_pushed_keys_total counter\n"
           "heterps_ps_pushed_keys_total "
        << pushedKeys << "\n";
    v1::ServerInfoResponse info;
    shard.info(&info);
    out << "# HELP heterps_ps_memory_bytes Bytes of rows in memory.\n"
           "# TYPE heterps_ps_memory_bytes gauge\n"
           "heterps_ps_memory_bytes "
        << info.memory_bytes() << "\n";
    out << "# HELP heterps_ps_pull_buffer_bytes Bytes of idle buffers kept "
           "for the rows of pull responses.\n"
           "# TYPE heterps_ps_pull_buffer_bytes gauge\n"
           "heterps_ps_pull_buffer_bytes "
        << rowBuffers->idleBytes() << "\n";
    struct Family {
      const char *name, *type, *help;
      uint64_t (*get)(const v1::TableStatus &);
    };
    const Family families[] = {
        {"heterps_ps_rows", "gauge", "Rows of a table on this server.",
         [](const v1::TableStatus &t) { return uint64_t(t.rows()); }},
        {"heterps_ps_pushes_applied_total", "counter",
         "Pushes applied to a table.",
         [](const v1::TableStatus &t) { return uint64_t(t.pushes_applied()); }},
        {"heterps_ps_duplicate_pushes_total", "counter",
         "Repeated pushes recognised and not applied.",
         [](const v1::TableStatus &t) {
           return uint64_t(t.duplicate_pushes());
         }},
        {"heterps_ps_evicted_rows_total", "counter",
         "Rows evicted by a table's TTL.",
         [](const v1::TableStatus &t) { return uint64_t(t.evicted_rows()); }},
    };
    for (const Family &f : families) {
      out << "# HELP " << f.name << " " << f.help << "\n# TYPE " << f.name
          << " " << f.type << "\n";
      for (const v1::TableStatus &t : info.tables())
        out << f.name << "{table=\"" << label(t.config().name()) << "\"} "
            << f.get(t) << "\n";
    }
    // What heterps-ps set-optimizer and retuning workers change.
    out << "# HELP heterps_ps_learning_rate The learning rate of a table's "
           "optimizer.\n# TYPE heterps_ps_learning_rate gauge\n";
    for (const v1::TableStatus &t : info.tables())
      out << "heterps_ps_learning_rate{table=\"" << label(t.config().name())
          << "\",optimizer=\""
          << (t.config().optimizer().kind().empty()
                  ? "sgd"
                  : label(t.config().optimizer().kind()))
          << "\"} " << t.config().optimizer().learning_rate() << "\n";
    return out.str();
  }

  std::atomic<uint64_t> pulledKeys{0}, pushedKeys{0};
  /// A request of several tables carries at most the server's keys per
  /// request in all, so that one call cannot make it allocate rows for
  /// many times that.
  template <typename Parts> grpc::Status checkTotalKeys(const Parts &parts) {
    uint64_t total = 0;
    for (const auto &part : parts)
      total += part.keys().size() / sizeof(uint64_t);
    if (total > shard.options().maxKeysPerRequest)
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          std::to_string(total) + " keys in one request of " +
              std::to_string(parts.size()) + " tables; this server takes " +
              std::to_string(shard.options().maxKeysPerRequest));
    return grpc::Status::OK;
  }

  /// The rows of `keys` in `wire`'s format, into the wireBytes(wire,
  /// keys.size() * dim) bytes at `out` (aligned for floats).
  grpc::Status pullRows(uint32_t table, const std::vector<uint64_t> &keys,
                        uint32_t dim, v1::Wire wire, char *out) {
    size_t count = keys.size() * dim;
    if (wire == v1::WIRE_F32)
      return toGrpc(shard.pull(table, keys.data(), keys.size(),
                               reinterpret_cast<float *>(out)));
    thread_local std::vector<float> rows;
    rows.resize(count);
    if (Status s = shard.pull(table, keys.data(), keys.size(), rows.data());
        !s.ok())
      return toGrpc(s);
    encodeFloats(wire, rows.data(), count, out);
    return grpc::Status::OK;
  }

  /// A push's gradients (or values) as f32, checked against its keys.
  grpc::Status decodeValues(const v1::PushRequest &push, size_t keys,
                            uint32_t dim, std::vector<float> &values) {
    if (grpc::Status s = checkWire(push.table_id(), push.wire()); !s.ok())
      return s;
    v1::Wire wire = static_cast<v1::Wire>(push.wire());
    values.resize(keys * dim);
    if (!decodeFloats(wire, push.grads(), keys * dim, values.data()))
      return invalid("table " + std::to_string(push.table_id()) + ": " +
                     std::to_string(keys) + " keys of dimension " +
                     std::to_string(dim) + " need " +
                     std::to_string(wireBytes(wire, keys * dim)) +
                     " bytes of " + (push.assign() ? "values" : "gradients") +
                     ", got " + std::to_string(push.grads().size()));
    return grpc::Status::OK;
  }

  /// A request's wire format, one that ps.proto declares.
  static grpc::Status checkWire(uint32_t table, int wire) {
    if (!v1::Wire_IsValid(wire))
      return invalid("table " + std::to_string(table) +
                     ": unknown wire format " + std::to_string(wire));
    return grpc::Status::OK;
  }

  /// The keys of a request (little-endian uint64 bytes) and the dimension
  /// of its table, checked before anything is allocated for the rows.
  grpc::Status decodeKeys(uint32_t table, const std::string &bytes,
                          std::vector<uint64_t> &keys, uint32_t *dim) {
    if (bytes.size() % sizeof(uint64_t))
      return invalid("table " + std::to_string(table) + ": keys of " +
                     std::to_string(bytes.size()) +
                     " bytes, not a multiple of 8 (little-endian uint64)");
    if (Status s = shard.tableDim(table, dim); !s.ok())
      return toGrpc(s);
    size_t n = bytes.size() / sizeof(uint64_t);
    if (n > shard.options().maxKeysPerRequest)
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          "table " + std::to_string(table) + ": " + std::to_string(n) +
              " keys in one request, the limit is " +
              std::to_string(shard.options().maxKeysPerRequest));
    keys.resize(n);
    // An empty request has no buffers: memcpy must not see their nulls.
    if (!bytes.empty())
      std::memcpy(keys.data(), bytes.data(), bytes.size());
    return grpc::Status::OK;
  }

  /// Answers a raw method: its request parsed as gRPC parses the others,
  /// then `handle`d, timed as the other methods are.
  template <typename Message, typename Handle>
  grpc::ServerUnaryReactor *
  answerRaw(grpc::CallbackServerContext *context, Method method,
            const grpc::ByteBuffer &request, Handle &&handle) {
    grpc::ServerUnaryReactor *reactor = context->DefaultReactor();
    reactor->Finish(timed(method, [&] {
      Message message;
      grpc::ByteBuffer bytes(request);
      if (!grpc::SerializationTraits<Message>::Deserialize(&bytes, &message)
               .ok())
        return invalid("the request is not a " + message.GetTypeName());
      return handle(message);
    }));
    return reactor;
  }

  Shard &shard;
  AccessCheck access;
  ClientKeys clientKeys;
  std::shared_ptr<RowBuffers> rowBuffers = RowBuffers::create();
};

} // namespace

struct Server::Impl {
  explicit Impl(const ServerOptions &o) : shard(o.shard), service(shard, o) {}
  Shard shard;
  Service service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::mutex mutex;
  std::condition_variable stopped;
  bool stopping = false;
  std::unique_ptr<ExpirySweeper> sweeper;
};

Server::Server(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

Server::~Server() { shutdown(); }

std::map<std::string, std::string>
ps::readWorkerTokens(const std::string &path) {
  std::string text;
  if (std::string error = readSmallFile(path, 1u << 20, text); !error.empty())
    runtime::fail("--worker-tokens-file: ", error);
  std::istringstream in(text);
  std::map<std::string, std::string> tokens;
  std::set<std::string> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    auto bad = [&](const std::string &what) {
      runtime::fail("--worker-tokens-file '", path, "' line ", number, ": ",
                    what);
    };
    std::istringstream fields(line);
    std::string name, token, extra;
    fields >> name;
    if (name.empty() || name[0] == '#')
      continue;
    fields >> token >> extra;
    if (token.empty() || !extra.empty())
      bad("expected 'NAME TOKEN'");
    for (char c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' &&
          c != '_' && c != '-')
        bad("worker name '" + name +
            "' has a character other than letters, digits, '.', '_' and "
            "'-'");
    if (token.size() < 16)
      bad("the token of worker '" + name + "' has " +
          std::to_string(token.size()) + " characters; at least 16 are needed");
    if (tokens.count(name))
      bad("worker '" + name + "' is listed twice");
    if (!seen.insert(token).second)
      bad("worker '" + name + "' has the token of another worker");
    tokens[name] = token;
  }
  if (tokens.empty())
    runtime::fail("--worker-tokens-file '", path, "' names no worker");
  return tokens;
}

std::unique_ptr<Server> Server::start(const ServerOptions &options) {
  auto impl = std::make_unique<Impl>(options);
  if (!options.restore.empty()) {
    v1::RestoreResponse r;
    bool automatic = options.restore == "auto";
    Status s = impl->shard.restore(automatic ? "latest" : options.restore, &r);
    if (automatic && s.code == Code::NotFound) {
      log(LogLevel::Info, "PS server " + std::to_string(options.shard.index) +
                              ": no complete checkpoint under '" +
                              options.shard.checkpointDir +
                              "'; starting empty");
    } else if (!s.ok())
      runtime::fail("PS server ", options.shard.index, ": cannot restore '",
                    options.restore, "': ", codeName(s.code), ": ", s.message);
    else
      log(LogLevel::Info, "PS server " + std::to_string(options.shard.index) +
                              ": restored " + r.name() + " at step " +
                              std::to_string(r.step()) + " (" +
                              std::to_string(r.rows()) + " rows)");
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::InsecureServerCredentials();
  if (!options.tlsCert.empty() || !options.tlsKey.empty()) {
    if (options.tlsCert.empty() || options.tlsKey.empty())
      runtime::fail("TLS needs both a certificate and its key");
    // gRPC reports a certificate it cannot use only as a port it cannot
    // bind.
    if (options.tlsCert.find("-----BEGIN CERTIFICATE-----") ==
        std::string::npos)
      runtime::fail("the TLS certificate is not PEM (no -----BEGIN "
                    "CERTIFICATE----- line)");
    if (options.tlsKey.find("PRIVATE KEY-----") == std::string::npos)
      runtime::fail("the TLS key is not a PEM private key (no -----BEGIN "
                    "... PRIVATE KEY----- line)");
    grpc::SslServerCredentialsOptions ssl(
        options.tlsClientCA.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = options.tlsClientCA;
    ssl.pem_key_cert_pairs.push_back({options.tlsKey, options.tlsCert});
    credentials = grpc::SslServerCredentials(ssl);
  } else if (!options.tlsClientCA.empty()) {
    runtime::fail("client certificates (a client CA) need TLS: give the "
                  "server's certificate and key");
  }
  builder.AddListeningPort(options.listen, credentials, &impl->port);
  // Without SO_REUSEPORT a port in use is an error, not a second server
  // sharing its traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.maxMessageBytes);
  builder.SetMaxSendMessageSize(options.maxMessageBytes);
  builder.RegisterService(&impl->service);
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0)
    runtime::fail("cannot listen on '", options.listen,
                  "': the address is in use or not this machine's",
                  options.tlsCert.empty()
                      ? ""
                      : ", or the TLS certificate and key do not belong "
                        "together");
  impl->server->GetHealthCheckService()->SetServingStatus(true);
  impl->sweeper = std::make_unique<ExpirySweeper>(impl->shard);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl->port; }
Shard &Server::shard() { return impl->shard; }

std::shared_ptr<grpc::Channel> Server::inProcessChannel() {
  return impl->server->InProcessChannel(grpc::ChannelArguments());
}

void Server::shutdown(double graceSeconds) {
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    if (impl->stopping)
      return;
    impl->stopping = true;
  }
  impl->stopped.notify_all();
  impl->server->GetHealthCheckService()->SetServingStatus(false);
  impl->server->Shutdown(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(graceSeconds * 1000)));
  impl->sweeper.reset();
}

void Server::wait() { impl->server->Wait(); }
