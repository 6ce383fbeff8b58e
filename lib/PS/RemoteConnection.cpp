//===- RemoteConnection.cpp - A PS server over gRPC -----------------------===//
//
// Every call has a deadline; UNAVAILABLE (the server is down or
// restarting) and an attempt's own timeout are retried with exponential
// backoff until the call's deadline. Retrying a push is safe: it carries
// the same sequence number, which the server recognises.
//
//===----------------------------------------------------------------------===//

#include "heterps/PS/Client.h"
#include "heterps/PS/PullFrames.h"
#include "heterps/PS/Wire.h"
#include "heterps/Runtime/Error.h"

#include "heterps/ps.grpc.pb.h"

#include <grpc/support/log.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

using namespace heterps;
using namespace heterps::ps;

namespace {

using Clock = std::chrono::system_clock;

// The methods whose responses are read from gRPC's buffers (PullFrames.h).
constexpr const char *kPullMethod = "/heterps.ps.v1.ParameterServer/Pull";
constexpr const char *kPullManyMethod =
    "/heterps.ps.v1.ParameterServer/PullMany";

class RemoteConnection : public Connection {
public:
  RemoteConnection(const std::string &address, const ClientOptions &options)
      : addr(address), opts(options) {
    if (!parseWire(options.wire, &wire))
      runtime::fail("unknown PS wire format '", options.wire,
                    "'; expected f32, f16 or bf16");
    pushWire = wire == v1::WIRE_F16 ? v1::WIRE_BF16 : wire;
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    args.SetMaxSendMessageSize(256 << 20);
    // Reconnect quickly after a server restarts, rather than after gRPC's
    // default backoff of up to two minutes.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
    std::shared_ptr<grpc::ChannelCredentials> credentials =
        grpc::InsecureChannelCredentials();
    if (!options.tlsCA.empty()) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = options.tlsCA;
      ssl.pem_private_key = options.tlsKey;
      ssl.pem_cert_chain = options.tlsCert;
      credentials = grpc::SslCredentials(ssl);
      if (!options.tlsServerName.empty())
        args.SetSslTargetNameOverride(options.tlsServerName);
    }
    channel = grpc::CreateCustomChannel(address, credentials, args);
    stub = v1::ParameterServer::NewStub(channel);
    rawStub = std::make_unique<grpc::GenericStub>(channel);
  }

  std::string address() const override { return addr; }

  Status createTable(const v1::TableConfig &config, bool *created) override {
    v1::CreateTableRequest request;
    *request.mutable_config() = config;
    v1::CreateTableResponse response;
    Status s = call([&](grpc::ClientContext *c) {
      return stub->CreateTable(c, request, &response);
    });
    *created = response.created();
    return s;
  }

  Status describeTable(uint32_t table, v1::TableStatus *status) override {
    v1::DescribeTableRequest request;
    request.set_table_id(table);
    return call([&](grpc::ClientContext *c) {
      return stub->DescribeTable(c, request, status);
    });
  }

  Status setTableOptimizer(uint32_t table, const v1::Optimizer &optimizer,
                           v1::Optimizer *previous) override {
    v1::SetTableOptimizerRequest request;
    request.set_table_id(table);
    *request.mutable_optimizer() = optimizer;
    v1::SetTableOptimizerResponse response;
    Status s = call([&](grpc::ClientContext *c) {
      return stub->SetTableOptimizer(c, request, &response);
    });
    *previous = response.previous();
    return s;
  }

  Status pull(const KeyRows &part) override {
    preparePull(part.table, part.keys, part.n);
    Status s =
        call([&](grpc::ClientContext *c) { return rawCall(c, rawPull); });
    return s.ok() ? decodePull(part) : s;
  }

  void startPull(const KeyRows &part, Done done) override {
    preparePull(part.table, part.keys, part.n);
    attempt(
        [this](grpc::ClientContext *c, std::function<void(grpc::Status)> cb) {
          startRawCall(c, rawPull, std::move(cb));
        },
        [this, part] { return decodePull(part); }, std::move(done));
  }

  Status push(uint32_t table, const uint64_t *keys, size_t n, uint32_t dim,
              const float *values, uint64_t client, uint64_t seq, bool assign,
              v1::PushResponse *response) override {
    preparePush(table, keys, n, dim, values, client, seq, assign);
    return call([&](grpc::ClientContext *c) {
      return stub->Push(c, pushRequest, response);
    });
  }

