//===- heterps-run.cpp - Execute a HeterPS plan ---------------------------===//
//
// Trains or runs inference with a plan file: the dense stages on this
// machine's workers, the embedding tables in a parameter-server service
// (the servers given by --ps, or one embedded in this process). With
// `serve` it is one of those servers.
// Bad input (a corrupt plan, a malformed data line, a tensor of the wrong
// shape) is a message naming it and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "Options.h"
#include "Serve.h"

#include "heterps/PS/Client.h"
#include "heterps/Plan/PlanGraph.h"
#include "heterps/Runtime/Checkpoint.h"
#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/MPI.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Runtime/Profile.h"
#include "heterps/Runtime/Program.h"
#include "heterps/Runtime/Session.h"
#include "heterps/Runtime/Trace.h"
#include "heterps/Runtime/Trainer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <unistd.h>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::run;

namespace {

std::string formatOf(const Options &o, const std::string &path) {
  if (!o.format.empty())
    return o.format;
  std::string format = dataFormatOf(path);
  if (format.empty())
    fail("cannot tell the format of '", path, "'; give --format");
  return format;
}

/// The data of `path`; training data (`training`) is shuffled as asked,
/// and evaluation and inference on synthetic data read a held-out set (the
/// next seed: the same hidden model, other examples).
DataOptions dataOptions(const Options &o, const InputBinder &binder,
                        const std::string &path, bool training) {
  DataOptions d;
  d.format = formatOf(o, path);
  d.path = path;
  binder.configure(d);
  d.labelColumn = o.csvLabelColumn;
  d.csvHeader = o.csvHeader;
  d.syntheticExamples = o.syntheticExamples;
  d.syntheticVocab = o.syntheticVocab;
  d.shuffleBuffer = training ? o.shuffle : 0;
  d.seed = o.seed + (!training && d.format == "synthetic" ? 1 : 0);
  return d;
}

/// heterps-run's informational lines: on stdout, the progress lines
/// rewritten in one line on a terminal (unless -v), none with -q. Results
/// asked for (--print-plan, --infer's outputs and metrics) bypass it.
class Console {
public:
  void configure(bool quietMode, bool verbose) {
    quiet = quietMode;
    live = !quiet && !verbose && ::isatty(STDOUT_FILENO);
  }
  void info(const char *format, ...) __attribute__((format(printf, 2, 3))) {
    if (quiet)
      return;
    endProgress();
    va_list args;
    va_start(args, format);
    std::vprintf(format, args);
    va_end(args);
    std::fflush(stdout);
  }
  void progress(const std::string &line) {
    if (quiet)
      return;
    if (!live)
      return info("%s\n", line.c_str());
    // Back to the start of the line, and clear what a longer line left.
    std::printf("\r%s\033[K", line.c_str());
    std::fflush(stdout);
    active = true;
  }
  void endProgress() {
    if (active)
      std::fputc('\n', stdout);
    active = false;
  }

private:
  bool quiet = false, live = false, active = false;
};

Console console;

/// --metrics-file: a JSON object per line, flushed with each.
class MetricsFile {
public:
  explicit MetricsFile(const std::string &path) : path(path) {
    out = std::fopen(path.c_str(), "w");
    if (!out)
      fail("cannot write --metrics-file '", path, "': ", std::strerror(errno));
  }
  ~MetricsFile() {
    if (out)
      std::fclose(out);
  }
  void write(const char *kind, int64_t step, int64_t epoch, double seconds,
             double samplesPerSecond, const Metrics &metrics, bool withLoss) {
    std::fprintf(out, "{\"kind\": \"%s\", \"step\": %lld, \"epoch\": %lld",
                 kind, static_cast<long long>(step),
                 static_cast<long long>(epoch));
    std::fprintf(out, ", \"seconds\": %.6f", seconds);
    if (samplesPerSecond > 0)
      std::fprintf(out, ", \"samples_per_second\": %.1f", samplesPerSecond);
    if (withLoss)
      std::fprintf(out, ", \"loss\": %.9g", metrics.meanLoss());
    std::string members = metricsJSON(metrics);
    std::fprintf(out, "%s%s}\n", members.empty() ? "" : ", ", members.c_str());
    if (std::fflush(out) != 0)
      fail("cannot write --metrics-file '", path, "': ", std::strerror(errno));
  }

private:
  std::string path;
  std::FILE *out = nullptr;
};

void printPlan(const plan::Plan &p) {
  if (!p.producer().empty())
    std::printf("plan written by %s\n", p.producer().c_str());
  std::printf("plan: function @%s, %d values, %d dense parameters, %d "
              "embedding tables, %d stages, %d channels, batch %lld, "
              "micro-batches %lld\n",
              p.function().c_str(), p.values_size(), p.params_size(),
              p.tables_size(), p.stages_size(), p.channels_size(),
              static_cast<long long>(p.batch_size()),
              static_cast<long long>(p.micro_batches()));
  // What to feed: each input's name and type, labels and bags marked.
  std::string inputs;
  for (int id : p.inputs()) {
    if (id < 0 || id >= p.values_size())
      continue;
    const plan::Value &v = p.values(id);
    TensorType type = fromPlanType(v.type());
    std::string dims;
    for (int64_t d : type.dims)
      dims += (dims.empty() ? "" : "x") + (d < 0 ? "?" : std::to_string(d));
    inputs += (inputs.empty() ? "" : ", ") + v.name() + " " +
              dtypeName(type.dtype) + (dims.empty() ? "" : "[" + dims + "]");
    if (p.has_training() && std::count(p.training().label_inputs().begin(),
                                       p.training().label_inputs().end(), id))
      inputs += " (label)";
    if (v.has_bag_offsets() && v.bag_offsets() >= 0 &&
        v.bag_offsets() < p.values_size())
      inputs += " (bags starting at " + p.values(v.bag_offsets()).name() + ")";
  }
  std::printf("  inputs: %s\n", inputs.c_str());
  for (const plan::Stage &s : p.stages()) {
    std::printf("  stage %d on %s (%s) x%lld: %d ops", s.index(),
                s.resource().c_str(), s.kind().c_str(),
                static_cast<long long>(s.units()), s.ops_size());
    if (s.predicted_throughput() > 0)
      std::printf(", predicted %.1f samples/s", s.predicted_throughput());
    std::printf("\n");
  }
  for (const plan::SparseTable &t : p.tables())
    std::printf(
        "  table %d %s: %lld x %lld, optimizer %s\n", t.id(), t.name().c_str(),
        static_cast<long long>(t.vocab()), static_cast<long long>(t.dim()),
        t.optimizer().kind().empty() ? "none" : t.optimizer().kind().c_str());
  if (p.has_training())
    std::printf("  training: loss %s (output %d), optimizer %s\n",
                p.training().loss().c_str(), p.training().loss_output(),
                p.training().optimizer().kind().c_str());
  if (p.has_prediction())
    std::printf("  predicted: %.1f samples/s, $%.4f per hour, $%.4f in all\n",
                p.prediction().throughput(), p.prediction().cost_per_hour(),
                p.prediction().cost_usd());
}

std::vector<Tensor> readInputs(const Options &o, const Program &program,
                               std::vector<const Tensor *> &bound) {
  std::vector<Tensor> storage(o.inputs.size());
  bound.assign(program.plan().inputs_size(), nullptr);
  for (size_t k = 0; k < o.inputs.size(); ++k) {
    const auto &[name, file] = o.inputs[k];
    int i = program.inputIndex(name);
    if (i < 0) {
      std::string names;
      for (int j = 0; j < program.plan().inputs_size(); ++j)
        names += (j ? ", " : "") + program.inputName(j);
      fail("--input ", name, ": the plan has no input named '", name,
           "' (its inputs: ", names, ")");
    }
    storage[k] = readTensorProto(file);
    bound[i] = &storage[k];
  }
  program.checkBatchRows(bound);
  return storage;
}

/// A line per example of a batch: its scores (tab-separated), then its
/// label when there is one.
void writePredictions(std::FILE *out, const Tensor &prediction,
                      const Tensor *label, const std::vector<char> &present) {
  int64_t rows = prediction.rank() ? prediction.dim(0) : 1;
  int64_t width = rows ? prediction.numElements() / rows : 0;
  if (prediction.dtype() != DType::F32)
    fail("--output-dir: the prediction output is ", prediction.typeString(),
         ", expected f32 scores");
  const float *scores = prediction.as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    if (!present.empty() && !present[r])
      continue;
    for (int64_t k = 0; k < width; ++k)
      std::fprintf(out, k ? "\t%.9g" : "%.9g", scores[r * width + k]);
    if (label && label->dtype() == DType::F32)
      std::fprintf(out, "\t%.9g", label->as<float>()[r]);
    else if (label && label->dtype() == DType::I64)
      std::fprintf(out, "\t%lld",
                   static_cast<long long>(label->as<int64_t>()[r]));
    std::fputc('\n', out);
  }
}

