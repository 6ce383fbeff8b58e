//===- PipelineState.h - The pipelined executor's shared state --*- C++ -*-===//
//
// What the pipelined executor's parts share: the workers (a thread per stage
// replica) with their inboxes and step bookkeeping, the signals they wait
// on, and the executor's state. PipelineExecutor.cpp builds the workers and
// drives the steps, StageWorker.cpp is a worker's step, Channels.cpp moves
// the messages between workers and processes, and PipelineReport.cpp
// reports where the time went.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_PIPELINE_PIPELINESTATE_H
#define HETERPS_LIB_RUNTIME_PIPELINE_PIPELINESTATE_H

#include "PinnedBuffers.h"
#include "StageProgram.h"

#include "heterps/Runtime/Communicator.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/Trace.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace heterps::runtime {
namespace pipeline {

struct MicroBatch {
  int64_t firstRow = 0, rows = 0;
  double weight = 0;
  /// Views of the rows of the step's inputs (null where none was given).
  std::vector<Tensor> inputs;
  std::vector<bool> given;
  /// The bag offsets of the micro-batch, counted from its first id, for
  /// the inputs that hold offsets (BagOffsets.h).
  std::vector<Tensor> bagStarts;
};

/// A condition that threads wait for: they spin on it for a few tens of
/// microseconds, then block. A step of a small model takes about a hundred
/// microseconds: sleeping and waking a thread at each hand-off would cost a
/// third of it. The state a waiter reads changes under `mutex`; `wake`
/// signals only when some thread sleeps, since waking costs a system call.
struct Signal {
  std::mutex mutex;
  std::condition_variable cv;
  std::atomic<int> sleepers{0};

  template <typename Ready> void waitUntil(Ready ready) {
    using Clock = std::chrono::steady_clock;
    Clock::time_point until = Clock::now() + std::chrono::microseconds(50);
    for (int i = 1; !ready(); ++i) {
      if (i % 64 == 0 && Clock::now() > until) {
        std::unique_lock<std::mutex> lock(mutex);
        ++sleepers;
        cv.wait(lock, ready);
        --sleepers;
        return;
      }
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
  /// Call after changing the state under `mutex`.
  void wake() {
    if (sleepers > 0)
      cv.notify_all();
  }
};

/// Tensors sent to one worker, by (micro-batch, channel).
struct Inbox {
  Signal arrived;
  std::map<std::pair<int64_t, int64_t>, Tensor> messages;
  /// Messages delivered so far, read without the lock by a waiting worker.
  std::atomic<uint64_t> deliveries{0};
};

/// Adds the time of a scope to a counter, and with a trace a span.
class SpanTimer {
public:
  SpanTimer(int64_t &total, TraceThread *trace, const TraceSpan &span)
      : total(total), trace(trace), span(span), start(clock()) {}
  ~SpanTimer() {
    int64_t end = clock();
    total += end - start;
    if (trace) {
      span.start = start - origin();
      span.duration = end - start;
      trace->add(span);
    }
  }
  static int64_t clock() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

private:
  int64_t origin() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               trace->origin.time_since_epoch())
        .count();
  }
  int64_t &total;
  TraceThread *trace;
  TraceSpan span;
  int64_t start;
};

inline TraceSpan spanOf(SpanKind kind, int64_t step, int64_t microBatch,
                        int64_t index = -1) {
  TraceSpan span;
  span.kind = kind;
  span.step = step;
  span.microBatch = microBatch;
  span.index = index;
  return span;
}

struct Worker {
  int stage = 0, replica = 0;
  /// Whether this process runs the worker, and the process that does.
  bool local = true;
  /// Whether its stage runs on the GPU: messages to it are page-locked.
  bool onGpu = false;
  int rank = 0;
  /// The worker's own tables client, when the executor was given a factory.
  std::unique_ptr<EmbeddingStore> tables;
  /// Asynchronous training: the worker's own copy of the parameters, and
  /// the steps since it last pulled its stage's from the store.
  std::unique_ptr<ParamStore> params;
  int64_t stepsSincePull = 0;
  std::unique_ptr<StageProgram> program;
  std::vector<std::unique_ptr<StageProgram::Slot>> slots;
  std::vector<StageProgram::Slot *> freeSlots;
  Inbox inbox;
  /// Micro-batches in flight at most (1F1B), or 0 for no bound.
  int64_t inFlightLimit = 0;
  std::thread thread;
  // The step's bookkeeping, kept between steps: this replica's
  // micro-batches, the segments each has done, and the slot holding it.
  std::vector<int64_t> mine;
  std::vector<int> progress;
  std::vector<StageProgram::Slot *> slotOf;
  /// Segments run whose copies to the host may still be under way, oldest
  /// first, as (index into `mine`, segment).
  std::vector<std::pair<size_t, int>> copying;
  /// Where the worker's time went, in nanoseconds over all steps.
  WorkerTimes times;
  std::unique_ptr<TraceThread> trace;
};

/// Where the replicas of a stage wait for each other before applying the
/// step's updates.
struct StageBarrier {
  Signal signal;
  int arrived = 0;
  std::atomic<uint64_t> phase{0};
};

} // namespace pipeline