  void startPush(uint32_t table, const uint64_t *keys, size_t n, uint32_t dim,
                 const float *values, uint64_t client, uint64_t seq,
                 bool assign, v1::PushResponse *response, Done done) override {
    preparePush(table, keys, n, dim, values, client, seq, assign);
    attempt(
        [this, response](grpc::ClientContext *c,
                         std::function<void(grpc::Status)> cb) {
          stub->async()->Push(c, &pushRequest, response, std::move(cb));
        },
        [] { return Status{}; }, std::move(done));
  }

  Status pullMany(const std::vector<KeyRows> &parts) override {
    preparePullMany(parts);
    Status s =
        call([&](grpc::ClientContext *c) { return rawCall(c, rawPullMany); });
    return s.ok() ? decodePullMany(parts) : s;
  }

  void startPullMany(const std::vector<KeyRows> &parts, Done done) override {
    preparePullMany(parts);
    attempt(
        [this](grpc::ClientContext *c, std::function<void(grpc::Status)> cb) {
          startRawCall(c, rawPullMany, std::move(cb));
        },
        [this, &parts] { return decodePullMany(parts); }, std::move(done));
  }

  Status pushMany(const std::vector<KeyRows> &parts, uint64_t client,
                  uint64_t seq, const std::vector<KeyRows> &thenPull,
                  v1::PushResponse *response) override {
    preparePushMany(parts, client, seq, thenPull);
    Status s = call([&](grpc::ClientContext *c) {
      response->Clear();
      return stub->PushMany(c, pushManyRequest, response);
    });
    return s.ok() ? decodePulled(thenPull, response->pulled()) : s;
  }

  void startPushMany(const std::vector<KeyRows> &parts, uint64_t client,
                     uint64_t seq, const std::vector<KeyRows> &thenPull,
                     v1::PushResponse *response, Done done) override {
    preparePushMany(parts, client, seq, thenPull);
    response->Clear();
    attempt(
        [this, response](grpc::ClientContext *c,
                         std::function<void(grpc::Status)> cb) {
          stub->async()->PushMany(c, &pushManyRequest, response, std::move(cb));
        },
        [this, &thenPull, response] {
          return decodePulled(thenPull, response->pulled());
        },
        std::move(done));
  }

  Status createDense(const v1::DenseTensor &tensor,
                     const v1::Optimizer &optimizer, bool *created) override {
    v1::CreateDenseRequest request;
    *request.mutable_tensor() = tensor;
    *request.mutable_optimizer() = optimizer;
    v1::CreateDenseResponse response;
    Status s = call([&](grpc::ClientContext *c) {
      return stub->CreateDense(c, request, &response);
    });
    *created = response.created();
    return s;
  }

  Status pullDense(const std::string &name, v1::DenseTensor *tensor) override {
    v1::PullDenseRequest request;
    request.set_name(name);
    return call([&](grpc::ClientContext *c) {
      return stub->PullDense(c, request, tensor);
    });
  }

  Status pushDense(const std::string &name, const float *grads, size_t n,
                   uint64_t client, uint64_t seq,
                   v1::PushResponse *response) override {
    v1::PushDenseRequest request;
    request.set_name(name);
    request.set_grads(grads, n * sizeof(float));
    request.set_client_id(client);
    request.set_seq(seq);
    return call([&](grpc::ClientContext *c) {
      return stub->PushDense(c, request, response);
    });
  }

  Status checkpoint(const std::string &name, int64_t step) override {
    v1::CheckpointRequest request;
    request.set_name(name);
    request.set_step(step);
    v1::CheckpointResponse response;
    // Writing a large table takes longer than a lookup, and an attempt
    // that timed out may still be writing: one attempt gets the whole
    // (longer) deadline.
    return call(
        [&](grpc::ClientContext *c) {
          return stub->Checkpoint(c, request, &response);
        },
        3, 1.0);
  }

  Status restore(const v1::RestoreRequest &request,
                 v1::RestoreResponse *response) override {
    return call(
        [&](grpc::ClientContext *c) {
          return stub->Restore(c, request, response);
        },
        3, 1.0);
  }