int runInference(const Options &o, Program &program) {
  std::vector<const Tensor *> bound;
  std::vector<Tensor> storage = readInputs(o, program, bound);
  std::vector<int> outs = predictionOutputs(program);
  if (!o.inputs.empty()) {
    const std::vector<const Tensor *> &res = program.run(bound, false, outs);
    for (size_t k = 0; k < outs.size(); ++k) {
      std::string name = program.outputName(outs[k]);
      std::printf("output %s: %s\n", name.c_str(),
                  res[k]->typeString().c_str());
      if (!o.outputDir.empty()) {
        std::filesystem::create_directories(o.outputDir);
        writeTensorProto(o.outputDir + "/" + name + ".pb", name, *res[k]);
      }
    }
    return 0;
  }
  TrainerOptions to;
  to.batchSize =
      o.batch ? o.batch : std::max<int64_t>(program.plan().batch_size(), 1);
  Trainer trainer(program, program, to);
  std::unique_ptr<DataSource> source =
      openDataSource(dataOptions(o, trainer.binder(), o.data, false));
  std::unique_ptr<MetricsFile> metricsFile;
  if (!o.metricsFile.empty())
    metricsFile = std::make_unique<MetricsFile>(o.metricsFile);
  // With --output-dir, a line per example: its prediction scores and label.
  std::FILE *predictions = nullptr;
  std::string predictionsPath = o.outputDir + "/predictions.tsv";
  if (!o.outputDir.empty()) {
    std::filesystem::create_directories(o.outputDir);
    predictions = std::fopen(predictionsPath.c_str(), "w");
    if (!predictions)
      fail("cannot write '", predictionsPath, "': ", std::strerror(errno));
  }
  // The examples run, which the metrics count only with labels.
  int64_t examples = 0;
  Trainer::PredictionSink sink = [&](const Tensor &prediction,
                                     const Tensor *label,
                                     const std::vector<char> &present) {
    int64_t rows = prediction.rank() ? prediction.dim(0) : 1;
    examples += present.empty()
                    ? rows
                    : std::count(present.begin(), present.end(), char(1));
    if (predictions)
      writePredictions(predictions, prediction, label, present);
  };
  auto start = std::chrono::steady_clock::now();
  Metrics m = trainer.evaluate(*source, sink);
  if (predictions && std::fclose(predictions) != 0)
    fail("cannot write '", predictionsPath, "': ", std::strerror(errno));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (trainer.binder().labelIndex() >= 0)
    std::printf("inference on %s: %s\n", source->describe().c_str(),
                metricsText(m).c_str());
  else
    std::printf("inference on %s: the plan has no label input, so no "
                "metrics\n",
                source->describe().c_str());
  if (examples && seconds > 0)
    std::printf("inference: %lld examples in %.3f s, %.0f samples/s\n",
                static_cast<long long>(examples), seconds, examples / seconds);
  if (metricsFile)
    metricsFile->write("inference", program.steps(), 0, seconds,
                       examples && seconds > 0 ? examples / seconds : 0, m,
                       false);
  return 0;
}

