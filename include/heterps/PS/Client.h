//===- Client.h - The parameter-server client -------------------*- C++ -*-===//
//
// The runtime's embedding tables when they live in a PS service: an
// EmbeddingStore that deduplicates the keys of a request, splits them by
// server (and into chunks), calls the servers in parallel with deadlines,
// retries UNAVAILABLE with backoff, and numbers its pushes so that the
// servers apply each exactly once. The servers are reached over gRPC or,
// for the embedded default, by calling an in-process Shard directly
// (LocalConnection.h).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_CLIENT_H
#define HETERPS_PS_CLIENT_H

#include "heterps/PS/Protocol.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/ps.pb.h"

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace heterps::plan {
class Optimizer;
} // namespace heterps::plan

namespace heterps::ps {

/// A failed PS call: the server, the gRPC code and its message.
class PSError : public runtime::RuntimeError {
public:
  PSError(Code code, const std::string &message)
      : runtime::RuntimeError(message), code(code) {}
  Code code;
};

struct ClientOptions {
  /// Every call, retries included, ends within this many seconds.
  double deadlineSeconds = 10;
  /// Keys per request; larger requests are split.
  size_t maxKeysPerRequest = 1 << 16;
  /// 0: a random id.
  uint64_t clientId = 0;
  /// TLS: the CA that signed the servers' certificates (PEM; empty: no
  /// TLS), and this client's certificate and key for servers that require
  /// them.
  std::string tlsCA, tlsCert, tlsKey;
  /// The name the servers' certificates are checked against (empty: the
  /// host of each address).
  std::string tlsServerName;
  /// The token sent with every call (empty: none).
  std::string token;
  /// How rows and gradients travel: "f32", "f16" or "bf16" (Wire.h).
  std::string wire = "f32";
};

/// The contents of a certificate, key or token file, for ClientOptions and
/// ServerOptions: throws naming the file and `what` when it cannot be read,
/// is empty or is larger than 1 MiB. With `trim`, the first line without
/// its trailing whitespace (a token).
std::string readCredentialFile(const std::string &path, const std::string &what,
                               bool trim = false);

/// One table's keys (and rows) in a request of several tables.
struct KeyRows {
  uint32_t table = 0, dim = 0;
  const uint64_t *keys = nullptr;
  size_t n = 0;
  /// Pulls write n x dim rows here; pushes read their values from here.
  float *rows = nullptr;
  /// Pulls only: key j's row goes to row rowIndex[j] of `rows` rather than
  /// row j (the client writes each row straight to the first place its
  /// caller asked for it, without a buffer between).
  const uint32_t *rowIndex = nullptr;
};

/// One server as the client sees it. The table calls come in two forms: a
/// blocking one that retries UNAVAILABLE until the deadline, and start*,
/// which makes one attempt and returns at once; `done` runs when the
/// attempt ends (on another thread, or on this one before start* returns),
/// with `retry` set when the attempt failed in a way that the blocking form
/// would retry. The client calls its servers with start* concurrently,
/// without a thread per server.
class Connection {
public:
  using Done = std::function<void(Status status, bool retry)>;
  virtual ~Connection();
  /// "127.0.0.1:5000", or "embedded".
  virtual std::string address() const = 0;
  virtual Status createTable(const v1::TableConfig &config, bool *created) = 0;
  virtual Status describeTable(uint32_t table, v1::TableStatus *status) = 0;
  virtual Status setTableOptimizer(uint32_t table,
                                   const v1::Optimizer &optimizer,
                                   v1::Optimizer *previous) = 0;
  virtual Status pull(const KeyRows &part) = 0;
  virtual Status push(uint32_t table, const uint64_t *keys, size_t n,
                      uint32_t dim, const float *values, uint64_t client,
                      uint64_t seq, bool assign,
                      v1::PushResponse *response) = 0;
  virtual Status pullMany(const std::vector<KeyRows> &parts) = 0;
  /// Applies `parts`, then (in the same call) writes the rows of
  /// `thenPull` as they are after the pushes.
  virtual Status pushMany(const std::vector<KeyRows> &parts, uint64_t client,
                          uint64_t seq, const std::vector<KeyRows> &thenPull,
                          v1::PushResponse *response) = 0;
  /// One attempt of pull, push, pullMany or pushMany (the buffers and the
  /// response must live until `done`). By default the blocking call, here.
  virtual void startPull(const KeyRows &part, Done done);
  virtual void startPush(uint32_t table, const uint64_t *keys, size_t n,
                         uint32_t dim, const float *values, uint64_t client,
                         uint64_t seq, bool assign, v1::PushResponse *response,
                         Done done);
  virtual void startPullMany(const std::vector<KeyRows> &parts, Done done);
  virtual void startPushMany(const std::vector<KeyRows> &parts, uint64_t client,
                             uint64_t seq, const std::vector<KeyRows> &thenPull,
                             v1::PushResponse *response, Done done);
  virtual Status createDense(const v1::DenseTensor &tensor,
                             const v1::Optimizer &optimizer, bool *created) = 0;
  virtual Status pullDense(const std::string &name,
                           v1::DenseTensor *tensor) = 0;
  virtual Status pushDense(const std::string &name, const float *grads,
                           size_t n, uint64_t client, uint64_t seq,
                           v1::PushResponse *response) = 0;
  virtual Status checkpoint(const std::string &name, int64_t step) = 0;
  virtual Status restore(const v1::RestoreRequest &request,
                         v1::RestoreResponse *response) = 0;
  virtual Status info(v1::ServerInfoResponse *response) = 0;
  /// The server's metrics in Prometheus's text format.
  virtual Status metrics(std::string *text) = 0;
};

/// A plan's table optimizer as the PS protocol spells it.
v1::Optimizer protocolOptimizer(const plan::Optimizer &optimizer);
/// "adagrad (learning rate 0.01, momentum 0, ...)": to compare and to show.
std::string optimizerText(const v1::Optimizer &optimizer);

/// Tables whose optimizer changed (or would), grouped by the change, to
/// say so once for the tables that changed alike.
class OptimizerChanges {
public:
  void add(uint32_t table, const std::string &name, const v1::Optimizer &from,
           const v1::Optimizer &to);
  struct Group {
    /// "table 0 'a'" or "tables 0 'a', 1 'b'".
    std::string tables;
    /// optimizerText() of the two.
    std::string from, to;
    bool plural = false;
    /// "it" or "them".
    const char *object() const { return plural ? "them" : "it"; }
    /// What happens to tables that change hyper-parameters only.
    std::string retuned() const;
  };
  const std::vector<Group> &groups() const { return all; }

private:
  std::vector<Group> all;
};

/// A gRPC channel to `address`; calls end within the options' deadline.
std::unique_ptr<Connection> connectRemote(const std::string &address,
                                          const ClientOptions &options);

class Client : public runtime::EmbeddingStore {
public:
  /// Table ids go from 0 to kMaxTables - 1.
  static constexpr uint32_t kMaxTables = 1 << 16;
  /// `servers[i]` must be the server of shard index i; connect() checks.
  Client(std::vector<std::unique_ptr<Connection>> servers,
         ClientOptions options = {});
  ~Client() override;