  Status info(v1::ServerInfoResponse *response) override {
    v1::ServerInfoRequest request;
    return call([&](grpc::ClientContext *c) {
      return stub->ServerInfo(c, request, response);
    });
  }

  Status metrics(std::string *text) override {
    v1::MetricsRequest request;
    v1::MetricsResponse response;
    Status s = call([&](grpc::ClientContext *c) {
      return stub->Metrics(c, request, &response);
    });
    *text = response.text();
    return s;
  }

private:
  // The requests, built into the kept messages (one call of each kind at a
  // time per server).
  void preparePull(uint32_t table, const uint64_t *keys, size_t n) {
    pullRequest.set_table_id(table);
    pullRequest.set_keys(keys, n * sizeof(uint64_t));
    pullRequest.set_wire(wire);
    serializeRequest(pullRequest, rawPull);
  }
  void preparePush(uint32_t table, const uint64_t *keys, size_t n, uint32_t dim,
                   const float *values, uint64_t client, uint64_t seq,
                   bool assign) {
    pushRequest.set_table_id(table);
    pushRequest.set_keys(keys, n * sizeof(uint64_t));
    encodeFloats(pushWire, values, n * dim, pushRequest.mutable_grads());
    pushRequest.set_wire(pushWire);
    pushRequest.set_client_id(client);
    pushRequest.set_seq(seq);
    pushRequest.set_assign(assign);
  }
  void preparePullMany(const std::vector<KeyRows> &parts) {
    pullManyRequest.clear_pulls();
    for (const KeyRows &p : parts) {
      v1::PullRequest *pull = pullManyRequest.add_pulls();
      pull->set_table_id(p.table);
      pull->set_keys(p.keys, p.n * sizeof(uint64_t));
      pull->set_wire(wire);
    }
    serializeRequest(pullManyRequest, rawPullMany);
  }
  void preparePushMany(const std::vector<KeyRows> &parts, uint64_t client,
                       uint64_t seq, const std::vector<KeyRows> &thenPull) {
    v1::PushManyRequest &request = pushManyRequest;
    request.clear_pushes();
    for (const KeyRows &p : parts) {
      v1::PushRequest *push = request.add_pushes();
      push->set_table_id(p.table);
      push->set_keys(p.keys, p.n * sizeof(uint64_t));
      encodeFloats(pushWire, p.rows, p.n * p.dim, push->mutable_grads());
      push->set_wire(pushWire);
    }
    request.clear_then_pull();
    for (const KeyRows &p : thenPull) {
      v1::PullRequest *pull = request.add_then_pull();
      pull->set_table_id(p.table);
      pull->set_keys(p.keys, p.n * sizeof(uint64_t));
      pull->set_wire(wire);
    }
    request.set_client_id(client);
    request.set_seq(seq);
  }

  /// A method answered from raw buffers (PullFrames.h): its request,
  /// serialized once for all its attempts, and its answer. Pull and
  /// PullMany have their own, as a pull may start while a pull-ahead's
  /// PullMany is in flight.
  struct RawCall {
    const char *method;
    grpc::ByteBuffer request, response;
  };

  template <typename Message>
  void serializeRequest(const Message &message, RawCall &raw) {
    bool own;
    raw.request.Clear();
    grpc::Status s = grpc::SerializationTraits<Message>::Serialize(
        message, &raw.request, &own);
    if (!s.ok())
      runtime::fail("cannot serialize a ", message.GetTypeName(), ": ",
                    s.error_message());
  }