/// The data lanes a run reads by default: one per replica of the job's
/// widest stage, or as many as every stage's replicas divide (their least
/// common multiple) when that is not too many, so that each process reads
/// only its own lanes.
int64_t defaultDataLanes(const std::vector<int> &replicas) {
  int64_t lanes = 1, widest = 1;
  for (int r : replicas) {
    lanes = std::lcm<int64_t>(lanes, r);
    widest = std::max<int64_t>(widest, r);
  }
  return lanes <= 64 ? lanes : widest;
}

/// FILE for the process of rank `rank` of a job: FILE.rank-R, before FILE's
/// extension (trace.json: trace.rank-1.json).
std::string rankFile(const std::string &file, int rank) {
  std::filesystem::path path(file);
  std::string stem = path.stem().string() + ".rank-" + std::to_string(rank);
  return (path.parent_path() / (stem + path.extension().string())).string();
}

/// Writes every table with a vocabulary as DIR/table.<name>.pb.
void exportTables(const std::string &dir, ps::Client &tables) {
  std::filesystem::create_directories(dir);
  for (int id = 0; id < tables.numTables(); ++id) {
    const TableInfo &t = tables.table(id);
    if (t.vocab <= 0)
      continue;
    std::vector<int64_t> keys(t.vocab);
    for (int64_t k = 0; k < t.vocab; ++k)
      keys[k] = k;
    Tensor rows(DType::F32, {t.vocab, t.dim});
    tables.pull(id, keys.data(), t.vocab, rows.as<float>());
    std::string safe = t.name;
    for (char &c : safe)
      if (c == '/' || c == '\\')
        c = '_';
    writeTensorProto(dir + "/table." + safe + ".pb", t.name, rows);
  }
}

