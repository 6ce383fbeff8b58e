//===- heterps-ps.cpp - Operate a PS service from the command line --------===//
//
// The administration client of the parameter-server service: server and
// table status, creating tables, checkpoints and restores, and reading or
// pushing rows (which the cross-process tests use to push known gradients
// from several processes).
//
//===----------------------------------------------------------------------===//

#include "heterps/PS/Client.h"
#include "heterps/Runtime/Data.h"
#include "heterps/Version.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace heterps;
using namespace heterps::ps;

static const char *kUsage =
    R"(usage: heterps-ps COMMAND --ps=HOST:PORT,... [options]

Commands:
  info                      each server's shard, protocol, memory and tables
  create-table              create a table on every server:
      --id=N --dim=D [--vocab=V] [--init=KIND[:ARG,ARG]] [--seed=S]
      [--optimizer=sgd|momentum|adam|adagrad] [--lr=X]
      [--admit-min-count=N] [--ttl-seconds=X] [--skip-non-finite]
      [--storage=memory|rocksdb] [--cache-rows=N]
  push-constant             push the gradient VALUE for every key, REPEAT times
      --table=N --keys=FIRST:COUNT[:STRIDE] --value=VALUE [--repeat=R]
  pull                      read rows: --table=N --keys=FIRST:COUNT[:STRIDE]
      [--out=FILE.pb]       write them as a COUNT x dim TensorProto
      [--expect=VALUE]      exit 1 unless every element equals VALUE exactly
  metrics                   each server's metrics (Prometheus text format:
                            calls, errors and latency per method, keys
                            pulled and pushed, rows and pushes per table)
  checkpoint NAME [--step=S]  every server writes checkpoint NAME
  restore NAME              every server loads NAME ('latest': the newest)

Common:
  --ps=HOST:PORT,...        the servers, in shard order
  --deadline=SECONDS        per call, retries included (default 10)
  --tls-ca=FILE             talk TLS to servers whose certificates this CA
                            signed
  --tls-cert=FILE, --tls-key=FILE
                            a client certificate and key (mutual TLS)
  --tls-server-name=NAME    check certificates against NAME
  --token-file=FILE         send this token with every call (admin commands:
                            the admin token)
  --wire=W                  f32 (default) | f16 | bf16: rows and values on
                            the wire
  --help, --version         this text; the HeterPS version

Options take their value as --name=VALUE or --name VALUE.
)";

[[noreturn]] static void usage(const std::string &message) {
  std::fprintf(stderr, "heterps-ps: %s\n(see heterps-ps --help)\n",
               message.c_str());
  std::exit(2);
}

namespace {
struct Args {
  std::string command, positional;
  std::map<std::string, std::string> values;
  const std::string &need(const std::string &key) const {
    auto it = values.find(key);
    if (it == values.end())
      usage(command + " needs --" + key);
    return it->second;
  }
  std::string get(const std::string &key, const std::string &dflt) const {
    auto it = values.find(key);
    return it == values.end() ? dflt : it->second;
  }
};

double number(const std::string &key, const std::string &v) {
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x))
    usage("--" + key + " takes a finite number, got '" + v + "'");
  return x;
}

/// --KEY as a table id (0 to Client::kMaxTables - 1).
uint32_t tableIdOption(const Args &a, const std::string &key) {
  double id = number(key, a.need(key));
  if (!(id >= 0 && id < Client::kMaxTables) || id != std::floor(id))
    usage("--" + key + " takes a table id from 0 to " +
          std::to_string(Client::kMaxTables - 1) + ", got '" + a.need(key) +
          "'");
  return static_cast<uint32_t>(id);
}

/// FIRST:COUNT[:STRIDE] as a list of keys.
std::vector<int64_t> keyRange(const std::string &spec) {
  long long first = 0, count = 0, stride = 1;
  int fields =
      std::sscanf(spec.c_str(), "%lld:%lld:%lld", &first, &count, &stride);
  if (fields < 2 || count < 0 || stride < 1)
    usage("--keys takes FIRST:COUNT[:STRIDE], got '" + spec + "'");
  std::vector<int64_t> keys(count);
  for (long long i = 0; i < count; ++i)
    keys[i] = first + i * stride;
  return keys;
}
} // namespace