  void startRawCall(grpc::ClientContext *context, RawCall &raw,
                    std::function<void(grpc::Status)> done) {
    rawStub->UnaryCall(context, raw.method, grpc::StubOptions(), &raw.request,
                       &raw.response, std::move(done));
  }
  grpc::Status rawCall(grpc::ClientContext *context, RawCall &raw) {
    std::mutex mutex;
    std::condition_variable answered;
    bool finished = false;
    grpc::Status result;
    startRawCall(context, raw, [&](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mutex);
      result = std::move(s);
      finished = true;
      answered.notify_one();
    });
    std::unique_lock<std::mutex> lock(mutex);
    answered.wait(lock, [&] { return finished; });
    return result;
  }

  /// The rows of a Pull's answer, into the part's rows; gRPC's buffers are
  /// freed.
  Status decodePull(const KeyRows &p) {
    Status s =
        PullResponseReader(rawPull.response)
            .readResponse(wire, {p.table, p.n, p.dim, p.rows, p.rowIndex});
    rawPull.response.Clear();
    return s;
  }

  /// The rows of a PullMany's answer, into each part's rows.
  Status decodePullMany(const std::vector<KeyRows> &parts) {
    Status s = readPullMany(PullResponseReader(rawPullMany.response), parts);
    rawPullMany.response.Clear();
    return s;
  }
  Status readPullMany(PullResponseReader &&reader,
                      const std::vector<KeyRows> &parts) {
    for (const KeyRows &p : parts)
      if (Status s =
              reader.readPart(wire, {p.table, p.n, p.dim, p.rows, p.rowIndex});
          !s.ok())
        return s;
    return reader.finish(parts.size());
  }

  /// Sets an attempt's deadline (a quarter of the call's: an attempt that
  /// times out is retried within the call's), token and wait-for-ready.
  void prepareContext(grpc::ClientContext *context, Clock::time_point deadline,
                      double scale, double attemptShare) const {
    auto attemptTime = std::chrono::microseconds(static_cast<int64_t>(
        opts.deadlineSeconds * scale * attemptShare * 1e6));
    context->set_deadline(std::min(deadline, Clock::now() + attemptTime));
    if (!opts.token.empty())
      context->AddMetadata("authorization", "Bearer " + opts.token);
    // Wait for a restarting server's port rather than failing at once.
    context->set_wait_for_ready(true);
  }

  /// One attempt through gRPC's callback API: `start(context, callback)`
  /// issues it, `finish()` decodes the answer; `done` gets the status and
  /// whether call() would have retried.
  template <typename Start, typename Finish>
  void attempt(Start start, Finish finish, Done done) {
    auto context = std::make_shared<grpc::ClientContext>();
    prepareContext(context.get(),
                   Clock::now() +
                       std::chrono::microseconds(
                           static_cast<int64_t>(opts.deadlineSeconds * 1e6)),
                   1, 0.25);
    start(context.get(), [context, finish = std::move(finish),
                          done = std::move(done)](grpc::Status s) {
      if (s.ok()) {
        done(finish(), false);
        return;
      }
      bool retry = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                   s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
      done(Status::error(static_cast<Code>(s.error_code()), s.error_message()),
           retry);
    });
  }

  /// Writes the rows the server answered for `parts` to their buffers,
  /// checking that each table's rows have the size asked for.
  Status decodePulled(
      const std::vector<KeyRows> &parts,
      const google::protobuf::RepeatedPtrField<v1::PullResponse> &pulled) {
    if (pulled.size() != static_cast<int>(parts.size()))
      return Status::error(Code::Internal, "the server answered " +
                                               std::to_string(pulled.size()) +
                                               " tables' rows for " +
                                               std::to_string(parts.size()));
    for (size_t i = 0; i < parts.size(); ++i) {
      const KeyRows &p = parts[i];
      const std::string &rows = pulled.Get(static_cast<int>(i)).rows();
      if (rows.size() != wireBytes(wire, p.n * p.dim))
        return Status::error(
            Code::Internal,
            "the server answered " + std::to_string(rows.size()) +
                " bytes of rows of table " + std::to_string(p.table) + " for " +
                std::to_string(p.n) + " keys");
      decodeRows(wire, rows.data(), p.n, p.dim, p.rows, p.rowIndex);
    }
    return {};
  }

  /// Calls `rpc` until it succeeds, fails with a code other than
  /// UNAVAILABLE, or the deadline (the options' times `scale`) passes. An
  /// attempt may take `attemptShare` of the deadline.
  template <typename Rpc>
  Status call(Rpc rpc, double scale = 1, double attemptShare = 0.25) {
    auto deadline =
        Clock::now() + std::chrono::microseconds(static_cast<int64_t>(
                           opts.deadlineSeconds * scale * 1e6));
    // A lookup or push attempt gets a quarter of the deadline, so a lost
    // response is retried (with the same sequence number) within the call's
    // deadline.
    auto backoff = std::chrono::milliseconds(20);
    int attempts = 0;
    grpc::Status last;
    for (;;) {
      grpc::ClientContext context;
      prepareContext(&context, deadline, scale, attemptShare);
      last = rpc(&context);
      ++attempts;
      if (last.ok())
        return {};
      bool retry = last.error_code() == grpc::StatusCode::UNAVAILABLE ||
                   last.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
      if (!retry || Clock::now() + backoff >= deadline)
        break;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
    Code code = static_cast<Code>(last.error_code());
    std::string message = last.error_message();
    if (last.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
        last.error_code() == grpc::StatusCode::UNAVAILABLE) {
      // A server that does not answer within the deadline is unavailable
      // to the caller, whichever of the two gRPC reported.
      code = Code::Unavailable;
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%g",
                    opts.deadlineSeconds * scale);
      message = std::string("no answer within the deadline of ") + seconds +
                " s (" + std::to_string(attempts) + " attempt" +
                (attempts == 1 ? "" : "s") + "; last: " + message + ")" +
                connectionFailure();
    }
    return Status::error(code, message);
  }

  /// Why the channel cannot connect ("; connecting fails: ..."), or "" when
  /// it is not failing to. Calls wait for a server that is not there yet,
  /// so they end at the deadline without the reason (a refused TLS
  /// handshake, a refused connection); a call that does not wait gets it.
  std::string connectionFailure() {
    if (channel->GetState(false) != GRPC_CHANNEL_TRANSIENT_FAILURE)
      return "";
    grpc::ClientContext context;
    context.set_deadline(Clock::now() + std::chrono::seconds(1));
    context.set_wait_for_ready(false);
    v1::ServerInfoRequest request;
    v1::ServerInfoResponse response;
    grpc::Status s = stub->ServerInfo(&context, request, &response);
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE)
      return "";
    return "; connecting fails: " + s.error_message();
  }

  std::string addr;
  ClientOptions opts;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ParameterServer::Stub> stub;
  std::unique_ptr<grpc::GenericStub> rawStub;
  // Reused request and response messages, one per kind of call: the
  // client makes one pull and one push at a time (its two lanes), which may
  // overlap.
  /// Rows pulled travel as `wire`; pushes as `pushWire`, which is bf16 for
  /// f16: gradients are small (scaled by 1/batch) and f16 would round
  /// many of them to zero.
  v1::Wire wire = v1::WIRE_F32, pushWire = v1::WIRE_F32;
  v1::PullRequest pullRequest;
  v1::PushRequest pushRequest;
  v1::PullManyRequest pullManyRequest;
  RawCall rawPull{kPullMethod, {}, {}}, rawPullMany{kPullManyMethod, {}, {}};
  v1::PushManyRequest pushManyRequest;
};

} // namespace