/// Trains with `stepper` (the program itself, or the pipelined executor of
/// its plan); `program` binds the data and evaluates.
/// In a job of several processes (`job` set), every process trains; the
/// first reports, writes the checkpoints, profile and exported tables.
/// With more than one data lane, the batches come from `lanes`.
int runTraining(const Options &o, Session &session, StepExecutor &stepper,
                const CheckpointInfo &loaded, Communicator *job,
                const LaneLayout &lanes) {
  Program &program = session.program();
  bool reporter = !job || job->rank() == 0;
  TrainerOptions to;
  to.epochs = o.epochs;
  to.steps = o.steps;
  to.batchSize =
      o.batch ? o.batch : std::max<int64_t>(program.plan().batch_size(), 1);
  to.logEvery = o.logEvery;
  to.checkpointEvery = o.checkpointEvery;
  if (reporter) {
    to.log = [](const std::string &line) {
      console.info("%s\n", line.c_str());
    };
    to.progress = [](const std::string &line) { console.progress(line); };
  }
  // Each process sees its own lanes' labels: the job's metrics are their
  // sum.
  if (job && job->size() > 1)
    to.combineMetrics = [job](Metrics &window) {
      window.sumAcrossProcesses(
          [job](double *values, size_t n) { job->allReduceSum(values, n); });
    };
  std::unique_ptr<MetricsFile> metricsFile;
  if (reporter && !o.metricsFile.empty()) {
    metricsFile = std::make_unique<MetricsFile>(o.metricsFile);
    to.report = [&metricsFile](const TrainingReport &r) {
      bool steps = r.kind == TrainingReport::Kind::Steps;
      metricsFile->write(steps ? "steps" : "eval", r.step, r.epoch, r.seconds,
                         r.samplesPerSecond, *r.metrics, steps);
      return true;
    };
  }
  if (!o.save.empty())
    to.saveCheckpoint = [&](CheckpointInfo info) {
      // Every process is at the same step with its pushes done (the step
      // ends with a collective); the stages' parameters come to every
      // process, and the first writes them with the PS's tables.
      stepper.synchronize();
      int64_t step = info.step;
      info.entries["data-lanes"] = std::to_string(lanes.lanes);
      if (reporter) {
        session.save(o.save, std::move(info));
        console.info("saved checkpoint %s at step %lld\n", o.save.c_str(),
                     static_cast<long long>(step));
      }
      if (job)
        job->barrier();
    };
  Trainer trainer(program, stepper, to);

  std::vector<const Tensor *> fixed;
  std::vector<Tensor> storage = readInputs(o, program, fixed);
  std::unique_ptr<DataSource> source, evalSource;
  if (o.inputs.empty()) {
    DataOptions data = dataOptions(o, trainer.binder(), o.data, true);
    source =
        lanes.lanes > 1 ? openLaneSource(data, lanes) : openDataSource(data);
    if (!o.evalData.empty())
      evalSource =
          openDataSource(dataOptions(o, trainer.binder(), o.evalData, false));
  } else if (!o.steps) {
    fail("training on --input tensors needs --steps");
  }
  if (reporter) {
    std::string processes =
        job ? " per process, " + std::to_string(job->size()) + " processes"
            : "";
    console.info("training %s on %s, batch %lld, %d thread%s%s\n",
                 o.plan.c_str(),
                 source ? source->describe().c_str() : "the --input tensors",
                 static_cast<long long>(to.batchSize), o.threads,
                 o.threads == 1 ? "" : "s", processes.c_str());
  }
  TrainingSummary summary = source
                                ? trainer.fit(*source, evalSource.get(), loaded)
                                : trainer.fitOn(fixed);
  int64_t steps = summary.steps, batchSize = to.batchSize;

  if (!o.exportTables.empty() && reporter)
    exportTables(o.exportTables, session.tables());
  if (!o.profile.empty()) {
    OpTimes times;
    stepper.addOpTimes(times);
    if (!reporter)
      return 0;
    ProfileOptions profile;
    profile.resource = o.profileResource;
    std::optional<std::string> gpuStatus;
    ProgramOptions po;
    po.fallbackToCPU = true;
    for (const plan::Stage &stage : program.plan().stages())
      profile.foreignStages.push_back(
          stage.kind() == "gpu" &&
          resolveStageDevice(stage, po, gpuStatus) != DeviceKind::GPU);
    ProfileSummary summary = writeProfileTable(o.profile, program.plan(), times,
                                               steps, batchSize, profile);
    char leftOut[160] = "";
    if (summary.leftOutOps)
      std::snprintf(leftOut, sizeof(leftOut),
                    "; %d ops left out (no name location, or a GPU stage run "
                    "on the CPU), %.3g s per step",
                    summary.leftOutOps, summary.leftOutSeconds);
    console.info("profile %s: %d entries, per step of %lld examples%s\n",
                 o.profile.c_str(), summary.entries,
                 static_cast<long long>(batchSize), leftOut);
  }
  return 0;
}

} // namespace

