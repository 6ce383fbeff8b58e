//===- PipelineReport.cpp - Where the pipeline's time went ----------------===//
//
// The times of the ops, per stage the share of busy, waiting, sending and
// updating time over all steps, and the mapping of stages onto workers,
// for --profile, the summary printed after training and --trace.
//
//===----------------------------------------------------------------------===//

#include "PipelineState.h"

#include "heterps/Runtime/Error.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;

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
