//===- Options.cpp - heterps-run's command line ---------------------------===//

#include "Options.h"

#include "heterps/Runtime/PullAhead.h"
#include "heterps/Version.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

using namespace heterps::run;

static const char *kUsage = R"(usage: heterps-run PLAN [options]
       heterps-run serve [options]   (a parameter server; serve --help)
       heterps-run launch PLAN --np=N [options]
                                     (PS servers and an mpirun job of N
                                     processes; launch --help)
       mpirun -np N heterps-run PLAN --ps=... [options]
                                     (one process of a job: it runs the
                                     stage replica its rank names)

Executes a plan written by heterps-opt --heterps-emit-plan. A training plan
(compiled with --heterps-autodiff) trains; --infer runs the forward pass.

Data:
  --data=FILES             training data: a file, or a comma-separated list
                           of files and glob patterns ('day_*.gz') read in
                           order; without it (or 'synthetic'), synthetic
                           CTR data
  --format=F               criteo | libsvm | csv | idx | synthetic (default:
                           from the file name: .tsv criteo, .svm/.libsvm
                           libsvm, .csv csv, *-idx3-ubyte[.gz] idx)
  --eval-data=FILE         evaluated after every epoch (same format;
                           'synthetic': another synthetic stream)
  --shuffle=N              shuffle buffer of N examples (default 0: file order)
  --synthetic-examples=N   examples per synthetic epoch (default 65536)
  --synthetic-vocab=N      id range of synthetic sparse features (default 1000)
  --csv-label-column=N     the label column of CSV data (default 0)
  --csv-header             CSV data starts with a header line
  --input NAME=FILE.pb     an ONNX TensorProto for input NAME (repeatable);
                           in training, every step uses these tensors