/// GNU OpenMP's workers spin while they wait, which starves the data
/// reader thread and any other process on a busy machine: on 2 loaded cores
/// a step took 8x longer. The wait policy is read when libgomp loads, before
/// main, so it is set by running this binary again with it in the
/// environment (once; a user's own setting wins).
static void ensurePassiveOpenMP(char **argv) {
  if (std::getenv("OMP_WAIT_POLICY"))
    return;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  ::execv("/proc/self/exe", argv);
  // Without /proc the run goes on with spinning workers.
}

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "serve") == 0)
    return runServe(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "launch") == 0)
    return runLaunch(argc, argv);
  ensurePassiveOpenMP(argv);
  ps::quietGrpcLog();
  Options o = parseOptions(argc, argv);
  // mpirun hands its processes a pseudo-terminal whatever its own output
  // is: a job's lines are never rewritten.
  console.configure(o.quiet, o.verbose || startedAsMPIJob());
  // Under mpirun this process is one of the job's: it runs the worker its
  // rank names. Destroyed last (it finalizes MPI).
  std::unique_ptr<Communicator> job;
  try {
    if (startedAsMPIJob())
      job = initMPI(&argc, &argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "heterps-run: error: %s\n", e.what());
    return 1;
  }
  bool reporter = !job || job->rank() == 0;
  try {
    if (job) {
      if (o.psClient.servers.empty())
        fail("a job of ", job->size(),
             " processes keeps its tables in a PS service: give its "
             "servers with --ps (start them with heterps-run serve, or "
             "run the job with heterps-run launch)");
      if (o.pipeline == "off")
        fail("--pipeline=off runs one worker; a job of ", job->size(),
             " processes runs a worker per process");
      if (o.maxWorkers)
        fail("--max-workers caps the workers of one process; in a job "
             "of several processes mpirun's -np sets them");
      if (o.infer)
        fail("--infer runs in one process; run it without mpirun");
    }
    plan::Plan p = loadPlan(o.plan);
    std::vector<int> jobReplicas;
    if (job)
      jobReplicas = mapStageReplicas(p, job->size());
    int64_t lanes =
        o.dataLanes ? o.dataLanes : (job ? defaultDataLanes(jobReplicas) : 1);
    if (o.printPlan == "dot") {
      std::fputs(plan::printPlanDot(p).c_str(), stdout);
      return 0;
    }
    if (!o.printPlan.empty()) {
      printPlan(p);
      return 0;
    }
    // A resumed run has its checkpoint's seed unless --seed says otherwise:
    // the data's order follows it, and servers keep the initializers of
    // the tables it created.
    if (!o.load.empty() && !o.seedGiven) {
      CheckpointInfo saved = readCheckpointManifest(o.load);
      if (auto seed = saved.entries.find("seed"); seed != saved.entries.end()) {
        const std::string &v = seed->second;
        char *end = nullptr;
        errno = 0;
        o.seed = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end || errno == ERANGE || v[0] == '-')
          fail("checkpoint '", o.load, "': its seed '", v,
               "' is not a whole number below 2^64");
      }
    }
    SessionOptions so;
    so.ps = o.psClient.servers;
    so.client = o.psClient.clientOptions();
    so.rocksdbDir = o.rocksdbDir;
    o.tables.applyTo(so.tableDefaults);
    ProgramOptions &po = so.program;
    po.fallbackToCPU = o.fallbackCPU;
    po.gpuMath = *parseGpuMath(o.gpuMath);
    po.threads = o.threads;
    po.seed = o.seed;
    po.profile = !o.profile.empty();
    po.pullAhead = *parsePullAheadMode(
        o.psPullAhead.empty() ? (o.psClient.servers.empty() ? "off" : "exact")
                              : o.psPullAhead);
    so.pipeline = o.pipeline;
    PipelineOptions &pipelineOptions = so.pipelineOptions;
    pipelineOptions.schedule = parsePipelineSchedule(o.schedule);
    pipelineOptions.maxWorkers = o.maxWorkers;
    pipelineOptions.microBatches = o.microBatches;
    pipelineOptions.trace = !o.trace.empty();
    pipelineOptions.processes = job.get();
    pipelineOptions.microBatchMultiple = lanes;
    pipelineOptions.sync = parseSyncMode(o.sync);
    pipelineOptions.maxStaleness = std::max<int64_t>(o.maxStaleness, 0);
    Session session(std::move(p), std::move(so));
    if (reporter)
      for (const std::string &note : session.connectNotes())
        std::fprintf(stderr, "heterps-run: note: %s\n", note.c_str());
    // Found now, not after the whole run.
    if (reporter && !o.save.empty())
      if (std::string refusal = session.tables().adminRefusal();
          !refusal.empty())
        fail("--save checkpoints the PS servers' tables, which needs the "
             "admin token (--ps-token-file), and ",
             refusal);
    Program &program = session.program();
    CheckpointInfo loaded;
    if (!o.load.empty()) {
      // The first process restores the PS's tables; every process reads
      // the dense parameters and the data position.
      loaded = session.load(o.load, reporter);
      if (reporter)
        for (const std::string &note : loaded.notes)
          std::fprintf(stderr, "heterps-run: note: %s\n", note.c_str());
      if (job)
        job->barrier();
      int64_t written = checkpointCount(loaded, "data-lanes", 1);
      if (written != lanes)
        fail("checkpoint '", o.load, "' was written reading ", written,
             " data lane", (written == 1 ? "" : "s"), ", this run reads ",
             lanes, "; resume with --data-lanes=", written);
      if (reporter)
        console.info("loaded checkpoint %s at step %lld\n", o.load.c_str(),
                     static_cast<long long>(loaded.step));
    }
    if (o.infer || !program.isTraining())
      return runInference(o, program);
    if (session.isPipelined() && !o.psPullAhead.empty() &&
        o.psPullAhead != "off")
      fail("--ps-pull-ahead applies to one worker; this run uses the "
           "pipelined executor (--pipeline=off runs one worker)");
    StepExecutor &stepper = session.stepper();
    PipelineExecutor *pipeline = session.pipeline();
    if (pipeline && reporter)
      console.info("%s", pipeline->describe().c_str());
    std::unique_ptr<TraceThread> trace;
    if (!o.trace.empty() && !pipeline) {
      trace = std::make_unique<TraceThread>("worker",
                                            std::chrono::steady_clock::now());
      program.setTrace(trace.get());
    }
    LaneLayout layout;
    layout.lanes = lanes;
    layout.microBatches =
        pipeline
            ? pipeline->microBatches()
            : pipelineMicroBatches(session.plan(), {1}, o.microBatches, lanes);
    layout.read.assign(lanes, !job);
    if (job) {
      // The lanes of this process's micro-batches.
      auto [stage, replica] = pipeline->localWorker();
      for (int64_t m = replica; m < layout.microBatches;
           m += jobReplicas[stage])
        layout.read[m % lanes] = true;
      layout.allHaveData = [&job](bool mine) {
        double missing = mine ? 0 : 1;
        job->allReduceSum(&missing, 1);
        return missing == 0;
      };
    }
    int status = runTraining(o, session, stepper, loaded, job.get(), layout);
    if (session.embedded() && o.tables.ttlSeconds > 0) {
      uint64_t evicted = 0;
      for (const plan::SparseTable &table : session.plan().tables())
        evicted += session.tables().describe(table.id()).evicted_rows();
      console.info("tables: %llu rows unused for --ttl-seconds=%g evicted\n",
                   static_cast<unsigned long long>(evicted),
                   o.tables.ttlSeconds);
    }
    if (pipeline) {
      std::string summary = pipeline->summary();
      if (reporter)
        console.info("%s", summary.c_str());
    } else if (const PullAhead *ahead = program.pullAheadState()) {
      auto count = [](int64_t n, const char *one, const char *many) {
        return std::to_string(n) + " " + (n == 1 ? one : many);
      };
      console.info(
          "pull-ahead (%s): %s rows pulled ahead, %s dropped, %s pulled "
          "again after pushes\n",
          ahead->mode() == PullAheadMode::Exact ? "exact" : "stale",
          count(ahead->batchesTaken(), "step used", "steps used").c_str(),
          count(ahead->batchesDropped(), "pull", "pulls").c_str(),
          count(ahead->refreshedRows(), "row", "rows").c_str());
    }
    if (!o.trace.empty()) {
      // In a job each process writes the trace of its own worker.
      std::string traceFile = o.trace;
      if (job)
        traceFile = rankFile(o.trace, job->rank());
      std::vector<const TraceThread *> threads =
          pipeline ? pipeline->traceThreads()
                   : std::vector<const TraceThread *>{trace.get()};
      int64_t spans = writeChromeTrace(traceFile, threads);
      int64_t dropped = 0;
      for (const TraceThread *thread : threads)
        dropped += thread->dropped;
      char notKept[96] = "";
      if (dropped)
        std::snprintf(notKept, sizeof(notKept),
                      " (%lld more not kept: at most %zu per worker)",
                      static_cast<long long>(dropped), TraceThread::kMaxSpans);
      console.info("trace %s: %lld spans of %zu worker%s%s\n",
                   traceFile.c_str(), static_cast<long long>(spans),
                   threads.size(), threads.size() == 1 ? "" : "s", notKept);
    }
    return status;
  } catch (const std::exception &e) {
    // The job's other processes may be waiting for this one: end them all.
    if (job && job->size() > 1)
      job->abort(e.what());
    std::fprintf(stderr, "heterps-run: error: %s\n", e.what());
    return 1;
  }
}
