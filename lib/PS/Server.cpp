//===- Server.cpp - The PS gRPC server ------------------------------------===//

#include "heterps/PS/Server.h"

#include "heterps/Runtime/Error.h"
#include "heterps/ps.grpc.pb.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
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

class Service final : public v1::ParameterServer::Service {
public:
  explicit Service(Shard &shard) : shard(shard) {}

  grpc::Status CreateTable(grpc::ServerContext *,
                           const v1::CreateTableRequest *request,
                           v1::CreateTableResponse *response) override {
    bool created = false;
    Status s = shard.createTable(request->config(), &created);
    response->set_created(created);
    return toGrpc(s);
  }

  grpc::Status DescribeTable(grpc::ServerContext *,
                             const v1::DescribeTableRequest *request,
                             v1::TableStatus *response) override {
    return toGrpc(shard.describeTable(request->table_id(), response));
  }

  grpc::Status Pull(grpc::ServerContext *, const v1::PullRequest *request,
                    v1::PullResponse *response) override {
    thread_local std::vector<uint64_t> keys;
    uint32_t dim;
    if (grpc::Status s =
            decodeKeys(request->table_id(), request->keys(), keys, &dim);
        !s.ok())
      return s;
    std::string *rows = response->mutable_rows();
    rows->resize(keys.size() * dim * sizeof(float));
    return toGrpc(shard.pull(request->table_id(), keys.data(), keys.size(),
                             reinterpret_cast<float *>(rows->data())));
  }

  grpc::Status Push(grpc::ServerContext *, const v1::PushRequest *request,
                    v1::PushResponse *response) override {
    thread_local std::vector<uint64_t> keys;
    thread_local std::vector<float> grads;
    uint32_t dim;
    if (grpc::Status s =
            decodeKeys(request->table_id(), request->keys(), keys, &dim);
        !s.ok())
      return s;
    size_t want = keys.size() * dim * sizeof(float);
    if (request->grads().size() != want)
      return invalid("table " + std::to_string(request->table_id()) + ": " +
                     std::to_string(keys.size()) + " keys of dimension " +
                     std::to_string(dim) + " need " + std::to_string(want) +
                     " bytes of " +
                     (request->assign() ? "values" : "gradients") + ", got " +
                     std::to_string(request->grads().size()));
    grads.resize(keys.size() * dim);
    std::memcpy(grads.data(), request->grads().data(), want);
    return toGrpc(shard.push(request->table_id(), keys.data(), keys.size(),
                             grads.data(), request->client_id(), request->seq(),
                             request->assign(), response));
  }

  grpc::Status CreateDense(grpc::ServerContext *,
                           const v1::CreateDenseRequest *request,
                           v1::CreateDenseResponse *response) override {
    bool created = false;
    Status s =
        shard.createDense(request->tensor(), request->optimizer(), &created);
    response->set_created(created);
    return toGrpc(s);
  }

  grpc::Status PullDense(grpc::ServerContext *,
                         const v1::PullDenseRequest *request,
                         v1::DenseTensor *response) override {
    return toGrpc(shard.pullDense(request->name(), response));
  }

  grpc::Status PushDense(grpc::ServerContext *,
                         const v1::PushDenseRequest *request,
                         v1::PushResponse *response) override {
    if (request->grads().size() % sizeof(float))
      return invalid("dense tensor '" + request->name() + "': gradient of " +
                     std::to_string(request->grads().size()) +
                     " bytes, not a multiple of 4 (little-endian f32)");
    std::vector<float> grads(request->grads().size() / sizeof(float));
    std::memcpy(grads.data(), request->grads().data(), request->grads().size());
    return toGrpc(shard.pushDense(request->name(), grads.data(), grads.size(),
                                  request->client_id(), request->seq(),
                                  response));
  }

  grpc::Status Checkpoint(grpc::ServerContext *,
                          const v1::CheckpointRequest *request,
                          v1::CheckpointResponse *response) override {
    return toGrpc(shard.checkpoint(request->name(), request->step(), response));
  }

  grpc::Status Restore(grpc::ServerContext *, const v1::RestoreRequest *request,
                       v1::RestoreResponse *response) override {
    return toGrpc(shard.restore(request->name(), response));
  }

  grpc::Status ServerInfo(grpc::ServerContext *, const v1::ServerInfoRequest *,
                          v1::ServerInfoResponse *response) override {
    shard.info(response);
    return grpc::Status::OK;
  }

private:
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
    std::memcpy(keys.data(), bytes.data(), bytes.size());
    return grpc::Status::OK;
  }

  Shard &shard;
};

} // namespace

struct Server::Impl {
  explicit Impl(const ServerOptions &o) : shard(o.shard), service(shard) {}
  Shard shard;
  Service service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::mutex mutex;
  std::condition_variable stopped;
  bool stopping = false;
  std::thread evictor;
};

Server::Server(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

Server::~Server() { shutdown(); }

std::unique_ptr<Server> Server::start(const ServerOptions &options) {
  auto impl = std::make_unique<Impl>(options);
  if (!options.restore.empty()) {
    v1::RestoreResponse r;
    bool automatic = options.restore == "auto";
    Status s = impl->shard.restore(automatic ? "latest" : options.restore, &r);
    if (automatic && s.code == Code::NotFound) {
      std::printf("PS server %u: no complete checkpoint under '%s'; starting "
                  "empty\n",
                  options.shard.index, options.shard.checkpointDir.c_str());
    } else if (!s.ok())
      runtime::fail() << "PS server " << options.shard.index
                      << ": cannot restore '" << options.restore
                      << "': " << codeName(s.code) << ": " << s.message;
    else
      std::printf("restored %s at step %lld (%llu rows)\n", r.name().c_str(),
                  static_cast<long long>(r.step()),
                  static_cast<unsigned long long>(r.rows()));
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(),
                           &impl->port);
  // Without SO_REUSEPORT a port in use is an error, not a second server
  // sharing its traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.maxMessageBytes);
  builder.SetMaxSendMessageSize(options.maxMessageBytes);
  builder.RegisterService(&impl->service);
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0)
    runtime::fail() << "cannot listen on '" << options.listen
                    << "': the address is in use or not this machine's";
  impl->server->GetHealthCheckService()->SetServingStatus(true);
  Impl *raw = impl.get();
  impl->evictor = std::thread([raw] {
    std::unique_lock<std::mutex> lock(raw->mutex);
    while (!raw->stopping) {
      raw->stopped.wait_for(lock, std::chrono::seconds(1));
      if (raw->stopping)
        break;
      lock.unlock();
      raw->shard.evictExpired();
      lock.lock();
    }
  });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl->port; }
Shard &Server::shard() { return impl->shard; }

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
  if (impl->evictor.joinable())
    impl->evictor.join();
}

void Server::wait() { impl->server->Wait(); }
