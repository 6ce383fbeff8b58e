//===- heterps-ps.cpp - Operate a PS service from the command line --------===//
//
// The administration client of the parameter-server service: server and
// table status, creating tables, checkpoints and restores, and reading or
// pushing rows (which the cross-process tests use to push known gradients
// from several processes).
//
//===----------------------------------------------------------------------===//

#include "heterps/PS/Client.h"
#include "heterps/PS/Flags.h"
#include "heterps/PS/Metrics.h"
#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/Optimizer.h"
#include "heterps/Version.h"

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace heterps;
using namespace heterps::ps;

static const char *kUsage =
    R"(usage: heterps-ps COMMAND --ps=HOST:PORT,... [options]

Commands (heterps-ps COMMAND --help lists a command's options):
  info            each server's shard, protocol, memory and tables
  metrics         each server's metrics (Prometheus text format: calls, errors
                  and latency per method, keys pulled and pushed, rows and
                  pushes per table)
  create-table    create a table on every server
  set-optimizer   change hyper-parameters of a table's optimizer (its rows
                  keep their state)
  push-constant   push a constant gradient for a range of keys
  pull            read rows of a range of keys
  checkpoint NAME every server writes checkpoint NAME
  restore NAME    every server loads NAME ('latest': the newest)

Every command takes the PS client's options, named as in heterps-run:
--ps, --ps-deadline, --ps-tls-ca, --ps-tls-cert, --ps-tls-key,
--ps-tls-server-name, --ps-token-file (admin commands: the admin token) and
--ps-wire.
)";