int main(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("heterps-ps (HeterPS) %s\n", HETERPS_VERSION);
      return 0;
    }
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      std::string key = arg.substr(2, eq == std::string::npos ? eq : eq - 2);
      if (eq != std::string::npos)
        a.values[key] = arg.substr(eq + 1);
      else if (key == "skip-non-finite")
        a.values[key] = "";
      else if (i + 1 < argc)
        // `--x v` as heterps-run and its serve take it.
        a.values[key] = argv[++i];
      else
        usage("--" + key + " needs a value");
    } else if (a.command.empty()) {
      a.command = arg;
    } else if (a.positional.empty()) {
      a.positional = arg;
    } else {
      usage("unexpected argument '" + arg + "'");
    }
  }
  if (a.command.empty())
    usage("no command given");
  static const char *kOptions[] = {"admit-min-count",
                                   "cache-rows",
                                   "deadline",
                                   "dim",
                                   "expect",
                                   "id",
                                   "init",
                                   "keys",
                                   "lr",
                                   "name",
                                   "optimizer",
                                   "out",
                                   "ps",
                                   "repeat",
                                   "seed",
                                   "skip-non-finite",
                                   "step",
                                   "storage",
                                   "table",
                                   "tls-ca",
                                   "tls-cert",
                                   "tls-key",
                                   "tls-server-name",
                                   "token-file",
                                   "ttl-seconds",
                                   "value",
                                   "vocab",
                                   "wire"};
  for (const auto &[key, value] : a.values)
    if (std::none_of(std::begin(kOptions), std::end(kOptions),
                     [&](const char *o) { return key == o; }))
      usage("unknown option '--" + key + "'");
  static const char *kCommands[] = {"info",          "metrics", "create-table",
                                    "push-constant", "pull",    "checkpoint",
                                    "restore"};
  if (std::none_of(std::begin(kCommands), std::end(kCommands),
                   [&](const char *c) { return a.command == c; }))
    usage("unknown command '" + a.command + "'");
  try {
    ClientOptions o;
    o.deadlineSeconds = number("deadline", a.get("deadline", "10"));
    if (a.values.count("tls-ca"))
      o.tlsCA = readCredentialFile(a.need("tls-ca"), "--tls-ca");
    if (a.values.count("tls-cert"))
      o.tlsCert = readCredentialFile(a.need("tls-cert"), "--tls-cert");
    if (a.values.count("tls-key"))
      o.tlsKey = readCredentialFile(a.need("tls-key"), "--tls-key");
    o.tlsServerName = a.get("tls-server-name", "");
    o.wire = a.get("wire", "f32");
    if (a.values.count("token-file"))
      o.token = readCredentialFile(a.need("token-file"), "--token-file", true);
    std::vector<std::unique_ptr<Connection>> servers;
    for (const std::string &address : parseServerList(a.need("ps")))
      servers.push_back(connectRemote(address, o));
    Client client(std::move(servers), o);
    client.connect();

    // The client learns a table's dimension and vocabulary from the
    // servers (creating it again with its own configuration is a no-op).
    auto tableOf = [&]() {
      uint32_t id = tableIdOption(a, "table");
      v1::TableStatus s = client.describe(static_cast<int>(id));
      client.createTable(s.config());
      return static_cast<int>(id);
    };

    if (a.command == "metrics") {
      for (const std::string &address : parseServerList(a.need("ps"))) {
        std::unique_ptr<Connection> c = connectRemote(address, o);
        std::string text;
        Status s = c->metrics(&text);
        if (!s.ok())
          throw PSError(s.code, address + ": " + s.message);
        std::printf("# server %s\n%s", address.c_str(), text.c_str());
      }
      return 0;
    }

    if (a.command == "info") {
      for (const std::string &address : parseServerList(a.need("ps"))) {
        std::unique_ptr<Connection> c = connectRemote(address, o);
        v1::ServerInfoResponse info;
        Status s = c->info(&info);
        if (!s.ok())
          throw PSError(s.code, address + ": " + s.message);
        std::printf("server %u of %u at %s: protocol %u, %u virtual shards, "
                    "%llu bytes of rows\n",
                    info.shard_index(), info.shard_count(), address.c_str(),
                    info.protocol_version(), info.virtual_shards(),
                    static_cast<unsigned long long>(info.memory_bytes()));
        for (const v1::TableStatus &t : info.tables())
          std::printf("  table %u '%s' dim %u: %llu rows, %llu pending, "
                      "%llu pushes, %llu duplicates, %llu non-finite skipped, "
                      "%llu evicted, %llu in RocksDB\n",
                      t.config().table_id(), t.config().name().c_str(),
                      t.config().dim(),
                      static_cast<unsigned long long>(t.rows()),
                      static_cast<unsigned long long>(t.pending_keys()),
                      static_cast<unsigned long long>(t.pushes_applied()),
                      static_cast<unsigned long long>(t.duplicate_pushes()),
                      static_cast<unsigned long long>(t.skipped_non_finite()),
                      static_cast<unsigned long long>(t.evicted_rows()),
                      static_cast<unsigned long long>(t.disk_rows()));
      }
      return 0;
    }
    if (a.command == "create-table") {
      v1::TableConfig c;
      c.set_table_id(tableIdOption(a, "id"));
      c.set_name(a.get("name", "table" + std::to_string(c.table_id())));
      c.set_dim(static_cast<uint32_t>(number("dim", a.need("dim"))));
      c.set_vocab(static_cast<uint64_t>(number("vocab", a.get("vocab", "0"))));
      std::string init = a.get("init", "zeros");
      size_t colon = init.find(':');
      c.mutable_init()->set_kind(init.substr(0, colon));
      if (colon != std::string::npos) {
        std::string args = init.substr(colon + 1);
        size_t at = 0;
        while (at <= args.size()) {
          size_t comma = args.find(',', at);
          c.mutable_init()->add_args(
              number("init", args.substr(at, comma == std::string::npos
                                                 ? std::string::npos
                                                 : comma - at)));
          if (comma == std::string::npos)
            break;
          at = comma + 1;
        }
      }
      c.mutable_init()->set_seed(
          static_cast<uint64_t>(number("seed", a.get("seed", "1"))));
      v1::Optimizer *opt = c.mutable_optimizer();
      opt->set_kind(a.get("optimizer", "sgd"));
      opt->set_learning_rate(number("lr", a.get("lr", "0.01")));
      opt->set_beta1(0.9);
      opt->set_beta2(0.999);
      opt->set_epsilon(opt->kind() == "adagrad" ? 1e-10 : 1e-8);
      c.set_admit_min_count(static_cast<uint32_t>(
          number("admit-min-count", a.get("admit-min-count", "0"))));
      c.set_ttl_seconds(number("ttl-seconds", a.get("ttl-seconds", "0")));
      if (a.values.count("skip-non-finite"))
        c.set_non_finite(v1::NON_FINITE_SKIP);
      std::string storage = a.get("storage", "memory");
      if (storage != "memory" && storage != "rocksdb")
        usage("--storage takes memory or rocksdb, got '" + storage + "'");
      c.set_storage(storage == "rocksdb" ? v1::STORAGE_ROCKSDB
                                         : v1::STORAGE_MEMORY);
      c.set_cache_rows(static_cast<uint64_t>(
          number("cache-rows", a.get("cache-rows", "1048576"))));
      client.createTable(c);
      std::printf("table %u '%s' (dim %u) on %zu servers\n", c.table_id(),
                  c.name().c_str(), c.dim(), client.numServers());
      return 0;
    }
    if (a.command == "push-constant") {
      int table = tableOf();
      std::vector<int64_t> keys = keyRange(a.need("keys"));
      float value = static_cast<float>(number("value", a.need("value")));
      int64_t repeat =
          static_cast<int64_t>(number("repeat", a.get("repeat", "1")));
      std::vector<float> grads(keys.size() * client.table(table).dim, value);
      for (int64_t r = 0; r < repeat; ++r)
        client.push(table, keys.data(), static_cast<int64_t>(keys.size()),
                    grads.data());
      std::printf("pushed %lld x %zu keys\n", static_cast<long long>(repeat),
                  keys.size());
      return 0;
    }
    if (a.command == "pull") {
      int table = tableOf();
      std::vector<int64_t> keys = keyRange(a.need("keys"));
      int64_t dim = client.table(table).dim;
      runtime::Tensor rows(runtime::DType::F32,
                           {static_cast<int64_t>(keys.size()), dim});
      client.pull(table, keys.data(), static_cast<int64_t>(keys.size()),
                  rows.as<float>());
      if (a.values.count("out"))
        runtime::writeTensorProto(a.values["out"], client.table(table).name,
                                  rows);
      if (a.values.count("expect")) {
        float want = static_cast<float>(number("expect", a.values["expect"]));
        for (int64_t i = 0; i < rows.numElements(); ++i)
          if (rows.as<float>()[i] != want) {
            std::fprintf(stderr,
                         "heterps-ps: key %lld element %lld is %.9g, "
                         "expected %.9g\n",
                         static_cast<long long>(keys[i / dim]),
                         static_cast<long long>(i % dim), rows.as<float>()[i],
                         want);
            return 1;
          }
        std::printf("all %zu rows equal %.9g\n", keys.size(), want);
      }
      return 0;
    }
    if (a.command == "checkpoint" || a.command == "restore") {
      if (a.positional.empty())
        usage(a.command + " needs a checkpoint NAME");
      if (a.command == "checkpoint") {
        int64_t step = static_cast<int64_t>(number("step", a.get("step", "0")));
        client.checkpoint(a.positional, step);
        std::printf("checkpoint %s at step %lld on %zu servers\n",
                    a.positional.c_str(), static_cast<long long>(step),
                    client.numServers());
      } else {
        int64_t step = client.restore(a.positional);
        std::printf("restored %s at step %lld on %zu servers\n",
                    a.positional.c_str(), static_cast<long long>(step),
                    client.numServers());
      }
      return 0;
    }
    usage("unknown command '" + a.command + "'");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "heterps-ps: error: %s\n", e.what());
    return 1;
  }
}
