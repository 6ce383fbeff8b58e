//===- Server.h - The PS gRPC server ----------------------------*- C++ -*-===//
//
// Serves one Shard over gRPC (the ParameterServer service of ps.proto and
// gRPC's health service) until shutdown() or a signal handled by the
// caller. Requests are decoded and checked here (lengths against the
// table's dimension) and handled by the Shard.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_SERVER_H
#define HETERPS_PS_SERVER_H

#include "heterps/PS/Shard.h"

#include <map>
#include <memory>
#include <string>

namespace grpc {
class Channel;
}

namespace heterps::ps {

struct ServerOptions {
  /// host:port; port 0 picks a free one (see Server::port()).
  std::string listen = "127.0.0.1:0";
  ShardOptions shard;
  /// The largest request gRPC accepts, in bytes.
  int maxMessageBytes = 256 << 20;
  /// A checkpoint to load before serving ("latest" for the newest, "auto"
  /// for the newest or none).
  std::string restore;
  /// TLS: the server's certificate chain and private key (PEM), and the CA
  /// that client certificates must be signed by (mutual TLS; empty: no
  /// client certificates).
  std::string tlsCert, tlsKey, tlsClientCA;
  /// Tokens every call must carry (empty: none); admin calls (CreateTable,
  /// CreateDense, Checkpoint, Restore, assigning pushes) need `adminToken`
  /// when it is set.
  std::string authToken, adminToken;
  /// Tokens per worker (name -> token): each allows data calls as an
  /// identity of its own, and a push's client id counts within it.
  std::map<std::string, std::string> workerTokens;
};

/// Reads a worker tokens file: a line `NAME TOKEN` per worker (names of
/// letters, digits, '.', '_' and '-'; tokens of at least 16 characters,
/// each once), blank lines and `#` comments skipped. Throws naming the
/// file and line.
std::map<std::string, std::string> readWorkerTokens(const std::string &path);

class Server {
public:
  /// Starts serving; throws runtime::RuntimeError naming the problem (an
  /// address in use, a checkpoint that does not load).
  static std::unique_ptr<Server> start(const ServerOptions &options);
  ~Server();

  int port() const;
  Shard &shard();
  /// A channel to this server inside the process (no socket, no TLS; the
  /// tokens are still checked): every call passes the server's decoding
  /// and checks as a remote one does. The fuzz target of the PS uses it.
  std::shared_ptr<grpc::Channel> inProcessChannel();
  /// Stops accepting calls, lets running ones finish (up to `graceSeconds`)
  /// and returns.
  void shutdown(double graceSeconds = 5);
  /// Blocks until shutdown().
  void wait();

private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace heterps::ps

#endif // HETERPS_PS_SERVER_H