namespace {
/// "1 server", "2 servers".
std::string serverCount(size_t n) {
  return std::to_string(n) + (n == 1 ? " server" : " servers");
}

struct Command {
  const char *name, *usage;
};
const Command kCommands[] = {
    {"info", "usage: heterps-ps info --ps=HOST:PORT,... [options]\n\n"
             "Prints each server's shard, protocol, memory and tables.\n"},
    {"metrics", "usage: heterps-ps metrics --ps=HOST:PORT,... [options]\n\n"
                "Prints the servers' metrics in Prometheus text format, "
                "each sample labelled with its server's shard.\n"},
    {"create-table",
     "usage: heterps-ps create-table --ps=HOST:PORT,... --id=N --dim=D "
     "[options]\n\nCreates a table on every server (a no-op where it "
     "exists with the same configuration).\n"},
    {"set-optimizer",
     "usage: heterps-ps set-optimizer --ps=HOST:PORT,... --table=N "
     "[--learning-rate=X] [--momentum=X] [--beta1=X] [--beta2=X] "
     "[--epsilon=X] [--weight-decay=X] [options]\n\nGives a table on every "
     "server other hyper-parameters of the optimizer it has (an admin "
     "call); every row keeps its optimizer state. The kind of optimizer "
     "cannot change.\n"},
    {"push-constant",
     "usage: heterps-ps push-constant --ps=HOST:PORT,... --table=N "
     "--keys=FIRST:COUNT[:STRIDE] --value=VALUE [options]\n\nPushes the "
     "gradient VALUE for every key, --repeat times.\n"},
    {"pull", "usage: heterps-ps pull --ps=HOST:PORT,... --table=N "
             "--keys=FIRST:COUNT[:STRIDE] [options]\n\nReads rows: prints "
             "them ('KEY: VALUE ...'), writes them (--out) or compares them "
             "(--expect).\n"},
    {"checkpoint",
     "usage: heterps-ps checkpoint NAME --ps=HOST:PORT,... [options]\n\n"
     "Every server writes checkpoint NAME under its --checkpoint-dir.\n"},
    {"restore",
     "usage: heterps-ps restore NAME --ps=HOST:PORT,... [options]\n\n"
     "Every server loads checkpoint NAME ('latest': the newest complete "
     "one).\n"},
};

/// The hyper-parameter options an optimizer of `kind` reads, as "--name".
std::vector<std::string> hyperParametersOf(const std::string &kind) {
  std::vector<std::string> takes = {"--learning-rate"};
  if (kind == "momentum")
    takes.push_back("--momentum");
  if (kind == "adam")
    takes.insert(takes.end(), {"--beta1", "--beta2"});
  if (kind == "adam" || kind == "adagrad")
    takes.push_back("--epsilon");
  takes.push_back("--weight-decay");
  return takes;
}

/// The first option given that an optimizer of `kind` does not read
/// ("--momentum"), or "": it would be stored and shown, and change nothing.
std::string unreadHyperParameter(const Flags &flags, const std::string &kind) {
  std::vector<std::string> takes = hyperParametersOf(kind);
  for (const char *option : {"momentum", "beta1", "beta2", "epsilon"})
    if (flags.given(option) &&
        std::find(takes.begin(), takes.end(), std::string("--") + option) ==
            takes.end())
      return std::string("--") + option;
  return "";
}

/// "KIND, which does not read it (it takes --learning-rate, ...)".
std::string readsOnly(const std::string &kind) {
  std::string list;
  for (const std::string &t : hyperParametersOf(kind))
    list += (list.empty() ? "" : ", ") + t;
  return kind + ", which does not read it (it takes " + list + ")";
}

/// FIRST:COUNT[:STRIDE] as a list of keys; "" or the error.
std::string keyRange(const std::string &spec, std::vector<int64_t> &keys) {
  long long numbers[3] = {0, 0, 1};
  int fields = 0;
  // Each field whole, and in range: sscanf's %lld took 2^64-1 as 2^63-1.
  for (size_t at = 0; fields < 4;) {
    size_t colon = spec.find(':', at);
    std::string field = spec.substr(
        at, colon == std::string::npos ? std::string::npos : colon - at);
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(field.c_str(), &end, 10);
    if (field.empty() || *end || errno == ERANGE || fields == 3)
      return "--keys takes FIRST:COUNT[:STRIDE] with keys from -2^63 to "
             "2^63-1 (COUNT up to 2^26), got '" +
             spec + "'";
    numbers[fields++] = v;
    if (colon == std::string::npos)
      break;
    at = colon + 1;
  }
  long long first = numbers[0], count = numbers[1], stride = numbers[2];
  if (fields < 2 || count < 0 || count > (1 << 26) || stride < 1)
    return "--keys takes FIRST:COUNT[:STRIDE] (COUNT up to 2^26), got '" +
           spec + "'";
  long long last;
  if (count > 0 && (__builtin_mul_overflow(count - 1, stride, &last) ||
                    __builtin_add_overflow(first, last, &last)))
    return "--keys " + spec + " runs past the largest key (2^63-1)";
  keys.resize(count);
  for (long long i = 0; i < count; ++i)
    keys[i] = first + i * stride;
  return "";
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("heterps-ps (HeterPS) %s\n", HETERPS_VERSION);
    return 0;
  }
  quietGrpcLog();
  std::string command = argv[1];
  const Command *known = nullptr;
  std::vector<std::string> names;
  for (const Command &c : kCommands) {
    names.push_back(c.name);
    if (command == c.name)
      known = &c;
  }
  if (!known) {
    std::string near = nearestName(command, names);
    std::fprintf(stderr,
                 "heterps-ps: unknown command '%s'%s\n(see heterps-ps "
                 "--help)\n",
                 command.c_str(),
                 near.empty() ? ""
                              : ("; did you mean '" + near + "'?").c_str());
    return 2;
  }

  Flags flags("heterps-ps " + command, known->usage);
  ClientFlags client;
  flags.group("PS client");
  client.declare(flags);
  for (auto [old, now] : {std::pair{"deadline", "ps-deadline"},
                          {"tls-ca", "ps-tls-ca"},
                          {"tls-cert", "ps-tls-cert"},
                          {"tls-key", "ps-tls-key"},
                          {"tls-server-name", "ps-tls-server-name"},
                          {"token-file", "ps-token-file"},
                          {"wire", "ps-wire"}})
    flags.renamed(old, now);

