//===- Serve.cpp - heterps-run serve: a parameter-server process ----------===//
//
// Serves one shard of the PS service until SIGINT or SIGTERM, then shuts
// down gracefully (running calls finish, new ones are refused).
//
//===----------------------------------------------------------------------===//

#include "Serve.h"

#include "heterps/PS/Client.h"
#include "heterps/PS/Log.h"
#include "heterps/PS/Server.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Support/AtomicFile.h"
#include "heterps/Support/Flags.h"

#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <pthread.h>
#include <unistd.h>

using namespace heterps;
namespace fs = std::filesystem;

static const char *kServeUsage = R"(usage: heterps-run serve [options]

Runs one server of the parameter-server (PS) service: the rows of the
embedding tables whose keys hash to this shard, their server-side optimizer
state, and checkpoints. Workers reach it with heterps-run PLAN
--ps=HOST:PORT,HOST:PORT,... (the servers in shard order). It also serves
gRPC's health service (grpc.health.v1.Health). SIGINT or SIGTERM shut it
down gracefully.
)";

/// Checks HOST:PORT ([V6]:PORT) with a port from 0 to 65535.
static std::string checkListenAddress(const std::string &address) {
  size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  std::string port =
      colon == std::string::npos ? "" : address.substr(colon + 1);
  bool digits = !port.empty() && port.size() <= 5 &&
                port.find_first_not_of("0123456789") == std::string::npos;
  if (host.empty() || !digits || std::stoul(port) > 65535)
    return "--listen takes HOST:PORT with a port from 0 to 65535, got '" +
           address + "'";
  return "";
}

/// The default memory limit: 80% of the memory this process may use, the
/// machine's or its container's (cgroup v2 memory.max or v1
/// memory.limit_in_bytes), whichever is smaller.
static uint64_t defaultMaxMemory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
  uint64_t limit =
      pages > 0 && pageSize > 0
          ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize)
          : 0;
  for (const char *file : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(file);
    unsigned long long bytes = 0;
    if (in >> bytes && bytes > 0 && (limit == 0 || bytes < limit))
      limit = bytes;
  }
  return limit / 5 * 4;
}

