//===- Options.cpp - heterps-run's command line ---------------------------===//

#include "Options.h"

#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/PullAhead.h"
#include "heterps/Support/Paths.h"

#include <filesystem>

using namespace heterps;
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
)";

void heterps::run::declareOptions(Flags &flags, Options &o) {
  flags.positional("plan file", o.plan);

  flags.group("Data");
  flags.option("--data", o.data, "FILES",
               "training data: a file, or a comma-separated list of files "
               "and glob patterns ('day_*.gz') read in order; without it (or "
               "'synthetic'), synthetic CTR data");
  flags.choice("--format", o.format,
               {"criteo", "libsvm", "csv", "idx", "synthetic"},
               "the data's format (default: from the file name: .tsv/.txt "
               "criteo, .svm/.libsvm libsvm, .csv csv, *-idx3-ubyte[.gz] "
               "idx)");
  flags.option("--eval-data", o.evalData, "FILE",
               "evaluated after every epoch (same format; 'synthetic': "
               "another synthetic stream)");
  flags.option("--shuffle", o.shuffle, "N",
               "shuffle buffer of N examples (default 0: file order)", 0);
  flags.option("--synthetic-examples", o.syntheticExamples, "N",
               "examples per synthetic epoch (default 65536)", 1);
  flags.option("--synthetic-vocab", o.syntheticVocab, "N",
               "id range of synthetic sparse features (default 1000)", 1);
  flags.option("--csv-label-column", o.csvLabelColumn, "N",
               "the label column of CSV data (default 0; negative counts "
               "from the end: -1 is the last)");
  flags.flag("--csv-header", o.csvHeader, "CSV data starts with a header line");
  flags.custom(
      "--input", "NAME=FILE.pb",
      "an ONNX TensorProto for input NAME (repeatable); in "
      "training, every step uses these tensors",
      [&o](const std::string &v) -> std::string {
        size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0)
          return "--input takes NAME=FILE.pb, got '" + v + "'";
        std::string name = v.substr(0, eq);
        for (const auto &given : o.inputs)
          if (given.first == name)
            return "--input " + name + " is given twice ('" + given.second +
                   "' and '" + v.substr(eq + 1) + "')";
        o.inputs.emplace_back(name, v.substr(eq + 1));
        return "";
      },
      /*repeatable=*/true);

  flags.group("Training");
  flags.option("--epochs", o.epochs, "N", "passes over the data (default 1)",
               1);
  flags.option("--steps", o.steps, "N",
               "stop after N steps (default or 0: the epochs)", 0);
  flags.option("--batch", o.batch, "N",
               "examples per step (default or 0: the plan's)", 0);
  flags.option("--threads", o.threads, "N",
               "CPU threads for the kernels (default 1)", 1, 4096);
  flags.option("--seed", o.seed, "N",
               "initialisation, shuffle and dropout seed (default 1)");
  flags.option("--log-every", o.logEvery, "N",
               "progress line every N steps (default 100; 0: none)", 0);
  flags.option("--save", o.save, "DIR", "write a checkpoint at the end");
  flags.option("--checkpoint-every", o.checkpointEvery, "N",
               "with --save, also write it every N steps", 1);
  flags.option("--load", o.load, "DIR",
               "start from a checkpoint: parameters, tables, step and the "
               "position in the data");
  flags.custom("--fallback", "cpu",
               "run GPU stages on the CPU where no GPU is usable, and the "
               "ops the GPU column lacks on the CPU",
               [&o](const std::string &v) -> std::string {
                 if (v != "cpu")
                   return "--fallback takes cpu, got '" + v + "'";
                 o.fallbackCPU = true;
                 return "";
               });
  flags.choice("--gpu-math", o.gpuMath, {"f32", "tf32", "bf16"},
               "how GPU stages compute GEMMs and MatMuls: f32 (default; "
               "within 1e-5 of the CPU), or on tensor cores with operands "
               "rounded to tf32 or bf16");

  flags.group("Pipeline (plans with several stages, or stages with several "
              "units)");
  flags.choice("--pipeline", o.pipeline, {"auto", "on", "off"},
               "auto (default: pipelined when the plan has several stages "
               "or units), on, or off (one worker runs every stage in order)");
  flags.choice("--schedule", o.schedule, {"1f1b", "gpipe"},
               "the order of a stage's forward and backward micro-batches "
               "(default 1f1b)");
  flags.option("--max-workers", o.maxWorkers, "N",
               "worker threads in all (default: one per hardware thread); a "
               "stage's units map onto at most this many replicas, each "
               "stage gets at least one",
               1, 4096);
  flags.option("--micro-batches", o.microBatches, "N",
               "micro-batches per step (default: the plan's, at least one "
               "per replica)",
               1);
  flags.choice("--sync", o.sync, {"sync", "async"},
               "sync (default: a stage's replicas sum their gradients and "
               "apply them once per step, as one worker would) or async "
               "(each replica sends its gradients to the PS, which applies "
               "them as they come; replicas compute with their own copy of "
               "their stage's parameters)");
  flags.option("--max-staleness", o.maxStaleness, "N",
               "with --sync=async, a replica refreshes its copy from the PS "
               "at least every N+1 steps (default 0: after every step)",
               0);
  flags.option("--data-lanes", o.dataLanes, "N",
               "split the data into N lanes (whole files when there are "
               "enough, else every N-th example); micro-batch m of a step "
               "comes from lane m mod N, and a process of a job reads only "
               "its workers' lanes (default: 1 in one process; in a job, the "
               "least common multiple of the stages' replicas)",
               1, 4096);
  flags.option("--profile", o.profile, "FILE",
               "time every op of the training steps and write the times per "
               "layer as a profile table for the scheduling passes' "
               "profile= option");
  flags.option("--profile-resource", o.profileResource, "R",
               "the resource type the profiled times are for (default: each "
               "stage's; stages run with --fallback=cpu are then left out)");
  flags.option("--metrics-file", o.metricsFile, "FILE",
               "write a JSON line per progress line and per evaluation: kind "
               "(steps, eval, inference), step, epoch, seconds, "
               "samples_per_second, loss, auc, logloss, ne, calibration or "
               "accuracy (scripts/plot-metrics.py draws them)");
  flags.option("--trace", o.trace, "FILE",
               "write a Chrome/Perfetto trace of the training steps: every "
               "op, segment, send and wait of every worker (chrome://tracing, "
               "ui.perfetto.dev)");

  flags.group("Embedding tables (a parameter-server service; without --ps, "
              "embedded)");
  o.psClient.declare(flags);
  flags.custom("--ps-pull-ahead", "exact|stale|off",
               "pull the next step's rows while a step runs (default with "
               "--ps: exact, which pulls again the rows the step pushed; "
               "stale uses them up to one step old); one worker only",
               [&o](const std::string &v) -> std::string {
                 if (!runtime::parsePullAheadMode(v))
                   return "--ps-pull-ahead takes exact, stale or off, got '" +
                          v + "'";
                 o.psPullAhead = v;
                 return "";
               });
  flags.option("--export-tables", o.exportTables, "DIR",
               "at the end, write each table with a vocabulary as "
               "DIR/table.<name>.pb (vocab x dim TensorProto)");
  o.tables.declare(flags);
  flags.option("--rocksdb-dir", o.rocksdbDir, "DIR",
               "the embedded server's RocksDB directory (scratch)");

  flags.group("Inference");
  flags.flag("--infer", o.infer,
             "forward pass only; with --data, report metrics");
  flags.option("--output-dir", o.outputDir, "DIR",
               "with --input, write each output as DIR/<output name>.pb; "
               "with data, a line per example in DIR/predictions.tsv: its "
               "scores, then its label");

  flags.group("Other");
  flags.optionalValue(
      "--print-plan", o.printPlan, "text", {"text", "dot"},
      "print the plan, then exit: text (the default) lists its stages, "
      "tables and prediction; dot writes it as a Graphviz graph (stages as "
      "boxes, ops coloured by resource type, channels with bytes per sample; "
      "scripts/render-plan.sh makes an SVG)");
  flags.flag("-q,--quiet", o.quiet,
             "print only errors and the results asked for (--print-plan, "
             "--infer's outputs and metrics)");
  flags.flag("-v,--verbose", o.verbose,
             "every progress line on its own line, also on a terminal (where "
             "one line is otherwise rewritten)");
}