  std::string name;
  flags.group(command);
  // create-table.
  v1::TableConfig config;
  uint32_t tableId = 0, dim = 0;
  uint64_t vocab = 0, seed = 1;
  std::string tableName, init = "zeros", optimizer = "sgd";
  TableFlags tableFlags;
  // create-table and set-optimizer: the hyper-parameters given.
  runtime::OptimizerConfig tuned;
  // push-constant and pull.
  std::vector<int64_t> keys;
  double value = 0, expect = 0;
  int64_t repeat = 1, step = 0;
  std::string out;
  auto tableOption = [&](const char *option, const char *help) {
    flags.option(option, tableId, "N", help, 0, Client::kMaxTables - 1);
  };
  // With `defaults`, the help names create-table's (heterps-opt's).
  auto hyperParameterOptions = [&](bool defaults) {
    auto help = [&](const char *what, const char *value) {
      return std::string(what) +
             (defaults ? std::string(" (default ") + value + ")" : "");
    };
    flags.option("--momentum", tuned.momentum, "X",
                 help("momentum's factor, in [0, 1)", "0.9"), 0, 1);
    flags.option("--beta1", tuned.beta1, "X",
                 help("Adam's beta1, in (0, 1)", "0.9"), 0, 1,
                 /*minExclusive=*/true);
    flags.option("--beta2", tuned.beta2, "X",
                 help("Adam's beta2, in (0, 1)", "0.999"), 0, 1,
                 /*minExclusive=*/true);
    flags.option("--epsilon", tuned.epsilon, "X",
                 help("Adam's and Adagrad's epsilon", "1e-08"), 0, 1,
                 /*minExclusive=*/true);
    flags.option("--weight-decay", tuned.weightDecay, "X",
                 help("L2 weight decay", "0"), 0, 1e6);
  };
  auto keysOption = [&] {
    flags.custom("--keys", "FIRST:COUNT[:STRIDE]",
                 "the keys FIRST, FIRST+STRIDE, ... (COUNT of them)",
                 [&](const std::string &v) { return keyRange(v, keys); });
  };
  if (command == "create-table") {
    tableOption("--id", "the table id (required)");
    flags.option("--dim", dim, "D", "floats per row (required)", 1, 1 << 16);
    flags.option("--vocab", vocab, "V",
                 "ids from 0 to V-1 (default 0: any 64-bit id, hashed)");
    flags.option("--name", tableName, "NAME",
                 "the table's name (default "
                 "tableN)");
    flags.option("--init", init, "KIND[:ARG,...]",
                 "the rows' initial values (default zeros; e.g. "
                 "uniform:-0.05,0.05, normal:0,0.01)");
    flags.option("--seed", seed, "S", "the initializer's seed (default 1)");
    flags.choice("--optimizer", optimizer,
                 {"sgd", "momentum", "adam", "adagrad"},
                 "the server-side optimizer (default sgd)");
    flags.option("--learning-rate", tuned.learningRate, "X",
                 "the optimizer's learning rate (default 0.01)", 0, 1e6,
                 /*minExclusive=*/true);
    flags.renamed("lr", "learning-rate");
    hyperParameterOptions(true);
    tableFlags.declare(flags);
    flags.renamed("storage", "table-storage");
    flags.renamed("cache-rows", "table-cache-rows");
  } else if (command == "set-optimizer") {
    tableOption("--table", "the table (required)");
    flags.option("--learning-rate", tuned.learningRate, "X",
                 "the learning rate", 0, 1e6, /*minExclusive=*/true);
    flags.renamed("lr", "learning-rate");
    hyperParameterOptions(false);
  } else if (command == "push-constant") {
    tableOption("--table", "the table (required)");
    keysOption();
    flags.option("--value", value, "VALUE",
                 "the gradient of every element (required)");
    flags.option("--repeat", repeat, "R", "push R times (default 1)", 1,
                 1 << 20);
  } else if (command == "pull") {
    tableOption("--table", "the table (required)");
    keysOption();
    flags.option("--out", out, "FILE.pb",
                 "write the rows as a COUNT x dim TensorProto");
    flags.option("--expect", expect, "VALUE",
                 "exit 1 unless every element equals VALUE exactly");
  } else if (command == "checkpoint" || command == "restore") {
    flags.positional("checkpoint name", name);
    if (command == "checkpoint")
      flags.option("--step", step, "S",
                   "the training step the checkpoint records (default 0)", 0);
  }
  flags.parse(argc, argv, 2);
  if (client.servers.empty())
    flags.fail("--ps=HOST:PORT,... (the servers) is required");
  if (std::string error = client.check(); !error.empty())
    flags.fail(error);
  for (const char *required :
       command == "create-table"    ? std::vector<const char *>{"id", "dim"}
       : command == "set-optimizer" ? std::vector<const char *>{"table"}
       : command == "push-constant"
           ? std::vector<const char *>{"table", "keys", "value"}
       : command == "pull" ? std::vector<const char *>{"table", "keys"}
                           : std::vector<const char *>{})
    if (!flags.given(required))
      flags.fail(command + " needs --" + required);
  const char *const hyperParameters[] = {
      "learning-rate", "momentum", "beta1", "beta2", "epsilon", "weight-decay"};
  if (command == "set-optimizer" &&
      std::none_of(std::begin(hyperParameters), std::end(hyperParameters),
                   [&](const char *h) { return flags.given(h); }))
    flags.fail("set-optimizer needs at least one of --learning-rate, "
               "--momentum, --beta1, --beta2, --epsilon and --weight-decay");
  if ((command == "checkpoint" || command == "restore") && name.empty())
    flags.fail(command + " needs a checkpoint NAME");
  if (command == "create-table") {
    if (std::string error = tableFlags.check(flags); !error.empty())
      flags.fail(error);
    if (std::string option = unreadHyperParameter(flags, optimizer);
        !option.empty())
      flags.fail(option + ": the table's optimizer is " + readsOnly(optimizer));
  }
  // Values travel as 32-bit floats: beyond their range they would arrive as
  // infinities.
  for (auto [option, v] : {std::pair<const char *, double>{"value", value},
                           std::pair<const char *, double>{"expect", expect}})
    if (flags.given(option) && std::abs(v) > FLT_MAX) {
      char text[128];
      std::snprintf(text, sizeof(text),
                    "--%s %g is beyond a 32-bit float's range (%g)", option, v,
                    static_cast<double>(FLT_MAX));
      flags.fail(text);
    }

