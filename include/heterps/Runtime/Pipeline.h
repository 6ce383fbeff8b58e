//===- Pipeline.h - Pipelined, data-parallel plan execution -----*- C++ -*-===//
//
// The paper's execution of a scheduled plan in one process: every stage of
// the plan runs as its own workers, a stage with k units as k data-parallel
// replicas (capped to the workers this machine can run), and the step's
// batch is split into micro-batches that flow forward through the stages'
// channels while their gradients flow back. Each worker is a thread with
// its own kernels and its own buffers for the micro-batches it has in
// flight; channels are in-memory queues.
//
// Training is synchronous: every micro-batch of a step reads the
// parameters and table rows of the step before, dense gradients are summed
// over a step's micro-batches and the replicas of their stage (weighted by
// the micro-batch's share of the batch, so the mean losses of the
// micro-batches add up to the mean loss of the batch) and applied once, and
// sparse gradients are merged and pushed once per table. A step therefore
// equals a single worker's step on the whole batch up to the order of float
// additions. Dropout draws its masks per micro-batch, and batch
// normalisation normalises per micro-batch, as in every pipeline.
//
// This header does not include MLIR; the plan file is the whole input.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PIPELINE_H
#define HETERPS_RUNTIME_PIPELINE_H

#include "heterps/Runtime/Communicator.h"
#include "heterps/Runtime/Program.h"
#include "heterps/Runtime/Trace.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace heterps::runtime {

/// The order in which a stage worker runs the forward and backward parts of
/// its micro-batches.
enum class PipelineSchedule {
  /// One forward, one backward: a stage keeps at most (stages after it + 1)
  /// micro-batches in flight, so stashed activations stay bounded.
  OneForwardOneBackward,
  /// All forwards of a step, then all backwards (GPipe).
  GPipe,
};

/// How the replicas of a stage combine their gradients.
enum class SyncMode {
  /// Summed across the replicas and applied once per step: a step equals
  /// one worker's on the whole batch.
  Sync,
  /// Each replica sends its own gradients to the tables' store (the PS),
  /// which applies them as they come; replicas compute with their own copy
  /// of their stage's parameters, refreshed from the store every
  /// maxStaleness + 1 steps.
  Async,
};

/// Parses "sync" or "async"; throws naming the value otherwise.
SyncMode parseSyncMode(const std::string &name);
const char *syncModeName(SyncMode mode);

/// Parses "1f1b" or "gpipe"; throws naming the value otherwise.
PipelineSchedule parsePipelineSchedule(const std::string &name);
const char *pipelineScheduleName(PipelineSchedule schedule);

struct PipelineOptions {
  PipelineSchedule schedule = PipelineSchedule::OneForwardOneBackward;
  /// Workers (threads) in all; every stage gets at least one, the rest go
  /// to the stages by their units. 0: one per hardware thread.
  int maxWorkers = 0;
  /// Micro-batches per step; 0: the plan's, at least one per replica.
  int64_t microBatches = 0;
  /// The micro-batches are rounded up to a multiple of this (the data
  /// lanes, which take micro-batches in turn).
  int64_t microBatchMultiple = 1;
  /// Gives each worker its own connection to the tables (a PS client of
  /// its own, as a worker process has), so that workers do not queue on one
  /// client; without it every worker uses the executor's `tables`.
  std::function<std::unique_ptr<EmbeddingStore>()> tablesPerWorker;
  /// Record a span per kernel, segment, send, wait and update (--trace).
  bool trace = false;
  SyncMode sync = SyncMode::Sync;
  /// Async: the steps a replica's parameters may miss of the others'
  /// updates (0: it pulls them after every step).
  int64_t maxStaleness = 0;
  /// Runs the job as several processes, this one of them: the job's
  /// workers are numbered stage by stage, replica by replica, and this
  /// process runs the worker its rank names (on the thread that calls
  /// run()). Channels to other processes' workers and the replicas' sums
  /// go through `processes`; there must be exactly one process per worker
  /// (maxWorkers is then the process count).
  Communicator *processes = nullptr;
};