namespace {
/// gRPC 1.51 runs callback-API calls on poller threads that it starts with
/// the first channel or server using that API and stops when the last one
/// goes; a race in that stop aborts the process (`grpc_cq_internal_unref`:
/// `assertion failed: prior > 0`) when clients come and go, as in tests and
/// notebooks. One channel that has made a callback call, kept for the
/// process, keeps the pollers running instead.
void keepCallbackPollers() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto *channel = new std::shared_ptr<grpc::Channel>(
        grpc::CreateChannel("unix:/dev/null/heterps-no-server",
                            grpc::InsecureChannelCredentials()));
    auto *stub = new grpc::GenericStub(*channel);
    auto context = std::make_shared<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now());
    grpc::Slice empty;
    auto request = std::make_shared<grpc::ByteBuffer>(&empty, 1);
    auto response = std::make_shared<grpc::ByteBuffer>();
    stub->UnaryCall(context.get(), "/heterps.KeepPollers/None",
                    grpc::StubOptions(), request.get(), response.get(),
                    [context, request, response](grpc::Status) {});
  });
}
} // namespace

void ps::quietGrpcLog() {
  if (!std::getenv("GRPC_VERBOSITY"))
    gpr_set_log_function([](gpr_log_func_args *) {});
}

std::unique_ptr<Connection> ps::connectRemote(const std::string &address,
                                              const ClientOptions &options) {
  keepCallbackPollers();
  return std::make_unique<RemoteConnection>(address, options);
}