Training:
  --epochs=N               passes over the data (default 1)
  --steps=N                stop after N steps (default: the epochs)
  --batch=N                examples per step (default: the plan's)
  --threads=N              CPU threads for the kernels (default 1)
  --seed=N                 initialisation, shuffle and dropout seed (default 1)
  --log-every=N            progress line every N steps (default 100; 0: none)
  --save=DIR               write a checkpoint at the end
  --checkpoint-every=N     with --save, also write it every N steps
  --load=DIR               start from a checkpoint: parameters, tables,
                           step and the position in the data
  --fallback=cpu           run stages placed on GPUs with the CPU kernels
Pipeline (plans with several stages, or stages with several units):
  --pipeline=P             auto (default: pipelined when the plan has several
                           stages or units) | on | off (one worker runs every
                           stage in order)
  --schedule=S             1f1b (default) | gpipe: the order of a stage's
                           forward and backward micro-batches
  --max-workers=N          worker threads in all (default: one per hardware
                           thread); a stage's units map onto at most this many
                           replicas, each stage gets at least one
  --micro-batches=N        micro-batches per step (default: the plan's, at
                           least one per replica)
  --sync=S                 sync (default: a stage's replicas sum their
                           gradients and apply them once per step, as one
                           worker would) | async (each replica sends its
                           gradients to the PS, which applies them as they
                           come; replicas compute with their own copy of
                           their stage's parameters)
  --max-staleness=N        with --sync=async, a replica refreshes its copy
                           from the PS at least every N+1 steps (default 0:
                           after every step)
  --data-lanes=N           split the data into N lanes (whole files when
                           there are enough, else every N-th example);
                           micro-batch m of a step comes from lane m mod N,
                           and a process of a job reads only its workers'
                           lanes (default: 1 in one process; in a job, the
                           least common multiple of the stages' replicas)
  --profile=FILE           time every op of the training steps and write the
                           times per layer as a profile table for the
                           scheduling passes' profile= option
  --metrics-file=FILE      write a JSON line per progress line and per
                           evaluation: kind (steps, eval, inference), step,
                           epoch, seconds, samples_per_second, loss, auc,
                           logloss, ne, calibration or accuracy
                           (scripts/plot-metrics.py draws them)
  --trace=FILE             write a Chrome/Perfetto trace of the training
                           steps: every op, segment, send and wait of every
                           worker (chrome://tracing, ui.perfetto.dev)
  --profile-resource=R     the resource type the profiled times are for
                           (default: each stage's; stages run with
                           --fallback=cpu are then left out)
Embedding tables (a parameter-server service; without --ps, embedded):
  --ps=HOST:PORT,...       the PS servers (heterps-run serve), in shard order
  --ps-deadline=SECONDS    a PS call fails with UNAVAILABLE after this long,
                           retries included (default 10)
  --ps-tls-ca=FILE         talk TLS to the servers, whose certificates this
                           CA (PEM) signed
  --ps-tls-cert=FILE, --ps-tls-key=FILE
                           this worker's certificate and key, for servers
                           that require client certificates
  --ps-tls-server-name=N   check the servers' certificates against N
                           instead of each address's host
  --ps-token-file=FILE     send this token (the file's first line) with
                           every PS call
  --ps-wire=W              f32 (default) | f16 | bf16: rows and gradients
                           travel to the PS servers as 16-bit floats, half
                           the bytes (f16: rows as f16, gradients as bf16;
                           bf16: both bf16, f32's range with 8 bits of
                           mantissa)
  --ps-pull-ahead=M        exact (default with --ps) | stale | off: pull
                           the next step's rows while a step runs (exact
                           pulls again the rows the step pushed; stale uses
                           them up to one step old); one worker only
  --export-tables=DIR      at the end, write each table with a vocabulary as
                           DIR/table.<name>.pb (vocab x dim TensorProto)
  --table-storage=S        memory (default) | rocksdb: rows beyond
                           --table-cache-rows per server live in RocksDB
  --table-cache-rows=N     rows in memory per server (default 1048576)
  --rocksdb-dir=DIR        the embedded server's RocksDB directory (scratch)
  --admit-min-count=N      a key gets a row after N sightings (default 0)
  --ttl-seconds=X          evict rows unused for X seconds (default 0: never)
  --skip-non-finite        skip and count rows with NaN/Inf gradients instead
                           of failing the push
Inference:
  --infer                  forward pass only; with --data, report metrics
  --output-dir=DIR         with --input, write each output as
                           DIR/<output name>.pb; with data, a line per
                           example in DIR/predictions.tsv: its scores, then
                           its label
Other:
  --print-plan[=F]         print the plan, then exit: text (the default) lists
                           its stages, tables and prediction; dot writes it
                           as a Graphviz graph (stages as boxes, ops coloured
                           by resource type, channels with bytes per sample;
                           scripts/render-plan.sh makes an SVG)
  -q, --quiet              print only errors and the results asked for
                           (--print-plan, --infer's outputs and metrics)
  -v, --verbose            every progress line on its own line, also on a
                           terminal (where one line is otherwise rewritten)
  --help                   this text
  --version                the HeterPS version
)";

[[noreturn]] static void usageError(const std::string &message) {
  std::fprintf(stderr, "heterps-run: %s\n(see heterps-run --help)\n",
               message.c_str());
  std::exit(2);
}

static int64_t toInt(const std::string &key, const std::string &v) {
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end)
    usageError("--" + key + " takes an integer, got '" + v + "'");
  return x;
}

static const char *const kFlags[] = {"csv-header",      "infer",  "print-plan",
                                     "skip-non-finite", "help",   "quiet",
                                     "verbose",         "version"};

bool heterps::run::isFlagOption(const std::string &key) {
  for (const char *flag : kFlags)
    if (key == flag)
      return true;
  return false;
}

Options heterps::run::parseOptions(int argc, char **argv) {
  Options o;
  std::map<std::string, std::function<void(const std::string &)>> valued{
      {"data", [&](const std::string &v) { o.data = v; }},
      {"eval-data", [&](const std::string &v) { o.evalData = v; }},
      {"format", [&](const std::string &v) { o.format = v; }},
      {"shuffle",
       [&](const std::string &v) { o.shuffle = toInt("shuffle", v); }},
      {"synthetic-examples",
       [&](const std::string &v) {
         o.syntheticExamples = toInt("synthetic-examples", v);
       }},
      {"synthetic-vocab",
       [&](const std::string &v) {
         o.syntheticVocab = toInt("synthetic-vocab", v);
       }},
      {"csv-label-column",
       [&](const std::string &v) {
         o.csvLabelColumn = toInt("csv-label-column", v);
       }},
      {"epochs", [&](const std::string &v) { o.epochs = toInt("epochs", v); }},
      {"steps", [&](const std::string &v) { o.steps = toInt("steps", v); }},
      {"batch", [&](const std::string &v) { o.batch = toInt("batch", v); }},
      {"threads",
       [&](const std::string &v) {
         o.threads = static_cast<int>(toInt("threads", v));
       }},
      {"seed",
       [&](const std::string &v) {
         o.seed = static_cast<uint64_t>(toInt("seed", v));
       }},
      {"log-every",
       [&](const std::string &v) { o.logEvery = toInt("log-every", v); }},
      {"save", [&](const std::string &v) { o.save = v; }},
      {"load", [&](const std::string &v) { o.load = v; }},
      {"checkpoint-every",
       [&](const std::string &v) {
         o.checkpointEvery = toInt("checkpoint-every", v);
       }},
      {"ps", [&](const std::string &v) { o.ps = v; }},
      {"ps-deadline",
       [&](const std::string &v) {
         char *end = nullptr;
         o.psDeadline = std::strtod(v.c_str(), &end);
         if (v.empty() || *end || !(o.psDeadline > 0))
           usageError("--ps-deadline takes a positive number of seconds, "
                      "got '" +
                      v + "'");
       }},
      {"export-tables", [&](const std::string &v) { o.exportTables = v; }},
      {"ps-tls-ca", [&](const std::string &v) { o.psTlsCA = v; }},
      {"ps-tls-cert", [&](const std::string &v) { o.psTlsCert = v; }},
      {"ps-tls-key", [&](const std::string &v) { o.psTlsKey = v; }},
      {"ps-tls-server-name",
       [&](const std::string &v) { o.psTlsServerName = v; }},
      {"ps-token-file", [&](const std::string &v) { o.psTokenFile = v; }},
      {"ps-wire",
       [&](const std::string &v) {
         if (v != "f32" && v != "f16" && v != "bf16")
           usageError("--ps-wire takes f32, f16 or bf16, got '" + v + "'");
         o.psWire = v;
       }},
      {"ps-pull-ahead",
       [&](const std::string &v) {
         if (!runtime::parsePullAheadMode(v))
           usageError("--ps-pull-ahead takes exact, stale or off, got '" + v +
                      "'");
         o.psPullAhead = v;
       }},
      {"table-storage",
       [&](const std::string &v) {
         if (v != "memory" && v != "rocksdb")
           usageError("--table-storage takes memory or rocksdb, got '" + v +
                      "'");
         o.tablesOnDisk = v == "rocksdb";
       }},
      {"table-cache-rows",
       [&](const std::string &v) {
         o.tableCacheRows = toInt("table-cache-rows", v);
       }},
      {"rocksdb-dir", [&](const std::string &v) { o.rocksdbDir = v; }},
      {"admit-min-count",
       [&](const std::string &v) {
         o.admitMinCount = toInt("admit-min-count", v);
       }},
      {"ttl-seconds",
       [&](const std::string &v) {
         char *end = nullptr;
         o.ttlSeconds = std::strtod(v.c_str(), &end);
         if (v.empty() || *end || !(o.ttlSeconds >= 0))
           usageError("--ttl-seconds takes a number >= 0, got '" + v + "'");
       }},
      {"pipeline",
       [&](const std::string &v) {
         if (v != "auto" && v != "on" && v != "off")
           usageError("--pipeline takes auto, on or off, got '" + v + "'");
         o.pipeline = v;
       }},
      {"schedule",
       [&](const std::string &v) {
         if (v != "1f1b" && v != "gpipe")
           usageError("--schedule takes 1f1b or gpipe, got '" + v + "'");
         o.schedule = v;
       }},
      {"max-workers",
       [&](const std::string &v) {
         o.maxWorkers = static_cast<int>(toInt("max-workers", v));
         if (o.maxWorkers < 1)
           usageError("--max-workers must be positive, got '" + v + "'");
       }},
      {"micro-batches",
       [&](const std::string &v) {
         o.microBatches = toInt("micro-batches", v);
         if (o.microBatches < 1)
           usageError("--micro-batches must be positive, got '" + v + "'");
       }},
      {"sync",
       [&](const std::string &v) {
         if (v != "sync" && v != "async")
           usageError("--sync takes sync or async, got '" + v + "'");
         o.sync = v;
       }},
      {"max-staleness",
       [&](const std::string &v) {
         o.maxStaleness = toInt("max-staleness", v);
         if (o.maxStaleness < 0)
           usageError("--max-staleness takes a step count >= 0, got '" + v +
                      "'");
       }},
      {"data-lanes",
       [&](const std::string &v) {
         o.dataLanes = toInt("data-lanes", v);
         if (o.dataLanes < 1 || o.dataLanes > 4096)
           usageError("--data-lanes takes a count from 1 to 4096, got '" + v +
                      "'");
       }},
      {"profile", [&](const std::string &v) { o.profile = v; }},
      {"trace", [&](const std::string &v) { o.trace = v; }},
      {"metrics-file", [&](const std::string &v) { o.metricsFile = v; }},
      {"profile-resource",
       [&](const std::string &v) { o.profileResource = v; }},
      {"fallback",
       [&](const std::string &v) {
         if (v != "cpu")
           usageError("--fallback takes 'cpu', got '" + v + "'");
         o.fallbackCPU = true;
       }},
      {"output-dir", [&](const std::string &v) { o.outputDir = v; }},
      {"input",
       [&](const std::string &v) {
         size_t eq = v.find('=');
         if (eq == std::string::npos || eq == 0)
           usageError("--input takes NAME=FILE.pb, got '" + v + "'");
         o.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
       }},
  };
  std::map<std::string, std::function<void()>> flags{
      {"csv-header", [&] { o.csvHeader = true; }},
      {"infer", [&] { o.infer = true; }},
      {"skip-non-finite", [&] { o.skipNonFinite = true; }},
      {"quiet", [&] { o.quiet = true; }},
      {"verbose", [&] { o.verbose = true; }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--version") {
      std::printf("heterps-run (HeterPS) %s\n", HETERPS_VERSION);
      std::exit(0);
    }
    if (arg == "-q")
      arg = "--quiet";
    else if (arg == "-v")
      arg = "--verbose";
    if (arg.rfind("--", 0) != 0) {
      if (!o.plan.empty())
        usageError("more than one plan file: '" + o.plan + "' and '" + arg +
                   "'");
      o.plan = arg;
      continue;
    }
    std::string key = arg.substr(2), value;
    size_t eq = key.find('=');
    bool hasValue = eq != std::string::npos;
    if (hasValue) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    if (key == "print-plan") {
      if (hasValue && value != "text" && value != "dot")
        usageError("--print-plan takes text or dot, got '" + value + "'");
      o.printPlan = hasValue ? value : "text";
      continue;
    }
    if (auto f = flags.find(key); f != flags.end()) {
      if (hasValue)
        usageError("--" + key + " takes no value");
      f->second();
      continue;
    }
    auto v = valued.find(key);
    if (v == valued.end())
      usageError("unknown option '" + arg + "'");
    if (!hasValue) {
      if (i + 1 >= argc)
        usageError("--" + key + " needs a value");
      value = argv[++i];
    }
    v->second(value);
  }
  if (o.plan.empty())
    usageError("no plan file given");
  if (o.quiet && o.verbose)
    usageError("-q (--quiet) and -v (--verbose) contradict each other");
  if (o.maxStaleness >= 0 && o.sync != "async")
    usageError("--max-staleness needs --sync=async");
  if (o.sync == "async" && o.pipeline == "off")
    usageError("--sync=async runs a stage's replicas apart; --pipeline=off "
               "runs one worker");
  if (!o.profileResource.empty() && o.profile.empty())
    usageError("--profile-resource needs --profile=FILE");
  if (o.checkpointEvery < 0 || (o.checkpointEvery && o.save.empty()))
    usageError("--checkpoint-every takes a positive step count and needs "
               "--save");
  if ((!o.psTlsCA.empty() || !o.psTlsCert.empty() || !o.psTlsKey.empty() ||
       !o.psTokenFile.empty() || !o.psTlsServerName.empty() ||
       o.psWire != "f32") &&
      o.ps.empty())
    usageError("--ps-tls-*, --ps-token-file and --ps-wire are for PS servers "
               "given with --ps");
  if ((!o.psTlsCert.empty() || !o.psTlsKey.empty() ||
       !o.psTlsServerName.empty()) &&
      o.psTlsCA.empty())
    usageError("--ps-tls-cert, --ps-tls-key and --ps-tls-server-name need "
               "--ps-tls-ca");
  if (o.psTlsCert.empty() != o.psTlsKey.empty())
    usageError("--ps-tls-cert and --ps-tls-key go together");
  if (o.tablesOnDisk && o.ps.empty() && o.rocksdbDir.empty())
    usageError("--table-storage=rocksdb on the embedded server needs "
               "--rocksdb-dir");
  if (o.admitMinCount < 0)
    usageError("--admit-min-count must be non-negative");
  if (o.tableCacheRows < 1)
    usageError("--table-cache-rows must be positive");
  if (o.epochs < 1 || o.batch < 0 || o.steps < 0 || o.threads < 1)
    usageError("--epochs and --threads must be positive, --batch and --steps "
               "non-negative");
  return o;
}