  /// Checks that every server answers, speaks this protocol version and
  /// has the index and count its position says; throws naming the server.
  void connect();
  /// After connect(): "" when this client's token allows admin calls
  /// (Checkpoint, Restore, ...) on every server, else which server takes
  /// it for data calls only.
  std::string adminRefusal() const { return dataOnly; }
  /// Creates the plan's tables on every server (or checks that they exist
  /// with the same configuration) and writes the plan's initial rows where
  /// a table was created. The service settings of `defaults` (storage,
  /// cache rows, admission, TTL, non-finite policy) apply to every table.
  /// A table that exists with other hyper-parameters of the plan's kind of
  /// optimizer takes the plan's (its rows keep their state); the result
  /// says so for the caller to show, one note for the tables that changed
  /// alike.
  std::vector<std::string> createTables(const plan::Plan &plan, uint64_t seed,
                                        const v1::TableConfig &defaults = {});
  /// Creates one table (the same, on every server).
  void createTable(const v1::TableConfig &config);
  /// Gives table `table` on every server the hyper-parameters of
  /// `optimizer`, of the kind it has (its rows keep their state). When a
  /// server refuses, the servers changed before it are set back, and the
  /// error says so (or which could not be).
  void setTableOptimizer(int table, const v1::Optimizer &optimizer);