int heterps::run::runServe(int argc, char **argv) {
  ps::ServerOptions o;
  std::string portFile, tlsCert, tlsKey, tlsCA, tokenFile, adminTokenFile,
      workerTokensFile, logFile;
  Flags flags("heterps-run serve", kServeUsage);
  flags.custom("--listen", "HOST:PORT",
               "address to serve on (default 127.0.0.1:0, a free port; see "
               "--port-file)",
               [&o](const std::string &v) {
                 o.listen = v;
                 return checkListenAddress(v);
               });
  flags.option("--shard-index", o.shard.index, "I",
               "this server's shard (default 0)", 0, 65535);
  flags.option("--shard-count", o.shard.count, "N",
               "servers in the service (default 1)", 1, 65536);
  flags.option("--checkpoint-dir", o.shard.checkpointDir, "DIR",
               "where checkpoints are written and read; give every server "
               "the same (shared) directory to restore onto a different "
               "server count");
  flags.option("--restore", o.restore, "NAME",
               "load checkpoint NAME (a directory under --checkpoint-dir; "
               "'latest': the newest complete one; 'auto': the newest, or "
               "start empty when there is none) before serving");
  flags.option("--keep-checkpoints", o.shard.keepCheckpoints, "N",
               "after each checkpoint, delete all but the N newest complete "
               "ones under --checkpoint-dir (default 0: keep all)",
               0, 1000000);
  flags.option("--port-file", portFile, "FILE",
               "write the port served on to FILE once serving");
  flags.option("--log-file", logFile, "FILE",
               "append the log (timestamped lines with a level, gRPC's "
               "messages included) to FILE instead of standard output");
  flags.group("Security");
  flags.option("--tls-cert", tlsCert, "FILE",
               "serve TLS with this certificate chain (PEM); with --tls-key");
  flags.option("--tls-key", tlsKey, "FILE",
               "the private key (PEM) of --tls-cert");
  flags.option("--tls-ca", tlsCA, "FILE",
               "require client certificates signed by this CA (mutual TLS)");
  flags.option("--auth-token-file", tokenFile, "FILE",
               "every call must carry this token (the file's first line); "
               "otherwise UNAUTHENTICATED");
  flags.option("--admin-token-file", adminTokenFile, "FILE",
               "CreateTable, SetTableOptimizer, CreateDense, Checkpoint, "
               "Restore and assigning pushes need this token instead "
               "(PERMISSION_DENIED with the "
               "other); a server listening beyond loopback without TLS and a "
               "token warns at start-up");
  flags.option("--worker-tokens-file", workerTokensFile, "FILE",
               "a token per worker, a line 'NAME TOKEN' each: each allows "
               "data calls, and a push's client id counts within its token, "
               "so one worker cannot make another's pushes look like "
               "repeats");
  flags.group("Limits");
  flags.option("--rocksdb-dir", o.shard.rocksdbDir, "DIR",
               "RocksDB directory for tables created with storage rocksdb "
               "(scratch: cleared at start-up; checkpoints are the durable "
               "copy)");
  o.shard.maxMemoryBytes = defaultMaxMemory();
  flags.option("--max-memory", o.shard.maxMemoryBytes, "BYTES",
               "refuse new rows beyond this (RESOURCE_EXHAUSTED; default: "
               "80% of this machine's or container's memory; 0: no limit). "
               "Servers sharing a machine should split it between them");
  flags.option("--max-keys-per-request", o.shard.maxKeysPerRequest, "N",
               "refuse larger requests (default 4194304)", 1, 1ull << 32);
  flags.option("--max-message-bytes", o.maxMessageBytes, "N",
               "the largest gRPC message (default 268435456)", 4096, INT_MAX);
  flags.option("--crash-in-checkpoint", o.shard.crashInCheckpoint, "K",
               "fault injection for tests: SIGKILL itself in the K-th "
               "checkpoint after writing its first file",
               0, 1000);
  flags.parse(argc, argv, 2);
  if (o.shard.index >= o.shard.count)
    flags.fail("--shard-index must be below --shard-count (got " +
               std::to_string(o.shard.index) + " of " +
               std::to_string(o.shard.count) + ")");
  if (!o.restore.empty() && o.shard.checkpointDir.empty())
    flags.fail("--restore=" + o.restore + " needs --checkpoint-dir");
  if (o.shard.keepCheckpoints && o.shard.checkpointDir.empty())
    flags.fail("--keep-checkpoints needs --checkpoint-dir");
  // Found now rather than at the first checkpoint, or once serving.
  std::error_code ec;
  if (!o.shard.checkpointDir.empty() && fs::exists(o.shard.checkpointDir, ec) &&
      !fs::is_directory(o.shard.checkpointDir, ec))
    flags.fail("--checkpoint-dir '" + o.shard.checkpointDir +
               "' is not a directory");
  if (!portFile.empty()) {
    fs::path parent = fs::absolute(portFile, ec).parent_path();
    if (!fs::is_directory(parent, ec))
      flags.fail("--port-file '" + portFile + "': no directory '" +
                 parent.string() + "'");
  }

  // Signals are taken by sigwait on this thread, not by a handler: gRPC's
  // threads inherit the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  try {
    if (!logFile.empty())
      ps::setLogFile(logFile);
    ps::routeGrpcLog();
    if (!tlsCert.empty())
      o.tlsCert = ps::readCredentialFile(tlsCert, "--tls-cert");
    if (!tlsKey.empty())
      o.tlsKey = ps::readCredentialFile(tlsKey, "--tls-key");
    if (!tlsCA.empty())
      o.tlsClientCA = ps::readCredentialFile(tlsCA, "--tls-ca");
    if (!tokenFile.empty())
      o.authToken =
          ps::readCredentialFile(tokenFile, "--auth-token-file", true);
    if (!adminTokenFile.empty())
      o.adminToken =
          ps::readCredentialFile(adminTokenFile, "--admin-token-file", true);
    if (!workerTokensFile.empty()) {
      o.workerTokens = ps::readWorkerTokens(workerTokensFile);
      for (const auto &[name, token] : o.workerTokens)
        if (token == o.authToken || token == o.adminToken)
          runtime::fail("--worker-tokens-file '", workerTokensFile,
                        "': worker '", name, "' has the ",
                        (token == o.adminToken ? "admin" : "shared"), " token");
    }
    std::string host = o.listen.substr(0, o.listen.rfind(':'));
    bool loopback = host == "127.0.0.1" || host == "localhost" ||
                    host == "[::1]" || host.rfind("127.", 0) == 0;
    bool anyToken = !o.authToken.empty() || !o.workerTokens.empty();
    if (!loopback && (o.tlsCert.empty() || !anyToken))
      ps::log(ps::LogLevel::Warning,
              "listening on " + o.listen + " without " +
                  (o.tlsCert.empty() && !anyToken ? "TLS or a token"
                   : o.tlsCert.empty()            ? "TLS"
                                                  : "a token") +
                  ": anyone who reaches the port can read and overwrite "
                  "rows and restore checkpoints (see --tls-cert and "
                  "--auth-token-file)");
    std::unique_ptr<ps::Server> server = ps::Server::start(o);
    ps::log(ps::LogLevel::Info, "PS server " + std::to_string(o.shard.index) +
                                    " of " + std::to_string(o.shard.count) +
                                    " serving on port " +
                                    std::to_string(server->port()));
    if (!portFile.empty()) {
      std::string error =
          writeFileAtomically(portFile, std::to_string(server->port()) + "\n");
      if (!error.empty())
        runtime::fail("writing the port file: ", error);
    }
    int sig = 0;
    sigwait(&signals, &sig);
    ps::log(ps::LogLevel::Info, "PS server " + std::to_string(o.shard.index) +
                                    ": signal " + std::to_string(sig) +
                                    ", shutting down");
    server->shutdown();
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "heterps-run serve: error: %s\n", e.what());
    return 1;
  }
}
