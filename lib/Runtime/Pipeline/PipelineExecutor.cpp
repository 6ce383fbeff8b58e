//===- PipelineExecutor.cpp - Pipelined, data-parallel execution ----------===//
//
// One thread per stage replica. A step starts every worker; each runs the
// segments of its micro-batches (micro-batch m belongs to replica
// m mod replicas of every stage) as their channels deliver, in a fixed
// order per segment, so that accumulation order, and so the result, does
// not depend on timing. Every dependency of a task points to a smaller
// micro-batch or to an earlier task of the same micro-batch, so the
// workers cannot deadlock. When all are done the driver applies each
// stage's updates once.
//
// In a job of several processes each process runs one of these workers; a
// channel to a worker of another process is a message tagged with the
// channel and the micro-batch (a step's messages are all received before
// any process starts the next step, since the step ends with a collective),
// and the replicas of a stage sum their gradients with an all-reduce.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Pipeline.h"

#include "PinnedBuffers.h"
#include "StageProgram.h"

#include "heterps/Runtime/BagOffsets.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/MicroBatches.h"
#include "heterps/Runtime/OpInfo.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Runtime/Trace.h"
#include "heterps/Support/CheckedMath.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <omp.h>
#include <sstream>
#include <thread>

using namespace heterps;
using namespace heterps::runtime;

SyncMode runtime::parseSyncMode(const std::string &name) {
  if (name == "sync")
    return SyncMode::Sync;
  if (name == "async")
    return SyncMode::Async;
  fail("unknown sync mode '", name, "'; expected sync or async");
}

const char *runtime::syncModeName(SyncMode mode) {
  return mode == SyncMode::Async ? "async" : "sync";
}

PipelineSchedule runtime::parsePipelineSchedule(const std::string &name) {
  if (name == "1f1b")
    return PipelineSchedule::OneForwardOneBackward;
  if (name == "gpipe")
    return PipelineSchedule::GPipe;
  fail("unknown pipeline schedule '", name, "'; expected 1f1b or gpipe");
}

const char *runtime::pipelineScheduleName(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::GPipe ? "gpipe" : "1f1b";
}

bool runtime::needsPipeline(const plan::Plan &plan) {
  if (plan.stages_size() > 1)
    return true;
  for (const plan::Stage &stage : plan.stages())
    if (stage.units() > 1)
      return true;
  return false;
}

std::vector<int> runtime::mapStageReplicas(const plan::Plan &plan,
                                           int workers) {
  int numStages = plan.stages_size();
  std::vector<int> replicas(numStages, 1);
  for (int used = numStages; used < workers; ++used) {
    int best = -1;
    double bestLoad = 0;
    for (int s = 0; s < numStages; ++s) {
      int64_t units = std::max<int64_t>(plan.stages(s).units(), 1);
      double load = static_cast<double>(units) / replicas[s];
      if (replicas[s] < units && load > bestLoad) {
        best = s;
        bestLoad = load;
      }
    }
    if (best < 0)
      break;
    ++replicas[best];
  }
  return replicas;
}

int64_t runtime::pipelineMicroBatches(const plan::Plan &plan,
                                      const std::vector<int> &replicas,
                                      int64_t asked, int64_t multiple) {
  int64_t count =
      asked > 0 ? asked : std::max<int64_t>(plan.micro_batches(), 1);
  for (int r : replicas)
    count = std::max<int64_t>(count, r);
  multiple = std::max<int64_t>(multiple, 1);
  return (count + multiple - 1) / multiple * multiple;
}

