//===- StageWorker.cpp - One worker's step in the pipeline ----------------===//
//
// A worker runs the segments of its micro-batches as their channels
// deliver: backward segments first under 1F1B, forward ones first under
// GPipe, each segment's micro-batches in order. A GPU stage's segment
// returns once queued, and its sends are handed on after the next one is
// queued (docs/GPU.md). When the step's segments are done, the worker
// applies its share of the stage's updates.
//
//===----------------------------------------------------------------------===//

#include "PipelineState.h"

#include "heterps/Runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <omp.h>
#include <sstream>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;

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
        float part = value.as<float>()[0];
        // A NaN or infinite loss would make every update of the step NaN:
        // the step stops here, before any stage has applied one (each
        // applies its updates once it has all its micro-batches'
        // gradients, and this one's have not been sent).
        if (!std::isfinite(part) && plan.has_training() &&
            point.position == plan.training().loss_output())
          fail("training step ", stepNumber, ", micro-batch ", microBatch,
               ": the loss is ",
               std::isnan(part) ? "NaN"
               : part > 0       ? "inf"
                                : "-inf",
               "; the step stopped before any update (a NaN or infinite "
               "input, label or weight gives this)");
        scalarParts[w][microBatch] = part;
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
  // A micro-batch whose last segment is held back so does not count
  // against the 1F1B bound: its slot is the one extra that lets the last
  // stage queue a micro-batch while the one before leaves the device.
  std::vector<std::pair<size_t, int>> &copying = worker.copying;
  copying.clear();
  int64_t leaving = 0;
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
      --leaving;
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
              (worker.inFlightLimit == 0 ||
               inFlight - leaving < worker.inFlightLimit) &&
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
    leaving += segment + 1 == numSegments;
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