  int numTables() const override { return static_cast<int>(infos.size()); }
  const runtime::TableInfo &table(int id) const override;
  int tableId(const std::string &name) const override;
  void pull(int table, const int64_t *keys, int64_t n, float *rows) override;
  void push(int table, const int64_t *keys, int64_t n,
            const float *grads) override;
  /// One request per server for all the tables: the keys of each table are
  /// deduplicated (pushes summed) and split by server first.
  void pullMany(const std::vector<runtime::TablePull> &pulls) override;
  void pushMany(const std::vector<runtime::TablePush> &pushes) override;
  /// The pulls travel in the pushes' requests (PushManyRequest.then_pull):
  /// no round trip of their own.
  void pushManyThenPull(const std::vector<runtime::TablePush> &pushes,
                        const std::vector<runtime::TablePull> &pulls) override;
  /// Pulls go one at a time, and pushes (to a server in sequence order);
  /// a pull and a push may run at once.
  bool takesConcurrentCalls() const override { return true; }
  /// Writes rows verbatim (initial values), resetting their state.
  void assign(int table, const int64_t *keys, int64_t n, const float *rows);

  /// Dense tensors, each on the server serverOfName() gives; pushes are
  /// sequenced per server like table pushes, so a retried push is applied
  /// once.
  bool createDense(const std::string &name, const runtime::Tensor &value,
                   const runtime::OptimizerConfig &optimizer) override;
  void pullDense(const std::string &name, runtime::Tensor &value) override;
  void pushDense(const std::string &name, const runtime::Tensor &grad) override;

  /// Every server writes its part of checkpoint `name`.
  void checkpoint(const std::string &name, int64_t step);
  /// Every server loads checkpoint `name`; returns its step. With
  /// `expectTables`, a server whose checkpoint does not hold those tables
  /// (dimension, vocabulary, kind of optimizer) refuses and keeps its own.
  int64_t restore(const std::string &name,
                  const std::vector<v1::TableConfig> &expectTables = {});
  /// The status of a table summed over the servers.
  v1::TableStatus describe(int table);

  size_t numServers() const { return servers.size(); }
  uint64_t clientId() const { return id; }

private:
  struct Table {
    runtime::TableInfo info;
    uint64_t vocab = 0;
  };
  const Table &get(int id) const;
  struct Lane;
  /// Makes `counts[s]` requests to each server s, each server's in order.
  /// With one server busy, call(s, r) makes request r on this thread
  /// (blocking, with retries). With several, the servers go at once:
  /// start(s, r, done) starts request r, and a request that must be retried
  /// is made again by call(s, r), with the rest of its server's, on this
  /// thread. Returns each server's status (of its first failed request).
  template <typename Start, typename Call>
  const std::vector<Status> &fanOut(Lane &lane,
                                    const std::vector<size_t> &counts,
                                    Start &&start, Call &&call);
  /// Holds the push order of the servers with requests in `counts`, their
  /// requests numbered from lane.seqBase[s], until it goes out of scope.
  class PushOrder {
  public:
    PushOrder(Client &client, Lane &lane, const std::vector<size_t> &counts);
    ~PushOrder();
    PushOrder(const PushOrder &) = delete;
    PushOrder &operator=(const PushOrder &) = delete;