namespace {

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

TraceSpan spanOf(SpanKind kind, int64_t step, int64_t microBatch,
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

} // namespace

/// Where the replicas of a stage wait for each other before applying the
/// step's updates.
struct StageBarrier {
  Signal signal;
  int arrived = 0;
  std::atomic<uint64_t> phase{0};
};

struct PipelineExecutor::Impl {
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

void PipelineExecutor::Impl::abort(const std::string &message) {
  {
    std::lock_guard<std::mutex> lock(finished.mutex);
    if (!aborted)
      error = message;
    aborted = true;
  }
  finished.wake();
  // Replicas waiting for each other before the step's updates give up.
  for (auto &barrier : barriers) {
    { std::lock_guard<std::mutex> lock(barrier->signal.mutex); }
    barrier->signal.wake();
  }
  for (auto &replicas : stages)
    for (auto &worker : replicas) {
      std::lock_guard<std::mutex> lock(worker->inbox.arrived.mutex);
      worker->inbox.arrived.wake();
    }
}

void PipelineExecutor::Impl::deliver(int stage, int64_t microBatch,
                                     int64_t channel, const Tensor &value) {
  auto &replicas = stages[stage];
  Worker &to = *replicas[microBatch % replicas.size()];
  if (to.local) {
    deliverLocal(to, microBatch, channel, value);
    return;
  }
  const Shape &shape = value.shape();
  int32_t header[2] = {static_cast<int32_t>(value.dtype()),
                       static_cast<int32_t>(shape.size())};
  size_t headerBytes = sizeof(header) + shape.size() * sizeof(int64_t);
  std::vector<char> message(headerBytes + value.byteSize());
  std::memcpy(message.data(), header, sizeof(header));
  std::memcpy(message.data() + sizeof(header), shape.data(),
              shape.size() * sizeof(int64_t));
  std::memcpy(message.data() + headerBytes, value.data(), value.byteSize());
  int64_t tag = channelPosition.at(channel) * tagStride + microBatch;
  processes->send(to.rank, static_cast<int>(tag), std::move(message));
}

void PipelineExecutor::Impl::deliverLocal(Worker &to, int64_t microBatch,
                                          int64_t channel,
                                          const Tensor &value) {
  Tensor message = to.onGpu && pinned ? pinned->copyOf(value) : value.clone();
  {
    std::lock_guard<std::mutex> lock(to.inbox.arrived.mutex);
    to.inbox.messages[{microBatch, channel}] = std::move(message);
    ++to.inbox.deliveries;
  }
  to.inbox.arrived.wake();
}

void PipelineExecutor::Impl::receiveRemote() {
  int from = 0, tag = 0;
  std::vector<char> message;
  while (processes->tryReceive(from, tag, message)) {
    int64_t position = tag / tagStride, microBatch = tag % tagStride;
    if (tag < 0 || position >= static_cast<int64_t>(channelList.size()) ||
        microBatch >= static_cast<int64_t>(microBatches.size()))
      fail("process ", from, " sent a message with tag ", tag,
           ", which names no channel and micro-batch of this step");
    const plan::Channel &channel = *channelList[position];
    int32_t header[2];
    if (message.size() < sizeof(header))
      fail("channel ", channel.id(), ": a message of ", message.size(),
           " bytes from process ", from);
    std::memcpy(header, message.data(), sizeof(header));
    int32_t rank = header[1];
    size_t headerBytes = sizeof(header) + std::max(rank, 0) * sizeof(int64_t);
    if (rank < 0 || rank > 8 || message.size() < headerBytes)
      fail("channel ", channel.id(), ": a message from process ", from,
           " has a tensor of rank ", rank);
    Shape shape(rank);
    std::memcpy(shape.data(), message.data() + sizeof(header),
                rank * sizeof(int64_t));
    std::optional<int64_t> product = checkedProduct(shape);
    if (!product)
      fail("channel ", channel.id(), ": a message from process ", from,
           " has a bad shape");
    int64_t elements = *product;
    DType dtype = static_cast<DType>(header[0]);
    TensorType expected = fromPlanType(channel.type());
    if (dtype != expected.dtype ||
        message.size() != headerBytes + elements * dtypeSize(dtype))
      fail("channel ", channel.id(), ": process ", from, " sent ",
           message.size(), " bytes, not a ", dtypeName(expected.dtype),
           " tensor of ", shapeString(shape));
    auto &replicas = stages[channel.to_stage()];
    Worker &to = *replicas[microBatch % replicas.size()];
    if (!to.local)
      fail("process ", from, " sent micro-batch ", microBatch, " of channel ",
           channel.id(), " to the wrong process");
    deliverLocal(to, microBatch, channel.id(),
                 Tensor::view(dtype, shape, message.data() + headerBytes));
  }
}

void PipelineExecutor::Impl::waitForDelivery(Worker &worker, uint64_t seen) {
  if (!processes) {
    worker.inbox.arrived.waitUntil(
        [&] { return aborted || worker.inbox.deliveries != seen; });
    return;
  }
  // Only this thread calls MPI: it polls, backing off to 50 us sleeps so
  // that processes sharing a core leave it to the one with work.
  for (int i = 0; !aborted && worker.inbox.deliveries == seen; ++i) {
    receiveRemote();
    if (worker.inbox.deliveries != seen)
      break;
    if (i < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void PipelineExecutor::Impl::collect(const StageSegment &segment,
                                     StageProgram::Slot &slot,
                                     int64_t microBatch) {
  const MicroBatch &mb = microBatches[microBatch];
  for (const ProgramPoint &point : segment.outputs)
    for (size_t w = 0; w < wanted.size(); ++w) {
      if (wanted[w] != point.position)
        continue;
      const Tensor &value = slot.values[point.value];
      Tensor &result = results[w];
      if (result.rank() == 0) {
        scalarParts[w][microBatch] = value.as<float>()[0];
        continue;
      }
      if (value.rank() == 0 || value.dim(0) != mb.rows ||
          value.numElements() / mb.rows !=
              result.numElements() / std::max<int64_t>(result.dim(0), 1))
        fail("output '", plan.values(plan.outputs(point.position)).name(),
             "' of micro-batch ", microBatch, " is ", value.typeString(),
             "; the pipeline joins outputs of ", mb.rows,
             " rows into the batch's");
      size_t rowBytes = value.byteSize() / mb.rows;
      std::memcpy(static_cast<char *>(result.data()) + mb.firstRow * rowBytes,
                  value.data(), value.byteSize());
    }
}

void PipelineExecutor::Impl::runStep(Worker &worker) {
  StageProgram &program = *worker.program;
  const std::vector<StageSegment> &segments = program.segments();
  int numSegments = static_cast<int>(segments.size());
  int replicas = static_cast<int>(stages[worker.stage].size());
  std::vector<int64_t> &mine = worker.mine;
  mine.clear();
  for (int64_t m = worker.replica;
       m < static_cast<int64_t>(microBatches.size()); m += replicas)
    mine.push_back(m);
  std::vector<int> &progress = worker.progress;
  std::vector<StageProgram::Slot *> &slotOf = worker.slotOf;
  progress.assign(mine.size(), 0);
  slotOf.assign(mine.size(), nullptr);
  size_t done = 0, nextForward = 0;
  int64_t inFlight = 0;
  bool gpipe = options.schedule == PipelineSchedule::GPipe;

  // The next micro-batch (index into `mine`) for segment k: segments take
  // their micro-batches in order.
  auto nextFor = [&](int k) -> int64_t {
    for (size_t i = 0; i < mine.size(); ++i)
      if (progress[i] <= k)
        return progress[i] == k ? static_cast<int64_t>(i) : -1;
    return -1;
  };
  auto delivered = [&](int k, size_t i) {
    for (const ChannelPoint &recv : segments[k].recvs)
      if (!worker.inbox.messages.count({mine[i], recv.channel}))
        return false;
    return true;
  };
  // A GPU stage's segment returns once its work is queued, and its sends
  // and outputs are handed on once its copies to the host are done. The
  // worker queues its next segment first, so that the device computes
  // while the copies run and the host hands on; at most one segment waits
  // so (its slot stays taken until then), and none while the worker waits
  // for messages, so that no stage waits for what this one holds back.
  std::vector<std::pair<size_t, int>> &copying = worker.copying;
  copying.clear();
  auto handOn = [&](size_t task, int segment) {
    int64_t m = mine[task];
    const StageSegment &seg = segments[segment];
    StageProgram::Slot &slot = *slotOf[task];
    if (slot.copying) {
      SpanTimer timer(worker.times.busy, worker.trace.get(),
                      spanOf(SpanKind::CopyOut, stepNumber, m, segment));
      program.finishCopies(slot);
    }
    collect(seg, slot, m);
    for (const ChannelPoint &send : seg.sends) {
      SpanTimer timer(worker.times.sending, worker.trace.get(),
                      spanOf(SpanKind::Send, stepNumber, m, send.channel));
      deliver(send.peerStage, m, send.channel, slot.values[send.value]);
    }
    if (segment + 1 == numSegments) {
      worker.freeSlots.push_back(slotOf[task]);
      slotOf[task] = nullptr;
      --inFlight;
      ++done;
    }
  };
  auto handOnOldest = [&] {
    auto [task, segment] = copying.front();
    copying.erase(copying.begin());
    handOn(task, segment);
  };
  while (done < mine.size()) {
    int64_t task = -1;
    int segment = -1;
    {
      std::unique_lock<std::mutex> lock(worker.inbox.arrived.mutex);
      while (true) {
        if (aborted)
          return;
        uint64_t seen = worker.inbox.deliveries;
        auto tryForward = [&] {
          if (nextForward < mine.size() &&
              (worker.inFlightLimit == 0 || inFlight < worker.inFlightLimit) &&
              delivered(0, nextForward)) {
            task = static_cast<int64_t>(nextForward);
            segment = 0;
          }
        };
        auto tryBackward = [&] {
          for (int k = gpipe ? 1 : numSegments - 1;
               gpipe ? k < numSegments : k >= 1; k += gpipe ? 1 : -1) {
            int64_t i = nextFor(k);
            if (i >= 0 && delivered(k, i)) {
              task = i;
              segment = k;
              return;
            }
          }
        };
        if (gpipe) {
          tryForward();
          if (task < 0)
            tryBackward();
        } else {
          tryBackward();
          if (task < 0)
            tryForward();
        }
        if (task >= 0)
          break;
        lock.unlock();
        if (!copying.empty()) {
          while (!copying.empty())
            handOnOldest();
          lock.lock();
          if (done == mine.size())
            break;
          continue;
        }
        {
          SpanTimer timer(worker.times.waiting, worker.trace.get(),
                          spanOf(SpanKind::Wait, stepNumber, -1));
          waitForDelivery(worker, seen);
        }
        lock.lock();
      }
    }
    if (task < 0)
      break;
    int64_t m = mine[task];
    const MicroBatch &mb = microBatches[m];
    const StageSegment &seg = segments[segment];
    if (segment == 0) {
      if (worker.freeSlots.empty()) {
        worker.slots.push_back(std::make_unique<StageProgram::Slot>());
        worker.freeSlots.push_back(worker.slots.back().get());
      }
      slotOf[task] = worker.freeSlots.back();
      worker.freeSlots.pop_back();
      ++inFlight;
      ++nextForward;
    }
    StageProgram::Slot &slot = *slotOf[task];
    // A slot's values stay as they are until its copies are done.
    bool slotCopying = false;
    for (const auto &queued : copying)
      slotCopying |= slotOf[queued.first] == &slot;
    while (slotCopying && !copying.empty())
      handOnOldest();
    if (slot.values.size() != program.valueCount())
      slot.values.resize(program.valueCount());
    for (const ProgramPoint &input : seg.inputs) {
      if (!mb.given[input.position])
        fail("input '", plan.values(input.value).name(),
             "' is needed but not given");
      const Tensor &t = mb.inputs[input.position];
      slot.values[input.value].reset(t.dtype(), t.shape(), t.data());
    }
    {
      std::lock_guard<std::mutex> lock(worker.inbox.arrived.mutex);
      for (const ChannelPoint &recv : seg.recvs) {
        auto it = worker.inbox.messages.find({m, recv.channel});
        slot.values[recv.value] = std::move(it->second);
        worker.inbox.messages.erase(it);
      }
    }
    {
      SpanKind kind = numSegments == 1 ? SpanKind::Step
                      : segment == 0   ? SpanKind::Forward
                                       : SpanKind::Backward;
      SpanTimer timer(worker.times.busy, worker.trace.get(),
                      spanOf(kind, stepNumber, m, segment));
      program.setTraceContext(stepNumber, m);
      program.run(segment, slot, mb.weight);
    }
    ++progress[task];
    copying.push_back({static_cast<size_t>(task), segment});
    // The older segment's copies ran beside this one's kernels.
    while (!copying.empty() &&
           (copying.size() > 1 ||
            program.copiesReached(*slotOf[copying.front().first])))
      handOnOldest();
  }
}

void PipelineExecutor::Impl::runStepCatching(Worker &worker) {
  try {
    runStep(worker);
    // Once every replica of the stage has all its gradients, each applies
    // its share of the stage's updates and pushes. Every forward of the
    // step is done by then (the stage has its last micro-batch's gradient,
    // or is the last stage), so no lookup of this step sees a push.
    SpanTimer timer(worker.times.updating, worker.trace.get(),
                    spanOf(SpanKind::Update, stepNumber, -1));
    if (options.sync == SyncMode::Async) {
      // No waiting for the stage's other replicas: the store applies each
      // replica's gradients as they come.
      bool pull = ++worker.stepsSincePull > options.maxStaleness;
      // Until it pulls, a replica sees its own updates, not the others'.
      worker.program->pushStepGradients(/*applyLocally=*/!pull);
      if (pull) {
        worker.program->pullParameters();
        worker.stepsSincePull = 0;
      }
      return;
    }
    if (processes) {
      worker.program->applyStep(*stageGroup);
      return;
    }
    std::vector<StageProgram *> &replicas = programs[worker.stage];
    int count = static_cast<int>(replicas.size());
    if (count > 1) {
      StageBarrier &barrier = *barriers[worker.stage];
      uint64_t phase = barrier.phase;
      {
        std::lock_guard<std::mutex> lock(barrier.signal.mutex);
        if (++barrier.arrived == count) {
          barrier.arrived = 0;
          ++barrier.phase;
        }
      }
      barrier.signal.wake();
      barrier.signal.waitUntil(
          [&] { return aborted || barrier.phase != phase; });
      if (aborted)
        return;
    }
    worker.program->applyStep(replicas, worker.replica, count);
  } catch (const std::exception &e) {
    std::ostringstream message;
    message << "stage " << worker.stage << " replica " << worker.replica << ": "
            << e.what();
    abort(message.str());
  }
}

void PipelineExecutor::Impl::workerMain(Worker &worker) {
  omp_set_num_threads(threadsPerWorker);
  uint64_t seen = 0;
  while (true) {
    start.waitUntil([&] { return shutdown || generation != seen; });
    if (shutdown)
      return;
    seen = generation;
    runStepCatching(worker);
    {
      std::lock_guard<std::mutex> lock(finished.mutex);
      --running;
    }
    finished.wake();
  }
}

PipelineExecutor::PipelineExecutor(const plan::Plan &plan, ParamStore &params,
                                   EmbeddingStore &tables,
                                   const ProgramOptions &options,
                                   const PipelineOptions &pipeline)
    : impl(std::make_unique<Impl>(plan)) {
  impl->options = pipeline;
  impl->bagOffsetsOf = bagOffsetsInputs(plan);
  if (!plan.has_training())
    fail("the pipelined executor runs training steps; the plan is not "
         "a training step (compile it with --heterps-autodiff)");
  int numStages = plan.stages_size();
  if (numStages == 0)
    fail("the plan has no stages");
  for (int s = 0; s < numStages; ++s)
    if (plan.stages(s).index() != s)
      fail("stage ", s, " of the plan has index ", plan.stages(s).index(),
           "; stages are numbered in order");

  // Workers: one per stage, then more replicas for the stages with the
  // most units per replica, up to the cap.
  Communicator *processes = pipeline.processes;
  impl->processes = processes;
  int cap =
      processes ? processes->size()
      : pipeline.maxWorkers > 0
          ? pipeline.maxWorkers
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (processes && processes->size() < numStages)
    fail("the job has ", processes->size(), " process",
         (processes->size() == 1 ? "" : "es"), " and the plan ", numStages,
         " stages; every stage needs a process of its own");
  std::vector<int> replicas = mapStageReplicas(plan, cap);
  int workers = 0;
  for (int r : replicas)
    workers += r;
  if (processes && workers != processes->size()) {
    int64_t units = 0;
    for (const plan::Stage &stage : plan.stages())
      units += std::max<int64_t>(stage.units(), 1);
    fail("the job has ", processes->size(), " processes, the plan's stages ",
         units, " units in all; run at most one process per unit (mpirun -np ",
         workers, ")");
  }
  // A process runs one worker with all its threads.
  impl->threadsPerWorker = processes ? std::max(1, options.threads)
                                     : std::max(1, options.threads / workers);
  if (pipeline.microBatchMultiple < 1)
    fail("micro-batches must come in multiples of a positive count, got ",
         pipeline.microBatchMultiple);
  microBatchCount = pipelineMicroBatches(plan, replicas, pipeline.microBatches,
                                         pipeline.microBatchMultiple);

  ExecContext context;
  context.params = &params;
  context.tables = &tables;
  context.seed = options.seed;
  context.threads = impl->threadsPerWorker;
  context.training = true;
  std::optional<std::string> gpuStatus;
  const KernelRegistry &registry =
      options.registry ? *options.registry : KernelRegistry::global();
  DeviceRuntime *gpu = nullptr;
  int nextRank = 0;
  for (int s = 0; s < numStages; ++s) {
    const plan::Stage &stage = plan.stages(s);
    impl->stages.emplace_back();
    for (int r = 0; r < replicas[s]; ++r) {
      auto worker = std::make_unique<Worker>();
      worker->stage = s;
      worker->replica = r;
      worker->rank = nextRank++;
      worker->local = !processes || worker->rank == processes->rank();
      if (!worker->local) {
        impl->stages.back().push_back(std::move(worker));
        continue;
      }
      DeviceKind kind = resolveStageDevice(stage, options, gpuStatus);
      if (kind == DeviceKind::GPU && !gpu) {
        gpu = options.gpu ? options.gpu : gpuRuntime();
        if (gpu) {
          gpu->setMath(options.gpuMath);
          impl->pinned = PinnedBuffers::create(*gpu);
        }
      }
      worker->onGpu = kind == DeviceKind::GPU;
      ExecContext workerContext = context;
      if (pipeline.tablesPerWorker) {
        worker->tables = pipeline.tablesPerWorker();
        workerContext.tables = worker->tables.get();
      }
      if (pipeline.sync == SyncMode::Async) {
        worker->params = std::make_unique<ParamStore>(plan, options.seed);
        for (auto &[name, param] : params.all())
          worker->params->get(name).value = param.value.clone();
        workerContext.params = worker->params.get();
      }
      worker->program = std::make_unique<StageProgram>(
          plan, stage, kind, workerContext, registry,
          kind == DeviceKind::GPU ? gpu : nullptr, options.fallbackToCPU);
      if (options.profile)
        worker->program->enableProfiling();
      if (pipeline.trace) {
        worker->trace = std::make_unique<TraceThread>(
            "stage " + std::to_string(s) + " replica " + std::to_string(r),
            impl->origin);
        worker->program->setTrace(worker->trace.get());
      }
      if (pipeline.schedule == PipelineSchedule::OneForwardOneBackward)
        worker->inFlightLimit = numStages - s;
      impl->stages.back().push_back(std::move(worker));
    }
    StageMapping map;
    map.stage = s;
    map.resource = stage.resource();
    map.kind = stage.kind();
    map.units = stage.units();
    map.replicas = replicas[s];
    map.segments = countStageSegments(plan, stage);
    stageMapping.push_back(map);
  }
  for (auto &stageWorkers : impl->stages) {
    impl->barriers.push_back(std::make_unique<StageBarrier>());
    impl->programs.emplace_back();
    for (auto &worker : stageWorkers)
      if (worker->local)
        impl->programs.back().push_back(worker->program.get());
  }
  if (processes) {
    for (const plan::Channel &channel : plan.channels()) {
      impl->channelPosition[channel.id()] =
          static_cast<int>(impl->channelList.size());
      impl->channelList.push_back(&channel);
    }
    impl->tagStride = microBatchCount;
    if (static_cast<int64_t>(impl->channelList.size()) * microBatchCount >
        processes->maxTag())
      fail("the plan's ", impl->channelList.size(), " channels x ",
           microBatchCount, " micro-batches need more message tags ",
           "than MPI offers (", processes->maxTag(), ")");
    Worker *local = nullptr;
    for (auto &stageWorkers : impl->stages)
      for (auto &worker : stageWorkers)
        if (worker->local)
          local = worker.get();
    impl->stageGroup = processes->split(local->stage, local->replica);
  }
  for (int s = 0; s < numStages; ++s)
    for (const plan::Op &op : plan.stages(s).ops())
      if (op.name() == "heterps.update_param")
        impl->parameterStage[op.attrs().at("name").s()] = s;
  impl->mainParams = &params;
  impl->mainTables = &tables;
  if (pipeline.sync == SyncMode::Async) {
    if (pipeline.maxStaleness < 0)
      fail("the staleness bound must be non-negative, got ",
           pipeline.maxStaleness);
    // The store holds the parameters the stages update; a checkpoint's
    // (restored into the store) are kept, and every replica starts from
    // the store's.
    for (int s = 0; s < numStages; ++s)
      for (const plan::Op &op : plan.stages(s).ops())
        if (op.name() == "heterps.update_param") {
          const std::string &name = op.attrs().at("name").s();
          tables.createDense(name, params.get(name).value,
                             updateOptimizerOf(OpInfo(op, {}, {})));
        }
    for (auto &stageWorkers : impl->stages)
      for (auto &worker : stageWorkers)
        if (worker->local)
          worker->program->pullParameters();
  }
  // The first local worker runs on the thread that calls run().
  for (auto &stageWorkers : impl->stages)
    for (auto &worker : stageWorkers) {
      Worker *w = worker.get();
      if (!w->local)
        continue;
      if (!impl->driver)
        impl->driver = w;
      else
        w->thread = std::thread([this, w] { impl->workerMain(*w); });
    }
}

std::pair<int, int> PipelineExecutor::localWorker() const {
  return {impl->driver->stage, impl->driver->replica};
}

PipelineExecutor::~PipelineExecutor() {
  {
    std::lock_guard<std::mutex> lock(impl->start.mutex);
    impl->shutdown = true;
  }
  impl->start.wake();
  for (auto &stageWorkers : impl->stages)
    for (auto &worker : stageWorkers)
      if (worker->thread.joinable())
        worker->thread.join();
}

void PipelineExecutor::addOpTimes(OpTimes &times) const {
  OpTimes local;
  for (const auto &stageWorkers : impl->stages)
    for (const auto &worker : stageWorkers)
      if (worker->local)
        worker->program->addOpTimes(local);
  if (!impl->processes) {
    for (const auto &[op, seconds] : local)
      times[op] += seconds;
    return;
  }
  // Every process sums every op's time, in the plan's order.
  std::vector<const plan::Op *> ops;
  for (const plan::Stage &stage : impl->plan.stages())
    for (const plan::Op &op : stage.ops())
      ops.push_back(&op);
  std::vector<double> seconds(ops.size(), 0.0);
  for (size_t i = 0; i < ops.size(); ++i) {
    auto it = local.find(ops[i]);
    if (it != local.end())
      seconds[i] = it->second;
  }
  impl->processes->allReduceSum(seconds.data(), seconds.size());
  for (size_t i = 0; i < ops.size(); ++i)
    times[ops[i]] += seconds[i];
}

void PipelineExecutor::synchronize() {
  if (impl->options.sync == SyncMode::Async) {
    // The store has the current parameters.
    for (const auto &[name, stage] : impl->parameterStage)
      impl->mainTables->pullDense(name, impl->mainParams->get(name).value);
    return;
  }
  Communicator *processes = impl->processes;
  if (!processes)
    return;
  ParamStore &params = *impl->driver->program->context().params;
  for (auto &[name, param] : params.all()) {
    auto owner = impl->parameterStage.find(name);
    if (owner == impl->parameterStage.end())
      continue;
    int root = impl->stages[owner->second][0]->rank;
    processes->broadcast(param.value.data(), param.value.byteSize(), root);
    // The optimizer state's shape (slots x elements), then its values.
    int64_t shape[2] = {0, 0};
    if (!param.state.empty()) {
      shape[0] = param.state.dim(0);
      shape[1] = param.state.numElements() / std::max<int64_t>(shape[0], 1);
    }
    processes->broadcast(shape, sizeof(shape), root);
    if (shape[0] == 0)
      param.state = Tensor();
    else if (param.state.empty() ||
             param.state.shape() != Shape{shape[0], shape[1]})
      param.state = Tensor(DType::F32, {shape[0], shape[1]});
    if (shape[0])
      processes->broadcast(param.state.data(), param.state.byteSize(), root);
    processes->broadcast(&param.steps, sizeof(param.steps), root);
  }
}

std::vector<const TraceThread *> PipelineExecutor::traceThreads() const {
  std::vector<const TraceThread *> threads;
  for (const auto &stageWorkers : impl->stages)
    for (const auto &worker : stageWorkers)
      if (worker->local && worker->trace)
        threads.push_back(worker->trace.get());
  return threads;
}

std::vector<StageTimes> PipelineExecutor::stageTimes() const {
  std::vector<StageTimes> stages;
  double wall = impl->wallNanos * 1e-9;
  // Every worker's four totals; in a job of several processes each
  // process knows its own and the job sums them.
  std::vector<double> totals;
  for (const auto &stageWorkers : impl->stages)
    for (const auto &worker : stageWorkers) {
      const WorkerTimes &w = worker->times;
      bool known = worker->local;
      for (int64_t value : {w.busy, w.waiting, w.sending, w.updating})
        totals.push_back(known ? value * 1e-9 : 0.0);
    }
  if (impl->processes) {
    impl->processes->allReduceSum(totals.data(), totals.size());
    double meanWall = wall;
    impl->processes->allReduceSum(&meanWall, 1);
    wall = meanWall / impl->processes->size();
  }
  size_t next = 0;
  for (const auto &stageWorkers : impl->stages) {
    StageTimes t;
    t.stage = stageWorkers[0]->stage;
    t.replicas = static_cast<int>(stageWorkers.size());
    t.wallSeconds = wall;
    for (size_t r = 0; r < stageWorkers.size(); ++r, next += 4) {
      t.busy += totals[next] / t.replicas;
      t.waiting += totals[next + 1] / t.replicas;
      t.sending += totals[next + 2] / t.replicas;
      t.updating += totals[next + 3] / t.replicas;
    }
    double work = t.busy + t.sending + t.updating;
    t.boundSamplesPerSecond = work > 0 ? impl->samples / work : 0;
    t.samplesPerSecond = wall > 0 ? impl->samples / wall : 0;
    stages.push_back(t);
  }
  return stages;
}

std::string PipelineExecutor::summary() const {
  std::ostringstream text;
  char line[256];
  for (const StageTimes &t : stageTimes()) {
    double wall = std::max(t.wallSeconds, 1e-12);
    double idle =
        std::max(0.0, wall - t.busy - t.waiting - t.sending - t.updating);
    std::snprintf(
        line, sizeof(line),
        "stage %d (%d replica%s): busy %.0f%%, waiting on channels "
        "%.0f%%, sending %.0f%%, updates %.0f%%, idle %.0f%%; "
        "%.0f samples/s, %.0f if it never waited\n",
        t.stage, t.replicas, t.replicas == 1 ? "" : "s", 100 * t.busy / wall,
        100 * t.waiting / wall, 100 * t.sending / wall, 100 * t.updating / wall,
        100 * idle / wall, t.samplesPerSecond, t.boundSamplesPerSecond);
    text << line;
  }
  return text.str();
}

std::string PipelineExecutor::describe() const {
  std::ostringstream text;
  int workers = 0;
  for (const StageMapping &map : stageMapping)
    workers += map.replicas;
  text << "pipeline: " << stageMapping.size() << " stage"
       << (stageMapping.size() == 1 ? "" : "s") << ", " << workers << " worker"
       << (workers == 1 ? "" : "s") << ", " << microBatchCount << " micro-batch"
       << (microBatchCount == 1 ? "" : "es") << " per step, "
       << pipelineScheduleName(impl->options.schedule) << ", "
       << syncModeName(impl->options.sync);
  if (impl->options.sync == SyncMode::Async)
    text << " (staleness " << impl->options.maxStaleness << ")";
  text << ", " << impl->threadsPerWorker << " thread"
       << (impl->threadsPerWorker == 1 ? "" : "s") << " per worker\n";
  for (const StageMapping &map : stageMapping)
    text << "  stage " << map.stage << " on " << map.resource << " ("
         << map.kind << ") x" << map.units << ": " << map.replicas << " replica"
         << (map.replicas == 1 ? "" : "s") << ", " << map.segments << " segment"
         << (map.segments == 1 ? "" : "s") << "\n";
  return text.str();
}

const std::vector<const Tensor *> &
PipelineExecutor::run(const std::vector<const Tensor *> &inputs, bool training,
                      const std::vector<int> &outputs) {
  Impl &s = *impl;
  const plan::Plan &plan = s.plan;
  if (!training)
    fail("the pipelined executor runs training steps; forward passes "
         "run on one worker");
  if (s.aborted)
    fail("the pipeline stopped after an error: ", s.error);
  if (inputs.size() != static_cast<size_t>(plan.inputs_size()))
    fail("the plan has ", plan.inputs_size(), " inputs, ", inputs.size(),
         " were given");

  // The batch: dimension 0 of the inputs whose plan type has a dynamic one.
  int64_t rows = -1;
  for (int i = 0; i < plan.inputs_size(); ++i) {
    if (!inputs[i])
      continue;
    const plan::Value &value = plan.values(plan.inputs(i));
    TensorType type = fromPlanType(value.type());
    const Tensor &t = *inputs[i];
    if (t.dtype() != type.dtype ||
        t.rank() != static_cast<int64_t>(type.dims.size()))
      fail("input '", value.name(), "' is ", t.typeString(),
           ", the plan expects ",
           Tensor::view(type.dtype, type.dims, nullptr).typeString());
    for (size_t d = 0; d < type.dims.size(); ++d)
      if (type.dims[d] >= 0 && type.dims[d] != t.dim(d))
        fail("input '", value.name(), "' has dimension ", d, " of size ",
             t.dim(d), ", the plan expects ", type.dims[d]);
    // A bag input's rows are ids; the batch is its offsets'.
    if (type.dims.empty() || type.dims[0] >= 0 || s.bagOffsetsOf[i] >= 0)
      continue;
    if (rows >= 0 && t.dim(0) != rows)
      fail("input '", value.name(), "' has ", t.dim(0),
           " rows, the other inputs ", rows);
    rows = t.dim(0);
  }
  if (rows < 0)
    fail("no input of the plan has a dynamic batch dimension; the "
         "pipeline splits the batch into micro-batches");
  if (rows == 0)
    fail("the batch is empty");
  // A micro-batch of bags takes the ids from its first bag's start to the
  // next micro-batch's, with its offsets counted from there.
  s.bagStarts.resize(inputs.size());
  for (std::vector<int64_t> &starts : s.bagStarts)
    starts.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    int j = s.bagOffsetsOf[i];
    if (j < 0 || !inputs[i])
      continue;
    const std::string &name = plan.values(plan.inputs(i)).name();
    if (!inputs[j])
      fail("input '", name, "' is given without its bag offsets '",
           plan.values(plan.inputs(j)).name(), "'");
    if (inputs[j]->rank() != 1 || inputs[j]->dim(0) != rows)
      fail("the bag offsets '", plan.values(plan.inputs(j)).name(),
           "' of input '", name, "' are ", inputs[j]->typeString(),
           ", expected one per example (", rows, ")");
    readBagOffsets(*inputs[j], inputs[i]->dim(0), "input '" + name + "'",
                   s.bagStarts[j]);
  }
  int64_t count = runtime::microBatchCount(rows, microBatchCount);
  s.microBatches.resize(count);
  s.batchRows = rows;
  int64_t first = 0;
  for (int64_t m = 0; m < count; ++m) {
    MicroBatch &mb = s.microBatches[m];
    mb.firstRow = first;
    mb.rows = microBatchRows(rows, count, m);
    mb.weight = static_cast<double>(mb.rows) / rows;
    first += mb.rows;
    mb.inputs.resize(inputs.size());
    mb.given.assign(inputs.size(), false);
    mb.bagStarts.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i])
        continue;
      mb.given[i] = true;
      const Tensor &t = *inputs[i];
      const plan::Value &value = plan.values(plan.inputs(i));
      if (int j = s.bagOffsetsOf[i]; j >= 0) {
        const std::vector<int64_t> &starts = s.bagStarts[j];
        int64_t end = mb.firstRow + mb.rows;
        int64_t begin = starts[mb.firstRow],
                stop = end < rows ? starts[end] : t.dim(0);
        Shape shape = t.shape();
        shape[0] = stop - begin;
        size_t rowBytes = t.dim(0) ? t.byteSize() / t.dim(0) : 0;
        mb.inputs[i].reset(t.dtype(), shape,
                           static_cast<char *>(t.data()) + begin * rowBytes);
        continue;
      }
      if (value.type().dims_size() == 0 || value.type().dims(0) >= 0) {
        mb.inputs[i].reset(t.dtype(), t.shape(), t.data());
        continue;
      }
      Shape shape = t.shape();
      shape[0] = mb.rows;
      if (!s.bagStarts[i].empty()) {
        // Offsets counted from the micro-batch's first id.
        Tensor &own = mb.bagStarts[i];
        own.resize(t.dtype(), shape);
        int64_t base = s.bagStarts[i][mb.firstRow];
        for (int64_t r = 0; r < mb.rows; ++r) {
          int64_t start = s.bagStarts[i][mb.firstRow + r] - base;
          if (t.dtype() == DType::I32)
            own.as<int32_t>()[r] = static_cast<int32_t>(start);
          else
            own.as<int64_t>()[r] = start;
        }
        mb.inputs[i].reset(t.dtype(), shape, own.data());
        continue;
      }
      size_t rowBytes = t.byteSize() / rows;
      mb.inputs[i].reset(t.dtype(), shape,
                         static_cast<char *>(t.data()) +
                             mb.firstRow * rowBytes);
    }
  }

