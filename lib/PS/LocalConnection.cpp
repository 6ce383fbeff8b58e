//===- LocalConnection.cpp - The embedded server, called in process -------===//

#include "heterps/PS/LocalConnection.h"

using namespace heterps;
using namespace heterps::ps;

namespace {

class LocalConnection : public Connection {
public:
  explicit LocalConnection(Shard &shard) : shard(shard) {}
  std::string address() const override { return "embedded"; }
  Status createTable(const v1::TableConfig &config, bool *created) override {
    return shard.createTable(config, created);
  }
  Status describeTable(uint32_t table, v1::TableStatus *status) override {
    return shard.describeTable(table, status);
  }
  Status setTableOptimizer(uint32_t table, const v1::Optimizer &optimizer,
                           v1::Optimizer *previous) override {
    return shard.setTableOptimizer(table, optimizer, previous);
  }
  Status pull(const KeyRows &p) override {
    return shard.pull(p.table, p.keys, p.n, p.rows, p.rowIndex);
  }
  Status push(uint32_t table, const uint64_t *keys, size_t n, uint32_t,
              const float *values, uint64_t client, uint64_t seq, bool assign,
              v1::PushResponse *response) override {
    return shard.push(table, keys, n, values, client, seq, assign, response);
  }
  Status pullMany(const std::vector<KeyRows> &parts) override {
    for (const KeyRows &p : parts)
      if (Status s = pull(p); !s.ok())
        return s;
    return {};
  }
  Status pushMany(const std::vector<KeyRows> &parts, uint64_t client,
                  uint64_t seq, const std::vector<KeyRows> &thenPull,
                  v1::PushResponse *response) override {
    pushes.clear();
    for (const KeyRows &p : parts)
      pushes.push_back({p.table, p.keys, p.n, p.rows, false});
    if (Status s = shard.pushMany(pushes, client, seq, response); !s.ok())
      return s;
    return pullMany(thenPull);
  }
  Status createDense(const v1::DenseTensor &tensor,
                     const v1::Optimizer &optimizer, bool *created) override {
    return shard.createDense(tensor, optimizer, created);
  }
  Status pullDense(const std::string &name, v1::DenseTensor *tensor) override {
    return shard.pullDense(name, tensor);
  }
  Status pushDense(const std::string &name, const float *grads, size_t n,
                   uint64_t client, uint64_t seq,
                   v1::PushResponse *response) override {
    return shard.pushDense(name, grads, n, client, seq, response);
  }
  Status checkpoint(const std::string &name, int64_t step) override {
    v1::CheckpointResponse r;
    return shard.checkpoint(name, step, &r);
  }
  Status restore(const v1::RestoreRequest &request,
                 v1::RestoreResponse *response) override {
    return shard.restore(request, response);
  }
  Status info(v1::ServerInfoResponse *response) override {
    shard.info(response);
    response->set_caller_access(v1::CALLER_ACCESS_ADMIN);
    return {};
  }
  Status metrics(std::string *) override {
    return Status::error(Code::FailedPrecondition,
                         "the embedded server keeps no call metrics");
  }

private:
  Shard &shard;
  // Kept between pushes (one push at a time per server).
  std::vector<Shard::PushPart> pushes;
};

} // namespace

std::unique_ptr<Connection> ps::connectLocal(Shard &shard) {
  return std::make_unique<LocalConnection>(shard);
}
