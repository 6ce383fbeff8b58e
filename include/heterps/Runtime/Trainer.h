//===- Trainer.h - The training loop ----------------------------*- C++ -*-===//
//
// The loop that heterps-run (and any other front end) trains with: epochs
// over a data source or steps on fixed input tensors, each step run by a
// StepExecutor (one worker, or the pipelined executor), a progress line
// every few steps (samples/s, loss, AUC or accuracy), evaluation after each
// epoch, and checkpoints that record the position in the data so that a
// resumed run reads the batches the interrupted one would have. Where the
// parameters and tables of a checkpoint go is the front end's business: it
// passes a function that writes them.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAINER_H
#define HETERPS_RUNTIME_TRAINER_H

#include "heterps/Runtime/Checkpoint.h"
#include "heterps/Runtime/InputBinder.h"
#include "heterps/Runtime/Metrics.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace heterps::runtime {

/// A progress report as numbers: after every `logEvery` steps (the loss and
/// metrics of those steps) and after each evaluation (the metrics of the
/// evaluation data).
struct TrainingReport {
  enum class Kind { Steps, Evaluation };
  Kind kind = Kind::Steps;
  /// Training steps taken so far, and the epoch (from 1).
  int64_t step = 0, epoch = 0;
  double samplesPerSecond = 0;
  /// Seconds since training started.
  double seconds = 0;
  const Metrics *metrics = nullptr;
};

struct TrainerOptions {
  int64_t epochs = 1;
  /// Stop after this many steps (0: the epochs).
  int64_t steps = 0;
  int64_t batchSize = 1;
  /// A progress line every this many steps (0: none).
  int64_t logEvery = 100;
  /// Also checkpoint every this many steps (0: only at the end).
  int64_t checkpointEvery = 0;
  /// Writes a checkpoint: parameters, tables and `info` (the step and the
  /// data position); unset: no checkpoints.
  std::function<void(CheckpointInfo info)> saveCheckpoint;
  /// Receives every line the trainer reports, without its newline.
  std::function<void(const std::string &line)> log;
  /// Receives the progress lines (step, epoch, samples/s, loss, metrics,
  /// elapsed time and, once the run's length is known, the ETA) instead of
  /// `log` when set: a terminal front end rewrites one line with them.
  std::function<void(const std::string &line)> progress;
  /// In a job of several processes, each reading its own lanes of the
  /// data: merges a training window's metrics across the processes before
  /// they are reported (Metrics::sumAcrossProcesses); every process's
  /// trainer calls it at the same steps.
  std::function<void(Metrics &window)> combineMetrics;
  /// Receives every report; returning false ends training after the step
  /// or evaluation reported (a front end's callbacks stop early this way).
  std::function<bool(const TrainingReport &report)> report;
};

struct TrainingSummary {
  int64_t steps = 0, samples = 0;
  double seconds = 0, lastLoss = 0;
  /// The metrics of the last evaluation (empty without evaluation data).
  Metrics evaluation;
  /// Whether a report callback ended training early.
  bool stopped = false;
  /// Where a run resuming after this one starts in the data: the epoch and
  /// the batches of it read (a checkpoint's "epoch" and "epoch-batches").
  int64_t nextEpoch = 0, nextEpochBatches = 0;
};

class Trainer {
public:
  /// `program` binds inputs and evaluates; `stepper` runs the training
  /// steps (the program itself or a pipelined executor of its plan).
  Trainer(Program &program, StepExecutor &stepper, TrainerOptions options);

  /// Epochs over `train`, from the data position `resume` recorded (empty:
  /// the start), evaluating on `eval` after each.
  TrainingSummary fit(DataSource &train, DataSource *eval,
                      const CheckpointInfo &resume = {});
  /// options.steps steps on the same inputs (by input position).
  TrainingSummary fitOn(const std::vector<const Tensor *> &inputs);
  /// Receives each batch's predictions (the first prediction output), its
  /// labels (null without a label input) and which rows hold examples.
  using PredictionSink =
      std::function<void(const Tensor &prediction, const Tensor *label,
                         const std::vector<char> &present)>;
  /// A forward pass over `source`: the loss-free metrics; `sink` sees the
  /// predictions.
  Metrics evaluate(DataSource &source, const PredictionSink &sink = {});

  InputBinder &binder() { return inputs; }

private:
  TrainingSummary loop(DataSource *train, DataSource *eval,
                       const std::vector<const Tensor *> *fixed,
                       const CheckpointInfo &resume);
  void log(const char *format, ...) __attribute__((format(printf, 2, 3)));
  /// Calls options.report; false when it asks to stop.
  bool report(TrainingReport::Kind kind, int64_t epoch, double samplesPerSecond,
              const Metrics &metrics);

  Program &program;
  StepExecutor &stepper;
  TrainerOptions options;
  InputBinder inputs;
  /// Whether the predictions are logits (see Metrics).
  bool logitScores = false;
  std::chrono::steady_clock::time_point loopStart;
};

/// A non-negative count recorded in a checkpoint's MANIFEST entries, or
/// `otherwise` when the entry is absent; throws naming a malformed one.
int64_t checkpointCount(const CheckpointInfo &info, const std::string &key,
                        int64_t otherwise);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_TRAINER_H