  // Where the wanted outputs go.
  s.wanted = outputs;
  s.results.resize(outputs.size());
  s.scalarParts.resize(outputs.size());
  for (size_t w = 0; w < outputs.size(); ++w) {
    if (outputs[w] < 0 || outputs[w] >= plan.outputs_size())
      fail("output ", outputs[w], " is not one of the plan's ",
           plan.outputs_size());
    const plan::Value &value = plan.values(plan.outputs(outputs[w]));
    TensorType type = fromPlanType(value.type());
    if (!type.dims.empty()) {
      type.dims[0] = rows;
      for (int64_t d : type.dims)
        if (d < 0)
          fail("output '", value.name(),
               "' has a dynamic dimension besides the batch; the "
               "pipeline cannot join its micro-batches");
    } else if (type.dtype != DType::F32) {
      fail("output '", value.name(), "' is a 0-D ", dtypeName(type.dtype),
           "; the pipeline averages 0-D outputs, which must be f32");
    }
    if (s.processes && type.dtype != DType::F32)
      fail("output '", value.name(), "' is ", dtypeName(type.dtype),
           "; a job of several processes gathers f32 outputs only");
    if (s.results[w].empty() || s.results[w].dtype() != type.dtype ||
        s.results[w].shape() != type.dims)
      s.results[w].resize(type.dtype, type.dims);
    // Each process fills the rows of its micro-batches; the job sums them.
    if (s.processes)
      std::fill_n(s.results[w].as<float>(), s.results[w].numElements(), 0.0f);
    s.scalarParts[w].assign(count, 0.0);
  }

