//===- FuzzPSService.cpp - The PS service's request handlers ----*- C++ -*-===//
//
// The input is a sequence of calls to a fresh PS server (memory limit
// 256 MB, a checkpoint directory of its own) over its in-process gRPC
// channel, so every request passes the server's decoding and checks as a
// remote one does. Each call is a method byte and its request: with the
// byte's high bit, a length-prefixed serialized request; without it, a
// request assembled from the following bytes (table ids, key counts,
// rows, wire formats, names), which reaches the handlers' deeper paths
// sooner. The server must answer every call with a status; a crash or a
// sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "heterps/PS/Server.h"
#include "heterps/ps.grpc.pb.h"

#include <grpcpp/grpcpp.h>

using namespace heterps;
namespace v1 = heterps::ps::v1;

namespace {

class Calls {
public:
  Calls(fuzz::InputReader &in, v1::ParameterServer::Stub &stub)
      : in(in), stub(stub) {}

  void next() {
    uint8_t method = in.byte();
    bool raw = method & 0x80;
    switch ((method & 0x7f) % 14) {
    case 0: {
      v1::CreateTableRequest r;
      if (raw ? parse(r) : (tableConfig(*r.mutable_config()), true))
        call(&Stub::CreateTable, r, v1::CreateTableResponse());
      break;
    }
    case 1: {
      v1::DescribeTableRequest r;
      if (raw ? parse(r) : (r.set_table_id(tableId()), true))
        call(&Stub::DescribeTable, r, v1::TableStatus());
      break;
    }
    case 2: {
      v1::PullRequest r;
      if (raw ? parse(r) : (pull(r), true))
        call(&Stub::Pull, r, v1::PullResponse());
      break;
    }
    case 3: {
      v1::PushRequest r;
      if (raw ? parse(r) : (push(r), true))
        call(&Stub::Push, r, v1::PushResponse());
      break;
    }
    case 4: {
      v1::PullManyRequest r;
      if (raw ? parse(r) : (pullMany(r), true))
        call(&Stub::PullMany, r, v1::PullManyResponse());
      break;
    }
    case 5: {
      v1::PushManyRequest r;
      if (raw ? parse(r) : (pushMany(r), true))
        call(&Stub::PushMany, r, v1::PushResponse());
      break;
    }
    case 6: {
      v1::CreateDenseRequest r;
      if (raw ? parse(r) : (createDense(r), true))
        call(&Stub::CreateDense, r, v1::CreateDenseResponse());
      break;
    }
    case 7: {
      v1::PullDenseRequest r;
      if (raw ? parse(r) : (r.set_name(denseName()), true))
        call(&Stub::PullDense, r, v1::DenseTensor());
      break;
    }
    case 8: {
      v1::PushDenseRequest r;
      if (raw ? parse(r) : (pushDense(r), true))
        call(&Stub::PushDense, r, v1::PushResponse());
      break;
    }
    case 9: {
      v1::CheckpointRequest r;
      if (raw ? parse(r)
              : (r.set_name(checkpointName()), r.set_step(in.byte()), true))
        call(&Stub::Checkpoint, r, v1::CheckpointResponse());
      break;
    }
    case 10: {
      v1::RestoreRequest r;
      if (raw ? parse(r) : (r.set_name(checkpointName()), true))
        call(&Stub::Restore, r, v1::RestoreResponse());
      break;
    }
    case 11:
      call(&Stub::ServerInfo, v1::ServerInfoRequest(),
           v1::ServerInfoResponse());
      break;
    case 13: {
      v1::SetTableOptimizerRequest r;
      if (raw ? parse(r)
              : (r.set_table_id(tableId()), optimizer(*r.mutable_optimizer()),
                 true))
        call(&Stub::SetTableOptimizer, r, v1::SetTableOptimizerResponse());
      break;
    }
    default:
      call(&Stub::Metrics, v1::MetricsRequest(), v1::MetricsResponse());
      break;
    }
  }

private:
  using Stub = v1::ParameterServer::Stub;

  template <typename Request> bool parse(Request &r) {
    uint32_t n = in.byte() | (in.byte() << 8);
    return r.ParseFromString(in.bytes(n));
  }

