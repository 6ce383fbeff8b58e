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
#include "heterps/Version.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <pthread.h>
#include <unistd.h>

using namespace heterps;

static const char *kServeUsage = R"(usage: heterps-run serve [options]

Runs one server of the parameter-server (PS) service: the rows of the
embedding tables whose keys hash to this shard, their server-side optimizer
state, and checkpoints. Workers reach it with heterps-run PLAN
--ps=HOST:PORT,HOST:PORT,... (the servers in shard order). It also serves
gRPC's health service (grpc.health.v1.Health). SIGINT or SIGTERM shut it
down gracefully.

Options:
  --listen=HOST:PORT        address to serve on (default 127.0.0.1:0, a free
                            port; see --port-file)
  --shard-index=I           this server's shard (default 0)
  --shard-count=N           servers in the service (default 1)
  --checkpoint-dir=DIR      where checkpoints are written and read; give
                            every server the same (shared) directory to
                            restore onto a different server count
  --restore=NAME            load checkpoint NAME (a directory under
                            --checkpoint-dir; 'latest': the newest complete
                            one; 'auto': the newest, or start empty when
                            there is none) before serving
  --keep-checkpoints=N      after each checkpoint, delete all but the N
                            newest complete ones under --checkpoint-dir
                            (default 0: keep all)
  --port-file=FILE          write the port served on to FILE once serving
  --log-file=FILE           append the log (timestamped lines with a level,
                            gRPC's messages included) to FILE instead of
                            standard output
  --tls-cert=FILE           serve TLS with this certificate chain (PEM) ...
  --tls-key=FILE            ... and its private key (PEM)
  --tls-ca=FILE             require client certificates signed by this CA
                            (mutual TLS)
  --auth-token-file=FILE    every call must carry this token (the file's
                            first line); otherwise UNAUTHENTICATED
  --admin-token-file=FILE   CreateTable, CreateDense, Checkpoint, Restore and
                            assigning pushes need this token instead
                            (PERMISSION_DENIED with the other); a server
                            listening beyond loopback without TLS and a
                            token warns at start-up
  --worker-tokens-file=FILE a token per worker, a line 'NAME TOKEN' each:
                            each allows data calls, and a push's client id
                            counts within its token, so one worker cannot
                            make another's pushes look like repeats
  --rocksdb-dir=DIR         RocksDB directory for tables created with
                            storage rocksdb (scratch: cleared at start-up;
                            checkpoints are the durable copy)
  --max-memory=BYTES        refuse new rows beyond this (RESOURCE_EXHAUSTED;
                            default: 80% of this machine's or container's
                            memory; 0: no limit). Servers sharing a machine
                            should split it between them
  --max-keys-per-request=N  refuse larger requests (default 4194304)
  --max-message-bytes=N     the largest gRPC message (default 268435456)
  --crash-in-checkpoint=K   fault injection for tests: SIGKILL itself in the
                            K-th checkpoint after writing its first file
  --help                    this text
  --version                 the HeterPS version
)";

[[noreturn]] static void serveUsageError(const std::string &message) {
  std::fprintf(stderr,
               "heterps-run serve: %s\n(see heterps-run serve --help)\n",
               message.c_str());
  std::exit(2);
}

/// A whole number in [low, high]; anything else (a sign, a suffix, a value
/// that would wrap) is a usage error naming the option.
static uint64_t toUnsigned(const std::string &key, const std::string &v,
                           uint64_t low, uint64_t high) {
  char *end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end || v[0] == '-' || v[0] == '+' || errno == ERANGE ||
      x < low || x > high)
    serveUsageError("--" + key + " takes a whole number from " +
                    std::to_string(low) + " to " + std::to_string(high) +
                    ", got '" + v + "'");
  return x;
}