/// No output may be written over an input (a plan given as --metrics-file
/// was replaced by JSON lines) or over another output.
static void checkOutputsSpareInputs(const Flags &flags, const Options &o) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"the plan file", o.plan}};
  auto addList = [&](const std::string &what, const std::string &list) {
    if (list.empty() || list == "synthetic")
      return;
    size_t at = 0;
    for (;;) {
      size_t comma = list.find(',', at);
      inputs.push_back({what, list.substr(at, comma - at)});
      if (comma == std::string::npos)
        break;
      at = comma + 1;
    }
  };
  addList("--data", o.data);
  addList("--eval-data", o.evalData);
  if (!o.load.empty())
    inputs.push_back({"--load", o.load});
  for (const auto &[name, file] : o.inputs)
    inputs.push_back({"--input " + name, file});
  std::vector<std::pair<std::string, std::string>> outputs;
  for (const auto &[what, path] :
       std::vector<std::pair<std::string, std::string>>{
           {"--metrics-file", o.metricsFile},
           {"--trace", o.trace},
           {"--profile", o.profile},
           {"--save", o.save},
           {"--output-dir", o.outputDir},
           {"--export-tables", o.exportTables}})
    if (!path.empty())
      outputs.push_back({what, path});
  auto same = [](const std::string &a, const std::string &b) {
    std::error_code ec;
    if (fs::equivalent(a, b, ec))
      return true;
    return fs::absolute(a, ec).lexically_normal() ==
           fs::absolute(b, ec).lexically_normal();
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const auto &[what, path] : inputs)
      if (same(outputs[i].second, path))
        flags.fail(outputs[i].first + " '" + outputs[i].second + "' is " +
                   (what == "the plan file" ? what : what + "'s file") +
                   ": it would be overwritten");
    for (size_t j = 0; j < i; ++j)
      if (same(outputs[i].second, outputs[j].second))
        flags.fail(outputs[i].first + " and " + outputs[j].first +
                   " name the same path '" + outputs[i].second + "'");
  }
  // Found before the run rather than after it, when the outputs are
  // written.
  std::error_code ec;
  if (!o.outputDir.empty() && fs::exists(o.outputDir, ec) &&
      !fs::is_directory(o.outputDir, ec))
    flags.fail("--output-dir '" + o.outputDir + "' is not a directory");
  // Files and the checkpoint go into a directory that exists: a typo in it
  // failed after the whole run (a trace, a profile) or made a tree of
  // directories (a checkpoint). --output-dir and --export-tables make
  // theirs.
  for (const auto &[what, path] : outputs) {
    if (what == "--output-dir" || what == "--export-tables")
      continue;
    fs::path parent = directoryPath(path).parent_path();
    if (!fs::is_directory(parent, ec))
      flags.fail(what + " '" + path + "': directory '" + parent.string() +
                 "' does not exist");
  }
}

