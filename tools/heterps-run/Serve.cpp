//===- Serve.cpp - heterps-run serve: a parameter-server process ----------===//
//
// Serves one shard of the PS service until SIGINT or SIGTERM, then shuts
// down gracefully (running calls finish, new ones are refused).
//
//===----------------------------------------------------------------------===//

#include "Serve.h"

#include "heterps/PS/Server.h"
#include "heterps/Runtime/Error.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <pthread.h>

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
                            --checkpoint-dir, or 'latest') before serving
  --port-file=FILE          write the port served on to FILE once serving
  --rocksdb-dir=DIR         RocksDB directory for tables created with
                            storage rocksdb (scratch: cleared at start-up;
                            checkpoints are the durable copy)
  --max-memory=BYTES        refuse new rows beyond this (RESOURCE_EXHAUSTED;
                            default: no limit)
  --max-keys-per-request=N  refuse larger requests (default 4194304)
  --max-message-bytes=N     the largest gRPC message (default 268435456)
  --crash-in-checkpoint=K   fault injection for tests: SIGKILL itself in the
                            K-th checkpoint after writing its first file
  --help                    this text
)";

[[noreturn]] static void serveUsageError(const std::string &message) {
  std::fprintf(stderr,
               "heterps-run serve: %s\n(see heterps-run serve --help)\n",
               message.c_str());
  std::exit(2);
}

static uint64_t toUnsigned(const std::string &key, const std::string &v) {
  char *end = nullptr;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end || v[0] == '-')
    serveUsageError("--" + key + " takes a non-negative integer, got '" + v +
                    "'");
  return x;
}

int heterps::run::runServe(int argc, char **argv) {
  ps::ServerOptions o;
  std::string portFile;
  std::map<std::string, std::function<void(const std::string &)>> valued{
      {"listen", [&](const std::string &v) { o.listen = v; }},
      {"shard-index",
       [&](const std::string &v) {
         o.shard.index = static_cast<uint32_t>(toUnsigned("shard-index", v));
       }},
      {"shard-count",
       [&](const std::string &v) {
         o.shard.count = static_cast<uint32_t>(toUnsigned("shard-count", v));
       }},
      {"checkpoint-dir",
       [&](const std::string &v) { o.shard.checkpointDir = v; }},
      {"restore", [&](const std::string &v) { o.restore = v; }},
      {"rocksdb-dir", [&](const std::string &v) { o.shard.rocksdbDir = v; }},
      {"port-file", [&](const std::string &v) { portFile = v; }},
      {"max-memory",
       [&](const std::string &v) {
         o.shard.maxMemoryBytes = toUnsigned("max-memory", v);
       }},
      {"max-keys-per-request",
       [&](const std::string &v) {
         o.shard.maxKeysPerRequest = toUnsigned("max-keys-per-request", v);
       }},
      {"max-message-bytes",
       [&](const std::string &v) {
         o.maxMessageBytes =
             static_cast<int>(toUnsigned("max-message-bytes", v));
       }},
      {"crash-in-checkpoint",
       [&](const std::string &v) {
         o.shard.crashInCheckpoint =
             static_cast<int>(toUnsigned("crash-in-checkpoint", v));
       }},
  };
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kServeUsage, stdout);
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
  if (o.shard.count == 0 || o.shard.index >= o.shard.count)
    serveUsageError("--shard-index must be below --shard-count (got " +
                    std::to_string(o.shard.index) + " of " +
                    std::to_string(o.shard.count) + ")");
  if (o.maxMessageBytes <= 0)
    serveUsageError("--max-message-bytes must be positive");

  // Signals are taken by sigwait on this thread, not by a handler: gRPC's
  // threads inherit the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  try {
    std::unique_ptr<ps::Server> server = ps::Server::start(o);
    std::printf("PS server %u of %u serving on port %d\n", o.shard.index,
                o.shard.count, server->port());
    std::fflush(stdout);
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
    std::printf("PS server %u: signal %d, shutting down\n", o.shard.index, sig);
    std::fflush(stdout);
    server->shutdown();
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "heterps-run serve: error: %s\n", e.what());
    return 1;
  }
}