  if (command == "create-table") {
    config.set_table_id(tableId);
    config.set_name(tableName.empty() ? "table" + std::to_string(tableId)
                                      : tableName);
    config.set_dim(dim);
    config.set_vocab(vocab);
    size_t colon = init.find(':');
    config.mutable_init()->set_kind(init.substr(0, colon));
    if (colon != std::string::npos) {
      std::string args = init.substr(colon + 1);
      size_t at = 0;
      while (at <= args.size()) {
        size_t comma = args.find(',', at);
        std::string arg = args.substr(
            at, comma == std::string::npos ? std::string::npos : comma - at);
        char *end = nullptr;
        double x = std::strtod(arg.c_str(), &end);
        if (arg.empty() || *end || !std::isfinite(x))
          flags.fail("--init takes KIND[:ARG,...] with finite numbers as "
                     "ARGs, got '" +
                     init + "'");
        config.mutable_init()->add_args(x);
        if (comma == std::string::npos)
          break;
        at = comma + 1;
      }
    }
    config.mutable_init()->set_seed(seed);
    v1::Optimizer *opt = config.mutable_optimizer();
    // heterps-opt's autodiff defaults, so that a table made here is the
    // one a plan with the same settings asks for.
    opt->set_kind(optimizer);
    opt->set_learning_rate(tuned.learningRate);
    opt->set_momentum(flags.given("momentum")   ? tuned.momentum
                      : optimizer == "momentum" ? 0.9
                                                : 0.0);
    opt->set_beta1(tuned.beta1);
    opt->set_beta2(tuned.beta2);
    opt->set_epsilon(tuned.epsilon);
    opt->set_weight_decay(tuned.weightDecay);
    tableFlags.applyTo(config);
  }