struct PipelineExecutor::Impl {
  using MicroBatch = pipeline::MicroBatch;
  using Signal = pipeline::Signal;
  using StageBarrier = pipeline::StageBarrier;
  using Worker = pipeline::Worker;

  const plan::Plan &plan;
  PipelineOptions options;
  int threadsPerWorker = 1;
  std::vector<std::vector<std::unique_ptr<Worker>>> stages;
  std::vector<std::unique_ptr<StageBarrier>> barriers;
  /// Each stage's programs, for the replicas' sums.
  std::vector<std::vector<StageProgram *>> programs;

  // The step the workers run: the driver bumps `generation` to start one,
  // each worker thread decrements `running` when done. The driver runs the
  // first worker itself.
  // `start` guards generation and shutdown, `finished` running, aborted
  // and error.
  Signal start, finished;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> running{0};
  std::atomic<bool> shutdown{false};
  std::atomic<bool> aborted{false};
  std::string error;
  std::vector<MicroBatch> microBatches;
  int64_t batchRows = 0;
  /// Per input position, the input holding its bag offsets, or -1.
  std::vector<int> bagOffsetsOf;
  /// The plan inputs this process's workers read: one missing is refused
  /// before a step starts, since a worker that fails stops the pipeline.
  std::vector<bool> neededInputs;
  /// The step's bag offsets per input position (those that hold some).
  std::vector<std::vector<int64_t>> bagStarts;
  int64_t stepNumber = 0;
  // The steps run so far: samples and wall time.
  int64_t samples = 0, wallNanos = 0;
  std::chrono::steady_clock::time_point origin =
      std::chrono::steady_clock::now();

  // Results: the wanted outputs, the rank-0 ones as per-micro-batch parts.
  std::vector<int> wanted;
  std::vector<Tensor> results;
  std::vector<std::vector<double>> scalarParts;
  std::vector<const Tensor *> resultPointers;

  // A job of several processes: the job, this process's stage's replicas,
  // the channels by position (a message's tag is position * tagStride +
  // micro-batch), and the stage whose replicas update each parameter.
  Communicator *processes = nullptr;
  std::unique_ptr<Communicator> stageGroup;
  std::vector<const plan::Channel *> channelList;
  std::map<int64_t, int> channelPosition;
  int64_t tagStride = 1;
  std::map<std::string, int> parameterStage;
  /// The worker run() runs on its own thread.
  Worker *driver = nullptr;
  /// The buffers of the messages to GPU stages (null: no GPU stage here).
  std::shared_ptr<PinnedBuffers> pinned;
  /// The parameters and tables the executor was given.
  ParamStore *mainParams = nullptr;
  EmbeddingStore *mainTables = nullptr;

  explicit Impl(const plan::Plan &plan) : plan(plan) {}
  /// Moves the messages that other processes sent into the inboxes.
  void receiveRemote();
  void waitForDelivery(Worker &worker, uint64_t seen);
  void workerMain(Worker &worker);
  void runStep(Worker &worker);
  void runStepCatching(Worker &worker);
  void abort(const std::string &message);
  /// Sends a copy of `value` to the worker of `stage` that runs
  /// `microBatch`, in this process or another.
  void deliver(int stage, int64_t microBatch, int64_t channel,
               const Tensor &value);
  /// Puts `value` into the inbox of `to`, a local worker, as the message of
  /// `microBatch` on `channel`: a page-locked copy for a GPU stage.
  void deliverLocal(Worker &to, int64_t microBatch, int64_t channel,
                    const Tensor &value);
  void collect(const StageSegment &segment, StageProgram::Slot &slot,
               int64_t microBatch);
};

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_PIPELINE_PIPELINESTATE_H