  ++stepCount;
  s.stepNumber = stepCount;
  int64_t stepStart = SpanTimer::clock();
  int localWorkers = 0;
  for (auto &stageWorkers : s.stages)
    for (auto &worker : stageWorkers) {
      if (!worker->local)
        continue;
      worker->program->context().step = stepCount;
      worker->program->beginStep();
      ++localWorkers;
    }
  {
    std::lock_guard<std::mutex> lock(s.start.mutex);
    s.running = localWorkers - 1;
    ++s.generation;
  }
  s.start.wake();
  // This thread is the first local worker, with that worker's thread count.
  int savedThreads = omp_get_max_threads();
  omp_set_num_threads(s.threadsPerWorker);
  s.runStepCatching(*s.driver);
  omp_set_num_threads(savedThreads);
  s.finished.waitUntil([&] { return s.running == 0; });
  if (s.aborted) {
    // The other processes wait for this one's messages or sums: the whole
    // job ends.
    if (s.processes)
      s.processes->abort(s.error);
    fail(s.error);
  }
  if (s.processes) {
    s.processes->flushSends();
    for (size_t w = 0; w < outputs.size(); ++w) {
      if (s.results[w].rank() == 0)
        s.processes->allReduceSum(s.scalarParts[w].data(), count);
      else
        s.processes->allReduceSum(s.results[w].as<float>(),
                                  s.results[w].numElements());
    }
    // Every push of the step is done when every process is here.
    if (outputs.empty())
      s.processes->barrier();
  }
  s.samples += rows;
  s.wallNanos += SpanTimer::clock() - stepStart;
  s.resultPointers.clear();
  for (size_t w = 0; w < outputs.size(); ++w) {
    if (s.results[w].rank() == 0) {
      double sum = 0;
      for (int64_t m = 0; m < count; ++m)
        sum += s.microBatches[m].weight * s.scalarParts[w][m];
      s.results[w].as<float>()[0] = static_cast<float>(sum);
    }
    s.resultPointers.push_back(&s.results[w]);
  }
  return s.resultPointers;
}