/// Where the replicas of a stage spent the steps run so far, in seconds
/// per replica (their mean).
struct StageTimes {
  int stage = 0, replicas = 0;
  double wallSeconds = 0;
  /// Running segments (kernels, gradient sums), copying tensors into
  /// channels, waiting for channels, and applying the step's updates and
  /// pushes (with the wait for the stage's other replicas).
  double busy = 0, sending = 0, waiting = 0, updating = 0;
  /// The pipeline's samples/s, and what the stage would reach if it never
  /// waited: samples over (busy + sending + updating).
  double samplesPerSecond = 0, boundSamplesPerSecond = 0;
};

/// Nanosecond totals of one worker.
struct WorkerTimes {
  int64_t busy = 0, sending = 0, waiting = 0, updating = 0;
};

/// How the plan's stages were mapped onto workers.
struct StageMapping {
  int stage = 0;
  std::string resource, kind;
  int64_t units = 0;
  int replicas = 0;
  int segments = 0;
};

class PipelineExecutor : public StepExecutor {
public:
  PipelineExecutor(const plan::Plan &plan, ParamStore &params,
                   EmbeddingStore &tables, const ProgramOptions &options,
                   const PipelineOptions &pipeline);
  ~PipelineExecutor() override;

  /// One synchronous training step on the whole batch `inputs` (by input
  /// position). Rank-0 outputs (the loss) are the batch's weighted mean,
  /// the others are the micro-batches' rows in batch order. Throws, naming
  /// the stage and replica, when a worker fails; the executor is unusable
  /// afterwards.
  const std::vector<const Tensor *> &
  run(const std::vector<const Tensor *> &inputs, bool training,
      const std::vector<int> &outputs) override;

  int64_t steps() const override { return stepCount; }
  void setSteps(int64_t steps) override { stepCount = steps; }
  /// The kernel time of every replica of every stage: the work of a step,
  /// as one unit would do it. In a job of several processes this is a
  /// collective: every process gets the job's times.
  void addOpTimes(OpTimes &times) const override;
  /// In a job of several processes, copies each stage's parameters (and
  /// their optimizer state) from its first replica into every process, so
  /// that any process can evaluate or write a checkpoint. A collective.
  void synchronize() override;

  const std::vector<StageMapping> &mapping() const { return stageMapping; }
  /// Per stage, over all its replicas (in a job of several processes a
  /// collective).
  std::vector<StageTimes> stageTimes() const;
  /// One line per stage from stageTimes().
  std::string summary() const;
  /// The stage and replica this process runs in a job of several
  /// processes.
  std::pair<int, int> localWorker() const;
  /// The workers' spans, with PipelineOptions::trace.
  std::vector<const TraceThread *> traceThreads() const;
  int64_t microBatches() const { return microBatchCount; }
  /// One line per stage: its units and the replicas that run them.
  std::string describe() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
  std::vector<StageMapping> stageMapping;
  int64_t microBatchCount = 1;
  int64_t stepCount = 0;
};

/// True when the plan asks for more than one worker: several stages, or a
/// stage with several units.
bool needsPipeline(const plan::Plan &plan);

/// The replicas each stage of `plan` gets from `workers` workers: one each,
/// then one at a time to the stage with the most units per replica, never
/// more than its units (so possibly fewer workers in all).
std::vector<int> mapStageReplicas(const plan::Plan &plan, int workers);

/// The micro-batches per step the executor runs: `asked` (0: the plan's),
/// at least the widest stage's replicas, rounded up to a multiple of
/// `multiple`.
int64_t pipelineMicroBatches(const plan::Plan &plan,
                             const std::vector<int> &replicas, int64_t asked,
                             int64_t multiple = 1);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PIPELINE_H