void heterps::run::checkOptions(const Flags &flags, Options &o) {
  if (o.plan.empty())
    flags.fail("no plan file given");
  if (o.quiet && o.verbose)
    flags.fail("-q (--quiet) and -v (--verbose) contradict each other");
  if (o.maxStaleness >= 0 && o.sync != "async")
    flags.fail("--max-staleness needs --sync=async");
  if (o.sync == "async" && o.pipeline == "off")
    flags.fail("--sync=async runs a stage's replicas apart; --pipeline=off "
               "runs one worker");
  if (!o.profileResource.empty() && o.profile.empty())
    flags.fail("--profile-resource needs --profile=FILE");
  if (o.checkpointEvery && o.save.empty())
    flags.fail("--checkpoint-every needs --save");
  if (o.psClient.anySecurityOrWire() && o.psClient.servers.empty())
    flags.fail("--ps-tls-*, --ps-token-file and --ps-wire are for PS servers "
               "given with --ps");
  if (flags.given("ps-deadline") && o.psClient.servers.empty())
    flags.fail("--ps-deadline is for PS servers given with --ps");
  if (std::string error = o.psClient.check(); !error.empty())
    flags.fail(error);
  if (std::string error = o.tables.check(flags); !error.empty())
    flags.fail(error);
  if (o.tables.storage == "rocksdb" && o.psClient.servers.empty() &&
      o.rocksdbDir.empty())
    flags.fail("--table-storage=rocksdb on the embedded server needs "
               "--rocksdb-dir");
  if (!o.rocksdbDir.empty() &&
      (o.tables.storage != "rocksdb" || !o.psClient.servers.empty()))
    flags.fail("--rocksdb-dir is the embedded server's, with "
               "--table-storage=rocksdb and no --ps");
  if (o.pipeline == "off")
    for (const char *name : {"micro-batches", "schedule"})
      if (flags.given(name))
        flags.fail(std::string("--") + name +
                   " orders a pipeline's micro-batches; --pipeline=off runs "
                   "whole steps on one worker");
  if (o.infer)
    for (const char *name :
         {"save", "checkpoint-every", "epochs", "steps", "shuffle", "eval-data",
          "profile", "trace", "export-tables"})
      if (flags.given(name))
        flags.fail(std::string("--") + name +
                   " is for training; --infer runs the data through once");
  if (!o.infer && flags.given("output-dir"))
    flags.fail("--output-dir writes --infer's outputs; a training run "
               "writes checkpoints with --save");
  // Tensors given with --input are the run's inputs: no data is read.
  if (!o.inputs.empty()) {
    for (const char *name : {"data", "format", "eval-data", "shuffle",
                             "synthetic-examples", "synthetic-vocab"})
      if (flags.given(name))
        flags.fail(std::string("--") + name +
                   " is for data; this run's inputs are the --input tensors");
    if (o.infer && flags.given("metrics-file"))
      flags.fail("--metrics-file records metrics over data; --infer on "
                 "--input tensors writes the outputs (--output-dir)");
  }
  bool synthetic = o.data.empty() || o.data == "synthetic" ||
                   (flags.given("format") && o.format == "synthetic");
  if (flags.given("format") && o.format == "synthetic" && !o.data.empty() &&
      o.data != "synthetic")
    flags.fail("--format=synthetic reads no file; drop --data='" + o.data +
               "' or give its format");
  if (!synthetic && o.evalData != "synthetic")
    for (const char *name : {"synthetic-examples", "synthetic-vocab"})
      if (flags.given(name))
        flags.fail(std::string("--") + name +
                   " shapes synthetic data; this run reads '" + o.data + "'");
  // The format of a file without --format is its name's.
  std::string format =
      flags.given("format")
          ? o.format
          : (synthetic ? "synthetic" : runtime::dataFormatOf(o.data));
  bool csvOptions =
      flags.given("csv-header") || flags.given("csv-label-column");
  if (csvOptions && !o.inputs.empty())
    flags.fail("--csv-header and --csv-label-column are for CSV data; this "
               "run's inputs are the --input tensors");
  if (csvOptions && !format.empty() && format != "csv")
    flags.fail("--csv-header and --csv-label-column are for CSV data; "
               "this run reads " +
               format + " data");
  checkOutputsSpareInputs(flags, o);
}

Options heterps::run::parseOptions(int argc, char **argv) {
  Options o;
  Flags flags("heterps-run", kUsage);
  declareOptions(flags, o);
  flags.parse(argc, argv);
  checkOptions(flags, o);
  o.seedGiven = flags.given("seed");
  return o;
}