  template <typename Request, typename Response>
  void call(grpc::Status (Stub::*method)(grpc::ClientContext *, const Request &,
                                         Response *),
            const Request &request, Response response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(20));
    grpc::Status status = (stub.*method)(&context, request, &response);
    if (fuzz::verbose())
      std::fprintf(stderr, "%s: %d %s\n", Request::descriptor()->name().c_str(),
                   static_cast<int>(status.error_code()),
                   status.error_message().c_str());
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
        status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      std::fprintf(stderr, "the server did not answer: %s\n",
                   status.error_message().c_str());
      std::abort();
    }
  }

  // A few table ids, now and then one far out of range.
  uint32_t tableId() {
    uint8_t b = in.byte();
    return b < 0xf0 ? b % 4 : 0xffffff00u | b;
  }
  uint32_t dim() { return 1 + in.byte() % 16; }
  v1::Wire wire() { return static_cast<v1::Wire>(in.byte() % 4); }

  std::string keys(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      uint64_t k = in.byte();
      if (k >= 0xf0)
        k = (k << 56) | in.u32();
      s.append(reinterpret_cast<const char *>(&k), 8);
    }
    if (in.byte() == 0xff && !s.empty())
      s.pop_back(); // not a whole number of keys
    return s;
  }
  /// n numbers in the wire format `w`, from the input's bytes.
  std::string numbers(size_t n, v1::Wire w) {
    size_t width = w == v1::WIRE_F32 ? 4 : 2;
    std::string s = in.bytes(n * width);
    s.resize(n * width);
    if (in.byte() == 0xff)
      s.push_back(0);
    return s;
  }
  std::string name(const char *prefix) {
    uint8_t b = in.byte();
    if (b < 0xe0)
      return prefix + std::to_string(b % 3);
    return in.bytes(b - 0xe0);
  }
  std::string denseName() { return name("d"); }
  std::string checkpointName() { return name("c"); }

  void optimizer(v1::Optimizer &o) {
    const char *kinds[] = {"sgd", "momentum", "adam", "adagrad", "rmsprop"};
    uint8_t b = in.byte();
    o.set_kind(kinds[b % 5]);
    o.set_learning_rate(b & 0x80 ? -1.0 : 0.1);
    o.set_momentum(0.9);
    o.set_beta1(0.9);
    o.set_beta2(0.999);
    o.set_epsilon(b & 0x40 ? 0 : 1e-8);
  }
  void tableConfig(v1::TableConfig &c) {
    c.set_table_id(tableId());
    c.set_name("t" + std::to_string(c.table_id()));
    c.set_dim(dim());
    uint8_t b = in.byte();
    c.set_vocab(b % 3 == 0 ? 0 : b);
    optimizer(*c.mutable_optimizer());
    c.set_admit_min_count(b % 5 == 0 ? 2 : 0);
    c.set_non_finite(static_cast<v1::NonFinitePolicy>(b >> 6));
    c.set_ttl_seconds(b % 7 == 0 ? 3600 : 0);
  }
  void pull(v1::PullRequest &r) {
    r.set_table_id(tableId());
    r.set_keys(keys(in.byte() % 32));
    r.set_wire(wire());
  }
  void push(v1::PushRequest &r) {
    r.set_table_id(tableId());
    size_t n = in.byte() % 16;
    r.set_keys(keys(n));
    r.set_wire(wire());
    r.set_grads(numbers(n * dim(), r.wire()));
    r.set_client_id(in.byte() % 3);
    r.set_seq(in.byte());
    r.set_assign(in.byte() & 1);
  }
  void pullMany(v1::PullManyRequest &r) {
    for (int i = in.byte() % 4; i > 0; --i)
      pull(*r.add_pulls());
  }
  void pushMany(v1::PushManyRequest &r) {
    for (int i = in.byte() % 4; i > 0; --i)
      push(*r.add_pushes());
    r.set_client_id(in.byte() % 3);
    r.set_seq(in.byte());
  }
  void createDense(v1::CreateDenseRequest &r) {
    v1::DenseTensor &t = *r.mutable_tensor();
    t.set_name(denseName());
    int64_t n = 1;
    for (int i = in.byte() % 3; i > 0; --i) {
      int64_t d = in.byte() % 9;
      t.add_shape(d);
      n *= d;
    }
    t.set_values(numbers(n, v1::WIRE_F32));
    optimizer(*r.mutable_optimizer());
  }
  void pushDense(v1::PushDenseRequest &r) {
    r.set_name(denseName());
    r.set_grads(numbers(in.byte() % 64, v1::WIRE_F32));
    r.set_client_id(in.byte() % 3);
    r.set_seq(in.byte());
  }

  fuzz::InputReader &in;
  Stub &stub;
};

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // gRPC logs every refused call at INFO; a fuzzer makes millions.
  setenv("GRPC_VERBOSITY", "NONE", 1);
  fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string dir = fuzz::scratchDir() + "/checkpoints";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  ps::ServerOptions options;
  options.shard.checkpointDir = dir;
  options.shard.keepCheckpoints = 2;
  options.shard.maxMemoryBytes = 256 << 20;
  std::unique_ptr<ps::Server> server = ps::Server::start(options);
  auto stub = v1::ParameterServer::NewStub(server->inProcessChannel());
  fuzz::InputReader in(data, size);
  Calls calls(in, *stub);
  for (int i = 0; i < 64 && in.left() > 0; ++i)
    calls.next();
  server->shutdown(1);
  return 0;
}