/// Checks HOST:PORT ([V6]:PORT) with a port from 0 to 65535.
static void checkListenAddress(const std::string &address) {
  size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  std::string port =
      colon == std::string::npos ? "" : address.substr(colon + 1);
  bool digits = !port.empty() && port.size() <= 5 &&
                port.find_first_not_of("0123456789") == std::string::npos;
  if (host.empty() || !digits || std::stoul(port) > 65535)
    serveUsageError("--listen takes HOST:PORT with a port from 0 to 65535, "
                    "got '" +
                    address + "'");
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
  bool maxMemoryGiven = false;
  std::map<std::string, std::function<void(const std::string &)>> valued{
      {"listen", [&](const std::string &v) { o.listen = v; }},
      {"shard-index",
       [&](const std::string &v) {
         o.shard.index =
             static_cast<uint32_t>(toUnsigned("shard-index", v, 0, 65535));
       }},
      {"shard-count",
       [&](const std::string &v) {
         o.shard.count =
             static_cast<uint32_t>(toUnsigned("shard-count", v, 1, 65536));
       }},
      {"keep-checkpoints",
       [&](const std::string &v) {
         o.shard.keepCheckpoints =
             static_cast<int>(toUnsigned("keep-checkpoints", v, 0, 1000000));
       }},
      {"checkpoint-dir",
       [&](const std::string &v) { o.shard.checkpointDir = v; }},
      {"restore", [&](const std::string &v) { o.restore = v; }},
      {"rocksdb-dir", [&](const std::string &v) { o.shard.rocksdbDir = v; }},
      {"port-file", [&](const std::string &v) { portFile = v; }},
      {"log-file", [&](const std::string &v) { logFile = v; }},
      {"tls-cert", [&](const std::string &v) { tlsCert = v; }},
      {"tls-key", [&](const std::string &v) { tlsKey = v; }},
      {"tls-ca", [&](const std::string &v) { tlsCA = v; }},
      {"auth-token-file", [&](const std::string &v) { tokenFile = v; }},
      {"admin-token-file", [&](const std::string &v) { adminTokenFile = v; }},
      {"worker-tokens-file",
       [&](const std::string &v) { workerTokensFile = v; }},
      {"max-memory",
       [&](const std::string &v) {
         o.shard.maxMemoryBytes = toUnsigned("max-memory", v, 0, UINT64_MAX);
         maxMemoryGiven = true;
       }},
      {"max-keys-per-request",
       [&](const std::string &v) {
         o.shard.maxKeysPerRequest =
             toUnsigned("max-keys-per-request", v, 1, 1ull << 32);
       }},
      {"max-message-bytes",
       [&](const std::string &v) {
         o.maxMessageBytes = static_cast<int>(
             toUnsigned("max-message-bytes", v, 4096, INT_MAX));
       }},
      {"crash-in-checkpoint",
       [&](const std::string &v) {
         o.shard.crashInCheckpoint =
             static_cast<int>(toUnsigned("crash-in-checkpoint", v, 0, 1000));
       }},
  };
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kServeUsage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("heterps-run serve (HeterPS) %s\n", HETERPS_VERSION);
      return 0;
    }
    if (arg.rfind("--", 0) != 0)
      serveUsageError("unexpected argument '" + arg + "'");
    std::string key = arg.substr(2), value;
    size_t eq = key.find('=');
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      serveUsageError("--" + key + " needs a value");
    }
    auto it = valued.find(key);
    if (it == valued.end())
      serveUsageError("unknown option '" + arg + "'");
    it->second(value);
  }
  checkListenAddress(o.listen);
  if (!maxMemoryGiven)
    o.shard.maxMemoryBytes = defaultMaxMemory();
  if (o.shard.index >= o.shard.count)
    serveUsageError("--shard-index must be below --shard-count (got " +
                    std::to_string(o.shard.index) + " of " +
                    std::to_string(o.shard.count) + ")");

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
          runtime::fail() << "--worker-tokens-file '" << workerTokensFile
                          << "': worker '" << name << "' has the "
                          << (token == o.adminToken ? "admin" : "shared")
                          << " token";
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
      std::string tmp = portFile + ".tmp";
      {
        std::ofstream out(tmp);
        out << server->port() << "\n";
        if (!out)
          runtime::fail() << "cannot write '" << tmp << "'";
      }
      std::filesystem::rename(tmp, portFile);
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
