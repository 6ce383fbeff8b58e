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
// This file builds the workers and drives the steps; a worker's step is in
// StageWorker.cpp, the messages in Channels.cpp, the reports in
// PipelineReport.cpp (PipelineState.h).
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Pipeline.h"

#include "PipelineState.h"

#include "heterps/Runtime/BagOffsets.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/MicroBatches.h"
#include "heterps/Runtime/OpInfo.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Runtime/Trace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <omp.h>
#include <sstream>
#include <thread>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;

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
      // The replicas of a stage in this process share its parameters: the
      // first writes the running statistics, the others their own copies.
      if (r > 0 && !processes && pipeline.sync == SyncMode::Sync)
        worker->program->keepWrittenParametersPrivate();
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
  impl->neededInputs.assign(plan.inputs_size(), false);
  for (auto &stageWorkers : impl->stages) {
    impl->barriers.push_back(std::make_unique<StageBarrier>());
    impl->programs.emplace_back();
    for (auto &worker : stageWorkers)
      if (worker->local) {
        impl->programs.back().push_back(worker->program.get());
        for (const StageSegment &segment : worker->program->segments())
          for (const ProgramPoint &input : segment.inputs)
            impl->neededInputs[input.position] = true;
      }
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
  for (int i = 0; i < plan.inputs_size(); ++i)
    if (!inputs[i] && s.neededInputs[i])
      fail("input '", plan.values(plan.inputs(i)).name(),
           "' is needed but not given");

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