  try {
    ClientOptions o = client.clientOptions();
    std::vector<std::string> addresses = parseServerList(client.servers);
    std::vector<std::unique_ptr<Connection>> servers;
    for (const std::string &address : addresses)
      servers.push_back(connectRemote(address, o));
    Client ps(std::move(servers), o);
    ps.connect();
    if (command == "metrics") {
      std::vector<std::string> texts;
      for (const std::string &address : addresses) {
        Status s = connectRemote(address, o)->metrics(&texts.emplace_back());
        if (!s.ok())
          throw PSError(s.code, address + ": " + s.message);
      }
      std::fputs(mergeMetrics(texts).c_str(), stdout);
      return 0;
    }
    if (command == "info") {
      for (const std::string &address : addresses) {
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
        for (const v1::TableStatus &t : info.tables()) {
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
          std::printf("    optimizer %s\n",
                      optimizerText(t.config().optimizer()).c_str());
        }
      }
      return 0;
    }

    // The client learns a table's dimension and vocabulary from the
    // servers (creating it again with its own configuration is a no-op).
    auto knownTable = [&]() {
      v1::TableStatus s = ps.describe(static_cast<int>(tableId));
      ps.createTable(s.config());
      return static_cast<int>(tableId);
    };

    if (command == "create-table") {
      ps.createTable(config);
      std::printf("table %u '%s' (dim %u) on %s\n", config.table_id(),
                  config.name().c_str(), config.dim(),
                  serverCount(ps.numServers()).c_str());
      return 0;
    }
    if (command == "set-optimizer") {
      v1::TableStatus status = ps.describe(static_cast<int>(tableId));
      ps.createTable(status.config());
      const v1::Optimizer &had = status.config().optimizer();
      std::string kind = had.kind().empty() ? "sgd" : had.kind();
      if (std::string option = unreadHyperParameter(flags, kind);
          !option.empty())
        runtime::fail("set-optimizer ", option, ": table ", tableId, " '",
                      status.config().name(), "' has ", readsOnly(kind));
      v1::Optimizer want = had;
      if (flags.given("learning-rate"))
        want.set_learning_rate(tuned.learningRate);
      if (flags.given("momentum"))
        want.set_momentum(tuned.momentum);
      if (flags.given("beta1"))
        want.set_beta1(tuned.beta1);
      if (flags.given("beta2"))
        want.set_beta2(tuned.beta2);
      if (flags.given("epsilon"))
        want.set_epsilon(tuned.epsilon);
      if (flags.given("weight-decay"))
        want.set_weight_decay(tuned.weightDecay);
      ps.setTableOptimizer(static_cast<int>(tableId), want);
      std::printf("table %u '%s': %s, was %s, on %s\n", tableId,
                  status.config().name().c_str(), optimizerText(want).c_str(),
                  optimizerText(had).c_str(),
                  serverCount(ps.numServers()).c_str());
      return 0;
    }
    if (command == "push-constant") {
      int table = knownTable();
      std::vector<float> grads(keys.size() * ps.table(table).dim,
                               static_cast<float>(value));
      for (int64_t r = 0; r < repeat; ++r)
        ps.push(table, keys.data(), static_cast<int64_t>(keys.size()),
                grads.data());
      std::printf("pushed %lld x %zu keys\n", static_cast<long long>(repeat),
                  keys.size());
      return 0;
    }
    if (command == "pull") {
      int table = knownTable();
      int64_t rowDim = ps.table(table).dim;
      runtime::Tensor rows(runtime::DType::F32,
                           {static_cast<int64_t>(keys.size()), rowDim});
      ps.pull(table, keys.data(), static_cast<int64_t>(keys.size()),
              rows.as<float>());
      if (!out.empty())
        runtime::writeTensorProto(out, ps.table(table).name, rows);
      // Without a file or a value to compare with, the rows are shown.
      if (out.empty() && !flags.given("expect"))
        for (size_t k = 0; k < keys.size(); ++k) {
          std::printf("%lld:", static_cast<long long>(keys[k]));
          for (int64_t j = 0; j < rowDim; ++j)
            std::printf(" %.9g", rows.as<float>()[k * rowDim + j]);
          std::printf("\n");
        }
      if (flags.given("expect")) {
        float want = static_cast<float>(expect);
        for (int64_t i = 0; i < rows.numElements(); ++i)
          if (rows.as<float>()[i] != want) {
            std::fprintf(stderr,
                         "heterps-ps: key %lld element %lld is %.9g, "
                         "expected %.9g\n",
                         static_cast<long long>(keys[i / rowDim]),
                         static_cast<long long>(i % rowDim),
                         rows.as<float>()[i], want);
            return 1;
          }
        std::printf("all %zu rows equal %.9g\n", keys.size(), want);
      }
      return 0;
    }
    if (command == "checkpoint") {
      ps.checkpoint(name, step);
      std::printf("checkpoint %s at step %lld on %s\n", name.c_str(),
                  static_cast<long long>(step),
                  serverCount(ps.numServers()).c_str());
    } else {
      int64_t restored = ps.restore(name);
      std::printf("restored %s at step %lld on %s\n", name.c_str(),
                  static_cast<long long>(restored),
                  serverCount(ps.numServers()).c_str());
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "heterps-ps: error: %s\n", e.what());
    return 1;
  }
}