  private:
    Client &client;
    Lane &lane;
  };
  /// Throws for the first server whose status is an error, saying what
  /// failed with what(), a string built only then.
  template <typename What>
  void raiseFirst(const std::vector<Status> &statuses, What &&what) const {
    for (size_t s = 0; s < statuses.size(); ++s)
      if (!statuses[s].ok())
        raise(s, what(), statuses[s]);
  }
  /// A call's keys of one table, deduplicated (a repeated key travels
  /// once) and split by server.
  struct KeySplit {
    /// The distinct keys (ids wrapped by the table's vocabulary) in
    /// first-seen order; position[i]: the index in `unique` of key i;
    /// first[u]: the first i of unique key u.
    std::vector<uint64_t> unique;
    std::vector<uint32_t> position, first;
    /// Per server: its unique keys, their indices in `unique`, and the
    /// first i of each.
    std::vector<std::vector<uint64_t>> keys;
    std::vector<std::vector<uint32_t>> slots, firsts;

    void split(const int64_t *ids, int64_t n, uint64_t vocab, size_t servers);
    /// The request part of server `server`'s keys [at, at + count) of a
    /// pull into the caller's n rows at `rows`: each row goes to the first
    /// place the caller asked for its key.
    KeyRows pullPart(size_t server, size_t at, size_t count, uint32_t table,
                     uint32_t dim, float *rows) const;
    /// After such a pull, copies each repeated key's row from its first
    /// place.
    void fillRepeated(float *rows, size_t dim) const;
  };
  /// The tables of a pullMany or pushMany, split by server.
  struct ManyScratch;
  /// One call at a time, and its scratch.
  struct Lane {
    std::mutex mutex;
    KeySplit single;
    std::vector<std::vector<float>> serverRows;
    std::vector<float> uniqueRows;
    /// The tables of a pullMany or pushMany, and the pulls that travel
    /// with pushes.
    std::unique_ptr<ManyScratch> many, thenMany;
    // fanOut()'s state.
    std::vector<size_t> requestCounts, resumeAt;
    std::vector<Status> statuses;
    std::vector<uint64_t> seqBase;
    std::vector<float *> serverOut;
    std::vector<char> pushLocked;
    std::vector<v1::PushResponse> responses;
    std::mutex fanMutex;
    std::condition_variable fanDone;
    size_t fanPending = 0;

    Lane();
    ~Lane();
  };
  /// Splits each table of `requests` (TablePull or TablePush) by server
  /// into the scratch `m` (created on first use).
  template <typename Request>
  ManyScratch &splitMany(const std::vector<Request> &requests,
                         std::unique_ptr<ManyScratch> &m);
  /// After a split pull, copies each repeated key's row from its first
  /// place in its caller's buffer.
  static void fillRepeated(const std::vector<runtime::TablePull> &pulls,
                           const ManyScratch &m);
  void sendPush(int table, const int64_t *keys, int64_t n, const float *values,
                bool assign);
  [[noreturn]] void raise(size_t server, const std::string &what,
                          const Status &s) const;

  std::vector<std::unique_ptr<Connection>> servers;
  std::string dataOnly;
  ClientOptions opts;
  uint64_t id;
  std::vector<Table> infos;
  // Pushes to one server go one at a time, in sequence order.
  std::vector<std::unique_ptr<std::mutex>> pushLocks;
  std::vector<uint64_t> nextSeq;
  /// The lanes of table calls: pulls (pull, pullMany) go one at a time,
  /// and so do pushes (push, assign, pushMany, pushManyThenPull), but a
  /// pull and a push may run at once (a pull ahead while the step
  /// pushes). A lane's scratch is kept between its calls.
  Lane pullLane, pushLane;
};

/// Drops gRPC's own log messages unless GRPC_VERBOSITY is set, for tools
/// that are clients only: gRPC logs a refused TLS handshake once per
/// attempt, and a call that fails names gRPC's reason in its error.
void quietGrpcLog();

/// Parses "host:port,host:port,..." (servers in shard order); throws what
/// checkServerList() finds.
std::vector<std::string> parseServerList(const std::string &list);
/// What is wrong with a server list (an empty entry, no port, a port that
/// is not a number from 1 to 65535), or "".
std::string checkServerList(const std::string &list);

} // namespace heterps::ps

#endif // HETERPS_PS_CLIENT_H
