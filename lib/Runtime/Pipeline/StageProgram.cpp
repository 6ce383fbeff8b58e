//===- StageProgram.cpp - One replica of one stage ------------------------===//

#include "StageProgram.h"

#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/PlanTypes.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

using namespace heterps;
using namespace heterps::runtime;

namespace {
enum class Deferred { None, Update, Push };
} // namespace

struct StageProgram::Node {
  const plan::Op *op = nullptr;
  std::unique_ptr<Kernel> kernel;
  /// The column that runs the kernel: its results live in device memory
  /// when it is the GPU's.
  DeviceKind kind = DeviceKind::CPU;
  std::vector<int> inputs, outputs;
  std::vector<DType> outputTypes;
  Deferred deferred = Deferred::None;
  // The input shapes the kernel was last prepared for, and its outputs.
  bool prepared = false;
  std::vector<Shape> preparedShapes, outputShapes;
  // The step's accumulators: a summed gradient (updates; in device memory
  // for a GPU update, with a host copy for the collectives and the store),
  // or the keys and weighted rows of every push (pushes).
  bool accumulated = false;
  Tensor gradient, hostGradient;
  std::vector<int64_t> pushKeys;
  std::vector<float> pushRows;
  int64_t pushDim = 0;
  /// Kernel seconds over the profiled steps.
  double seconds = 0;
  /// A heterps.load_param of a parameter written in place: the index of
  /// the replica's own copy (keepWrittenParametersPrivate), or -1.
  int privateParameter = -1;
};

namespace {
/// Times its scope when profiling (adding to `seconds`) or tracing (adding
/// a span to the thread).
class KernelTimer {
public:
  KernelTimer(bool profiling, double &seconds, TraceThread *trace,
              const TraceSpan &span)
      : profiling(profiling), seconds(seconds), trace(trace), span(span) {
    if (profiling || trace)
      start = std::chrono::steady_clock::now();
  }
  ~KernelTimer() {
    if (!profiling && !trace)
      return;
    auto end = std::chrono::steady_clock::now();
    if (profiling)
      seconds += std::chrono::duration<double>(end - start).count();
    if (trace)
      trace->add(span, start, end);
  }

private:
  bool profiling;
  double &seconds;
  TraceThread *trace;
  TraceSpan span;
  std::chrono::steady_clock::time_point start;
};

TraceSpan opSpan(const plan::Op *op, int64_t step, int64_t microBatch) {
  TraceSpan span;
  span.kind = SpanKind::Op;
  span.op = op;
  span.step = step;
  span.microBatch = microBatch;
  return span;
}
} // namespace

StageProgram::StageProgram(const plan::Plan &plan, const plan::Stage &stage,
                           DeviceKind kind, const ExecContext &context,
                           const KernelRegistry &registry, DeviceRuntime *gpu,
                           bool fallbackToCPU)
    : planRef(plan), ctx(context), gpu(gpu) {
  ctx.gpu = gpu;
  std::map<int64_t, const plan::Channel *> channels;
  for (const plan::Channel &channel : plan.channels())
    channels[channel.id()] = &channel;
  auto channelOf = [&](const plan::Op &op) -> const plan::Channel & {
    auto attr = op.attrs().find("channel");
    if (attr == op.attrs().end())
      fail(op.name(), " at ", op.location(), " has no channel");
    auto it = channels.find(attr->second.i());
    if (it == channels.end())
      fail(op.name(), " at ", op.location(), " names channel ",
           attr->second.i(), ", which the plan does not declare");
    return *it->second;
  };
  // A channel inside the stage is the sent value itself.
  std::vector<int> aliasOf(plan.values_size());
  for (int i = 0; i < plan.values_size(); ++i)
    aliasOf[i] = i;
  std::map<int64_t, int> sentHere;
  for (const plan::Op &op : stage.ops())
    if (op.name() == "heterps.send" &&
        channelOf(op).to_stage() == stage.index())
      sentHere[channelOf(op).id()] = op.inputs(0);
  auto resolve = [&](int id) {
    while (aliasOf[id] != id)
      id = aliasOf[id];
    return id;
  };
  std::map<int, int> inputPosition, outputPosition;
  for (int i = 0; i < plan.inputs_size(); ++i)
    inputPosition[plan.inputs(i)] = i;

  segmentList.emplace_back();
  // Whether the current segment holds anything but gradients received from
  // later stages: the next such gradient then starts a new segment.
  bool segmentHasWork = false;
  std::set<int> boundInputs;
  for (const plan::Op &op : stage.ops()) {
    if (op.name() == "heterps.recv") {
      const plan::Channel &channel = channelOf(op);
      auto local = sentHere.find(channel.id());
      if (local != sentHere.end()) {
        aliasOf[op.outputs(0)] = local->second;
        continue;
      }
      // A gradient from a later stage: what follows waits for it.
      bool backward = channel.from_stage() > stage.index();
      if (backward && segmentHasWork) {
        size_t end = nodes.size();
        segmentList.emplace_back();
        segmentList.back().firstNode = segmentList.back().endNode = end;
        segmentHasWork = false;
      }
      segmentHasWork |= !backward;
      segmentList.back().recvs.push_back(
          {channel.id(), op.outputs(0),
           static_cast<int>(channel.from_stage())});
      continue;
    }
    if (op.name() == "heterps.send") {
      const plan::Channel &channel = channelOf(op);
      segmentHasWork = true;
      if (channel.to_stage() != stage.index())
        segmentList.back().sends.push_back(
            {channel.id(), resolve(op.inputs(0)),
             static_cast<int>(channel.to_stage())});
      continue;
    }
    auto node = std::make_unique<Node>();
    node->op = &op;
    std::vector<TensorType> inTypes, outTypes;
    for (int id : op.inputs()) {
      inTypes.push_back(fromPlanType(plan.values(id).type()));
      int value = resolve(id);
      node->inputs.push_back(value);
      auto position = inputPosition.find(value);
      if (position != inputPosition.end() && boundInputs.insert(value).second)
        segmentList.back().inputs.push_back({position->second, value});
    }
    for (int id : op.outputs()) {
      outTypes.push_back(fromPlanType(plan.values(id).type()));
      node->outputs.push_back(id);
      node->outputTypes.push_back(outTypes.back().dtype);
    }
    OpInfo info(op, inTypes, outTypes);
    node->kernel =
        createKernelFor(registry, info, kind, fallbackToCPU, node->kind);
    if (op.name() == "heterps.update_param")
      node->deferred = Deferred::Update;
    else if (op.name() == "heterps.ps_push")
      node->deferred = Deferred::Push;
    nodes.push_back(std::move(node));
    segmentList.back().endNode = nodes.size();
    segmentHasWork = true;
  }

  // The plan outputs this stage computes, in the segment that computes them.
  for (int o = 0; o < plan.outputs_size(); ++o) {
    int value = resolve(plan.outputs(o));
    for (StageSegment &segment : segmentList) {
      bool here = false;
      for (const ChannelPoint &recv : segment.recvs)
        here |= recv.value == value;
      for (size_t n = segment.firstNode; n < segment.endNode; ++n)
        for (int id : nodes[n]->outputs)
          here |= id == value;
      if (here)
        segment.outputs.push_back({o, value});
    }
  }

  values = plan.values_size();
  loadParametersWhereTheyAreWritten(nodes, registry);
  for (const auto &node : nodes)
    if (node->kind == DeviceKind::GPU) {
      if (!this->gpu)
        fail(node->kernel->op().describe(),
             " runs on the GPU column, but no GPU is usable here");
      placeValues();
      break;
    }
  staged.resize(values, false);

  // Lookups whose ids come from before their segment: prefetched.
  for (StageSegment &segment : segmentList) {
    std::set<int> produced;
    for (size_t n = segment.firstNode; n < segment.endNode; ++n) {
      const plan::Op &op = *nodes[n]->op;
      if (readsTableRows(op) && !nodes[n]->inputs.empty() &&
          !produced.count(nodes[n]->inputs[0]) && op.attrs().count("table"))
        segment.prefetch.push_back(n);
      for (int id : nodes[n]->outputs)
        produced.insert(id);
    }
  }
  tableIds.assign(nodes.size(), -1);
  ctx.batch = &batch;
}

void StageProgram::placeValues() {
  std::vector<MemorySpace> spaceOf(values, MemorySpace::Host);
  std::map<std::pair<int, MemorySpace>, int> copies;
  std::vector<std::unique_ptr<Node>> placed;
  // Whether a value is there when the current segment starts.
  std::vector<bool> before(values, true);
  // A copy of `id` into memory `to`, made by a node before `user`, or with
  // no `user` by the segment's copies out, after its kernels; a copy to the
  // device of a value there from the segment's start is one of its copies
  // in, before its kernels.
  auto copyOf = [&](int id, MemorySpace to, const plan::Op *user,
                    StageSegment &segment) {
    auto [it, fresh] = copies.try_emplace({id, to}, static_cast<int>(values));
    if (!fresh)
      return it->second;
    // Copies are made of plan values only: ops, sends and outputs read
    // those.
    TensorType type = fromPlanType(planRef.values(id).type());
    staged.resize(values + 1, false);
    staged[to == MemorySpace::Device ? id : values] = true;
    spaceOf.push_back(to);
    before.push_back(to == MemorySpace::Device && before[id]);
    if (!user) {
      segment.copiesOut.push_back({id, static_cast<int>(values)});
      return static_cast<int>(values++);
    }
    if (before.back()) {
      segment.copiesIn.push_back({id, static_cast<int>(values)});
      return static_cast<int>(values++);
    }
    auto node = std::make_unique<Node>();
    node->op = user;
    node->kernel = makeTransferKernel(OpInfo(*user, {type}, {type}), *gpu, to);
    node->kind = to == MemorySpace::Device ? DeviceKind::GPU : DeviceKind::CPU;
    node->inputs = {id};
    node->outputs = {static_cast<int>(values)};
    node->outputTypes = {type.dtype};
    placed.push_back(std::move(node));
    return static_cast<int>(values++);
  };
  for (StageSegment &segment : segmentList) {
    size_t first = placed.size();
    for (size_t n = segment.firstNode; n < segment.endNode; ++n)
      for (int id : nodes[n]->outputs)
        before[id] = false;
    for (size_t n = segment.firstNode; n < segment.endNode; ++n) {
      std::unique_ptr<Node> &node = nodes[n];
      MemorySpace want = node->kind == DeviceKind::GPU ? MemorySpace::Device
                                                       : MemorySpace::Host;
      for (int &id : node->inputs)
        if (spaceOf[id] != want)
          id = copyOf(id, want, node->op, segment);
      for (int id : node->outputs)
        spaceOf[id] = want;
      placed.push_back(std::move(node));
    }
    // What leaves the segment leaves from host memory.
    for (ChannelPoint &send : segment.sends)
      if (spaceOf[send.value] == MemorySpace::Device)
        send.value = copyOf(send.value, MemorySpace::Host, nullptr, segment);
    for (ProgramPoint &output : segment.outputs)
      if (spaceOf[output.value] == MemorySpace::Device)
        output.value =
            copyOf(output.value, MemorySpace::Host, nullptr, segment);
    segment.firstNode = first;
    segment.endNode = placed.size();
    // What the segment computed is there when later ones start.
    before.assign(before.size(), true);
  }
  nodes = std::move(placed);
}

StageProgram::~StageProgram() = default;

int runtime::countStageSegments(const plan::Plan &plan,
                                const plan::Stage &stage) {
  std::map<int64_t, const plan::Channel *> channels;
  for (const plan::Channel &channel : plan.channels())
    channels[channel.id()] = &channel;
  int segments = 1;
  bool segmentHasWork = false;
  for (const plan::Op &op : stage.ops()) {
    if (op.name() != "heterps.recv") {
      segmentHasWork = true;
      continue;
    }
    auto attr = op.attrs().find("channel");
    auto it = attr == op.attrs().end() ? channels.end()
                                       : channels.find(attr->second.i());
    if (it == channels.end() ||
        it->second->to_stage() == it->second->from_stage())
      continue;
    bool backward = it->second->from_stage() > stage.index();
    if (backward && segmentHasWork) {
      ++segments;
      segmentHasWork = false;
    }
    segmentHasWork |= !backward;
  }
  return segments;
}

void StageProgram::run(int segment, Slot &slot, double weight) {
  const StageSegment &seg = segmentList[segment];
  finishCopies(slot);
  if (slot.values.size() != values)
    slot.values.resize(values);
  float w = static_cast<float>(weight);
  if (!seg.copiesIn.empty())
    startCopiesIn(seg, slot);
  batch.clearPulls();
  for (size_t n : seg.prefetch) {
    const Tensor &ids = slot.values[nodes[n]->inputs[0]];
    if (ids.dtype() == DType::Invalid)
      fail(nodes[n]->kernel->op().describe(), ": operand value ",
           nodes[n]->inputs[0], " is not computed before it");
    if (tableIds[n] < 0)
      tableIds[n] = ctx.tables->tableId(nodes[n]->op->attrs().at("table").s());
    batch.addPull(nodes[n]->op, tableIds[n], ids);
  }
  batch.pull(*ctx.tables);
  bool ranOnGpu = false;
  for (size_t n = seg.firstNode; n < seg.endNode; ++n) {
    Node &node = *nodes[n];
    in.clear();
    bool same = node.prepared;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Tensor &t = slot.values[node.inputs[i]];
      if (t.dtype() == DType::Invalid)
        fail(node.kernel->op().describe(), ": operand value ", node.inputs[i],
             " is not computed before it");
      same = same && t.shape() == node.preparedShapes[i];
      in.push_back(&t);
    }
    if (!same) {
      shapes.clear();
      for (const Tensor *t : in)
        shapes.push_back(t->shape());
      node.outputShapes = node.kernel->prepareChecked(shapes);
      node.preparedShapes = shapes;
      node.prepared = true;
    }
    if (node.privateParameter >= 0) {
      const Tensor &own = privateParameters[node.privateParameter].value;
      slot.values[node.outputs[0]] =
          Tensor::view(own.dtype(), own.shape(), own.data(), own.space());
      continue;
    }
    if (node.deferred == Deferred::Update) {
      accumulate(node, *in[0], w);
      ranOnGpu |= node.kind == DeviceKind::GPU;
      continue;
    }
    if (node.deferred == Deferred::Push) {
      const Tensor &keys = *in[0], &rows = *in[1];
      int64_t k = keys.numElements();
      node.pushDim = rows.rank() == 2 ? rows.dim(1) : 0;
      for (int64_t i = 0; i < k; ++i)
        node.pushKeys.push_back(keys.dtype() == DType::I32
                                    ? keys.as<int32_t>()[i]
                                    : keys.as<int64_t>()[i]);
      for (int64_t i = 0, e = rows.numElements(); i < e; ++i)
        node.pushRows.push_back(w * rows.as<float>()[i]);
      node.accumulated = true;
      continue;
    }
    KernelTimer timer(profiling, node.seconds, trace,
                      opSpan(node.op, traceStep, traceMicroBatch));
    out.clear();
    for (size_t r = 0; r < node.outputs.size(); ++r)
      out.push_back(&resultSlot(node, r, slot));
    node.kernel->run(in, out, ctx);
    ranOnGpu |= node.kind == DeviceKind::GPU;
  }
  // What the segment sends or outputs leaves the device once its kernels
  // are done; the fence also tells when the device has read the inputs and
  // received values the segment copied to it (the slot holds them).
  if (!ranOnGpu && seg.copiesIn.empty() && seg.copiesOut.empty())
    return;
  copies.clear();
  for (auto [from, to] : seg.copiesOut) {
    const Tensor &device = slot.values[from];
    copies.push_back(
        {&device, &hostResult(slot, to, device.dtype(), device.shape())});
  }
  if (!slot.copiesDone)
    slot.copiesDone = gpu->createFence();
  gpu->startCopiesToHost(copies, *slot.copiesDone);
  slot.copying = true;
}

void StageProgram::startCopiesIn(const StageSegment &seg, Slot &slot) {
  copies.clear();
  bool allocated = false;
  for (auto [from, to] : seg.copiesIn) {
    const Tensor &host = slot.values[from];
    if (host.dtype() == DType::Invalid)
      fail("value ", from, " ('", planRef.values(from).name(),
           "') is read on the GPU before it is computed");
    copies.push_back({&host, &deviceResult(slot, to, host.dtype(), host.shape(),
                                           allocated)});
  }
  // A fresh device buffer is cleared by work on the stream that the
  // uploads do not follow.
  if (allocated)
    gpu->synchronize();
  gpu->startCopiesToDevice(copies);
}

bool StageProgram::copiesReached(Slot &slot) {
  if (slot.copying && slot.copiesDone->reached())
    slot.copying = false;
  return !slot.copying;
}

void StageProgram::finishCopies(Slot &slot) {
  if (!slot.copying)
    return;
  slot.copiesDone->wait();
  slot.copying = false;
}

Tensor &StageProgram::hostResult(Slot &slot, int id, DType dtype,
                                 const Shape &shape) {
  Tensor &t = slot.values[id];
  if (t.space() != MemorySpace::Host)
    t = Tensor();
  if (!t.empty() && t.dtype() == dtype && t.shape() == shape)
    return t;
  // The host end of a copy to or from the device is page-locked.
  size_t bytes = numElements(shape) * dtypeSize(dtype);
  if (staged[id] && (t.empty() || bytes > t.capacityBytes()))
    t = gpu->allocateHost(dtype, shape);
  else
    t.resize(dtype, shape);
  return t;
}

Tensor &StageProgram::resultSlot(Node &node, size_t r, Slot &slot) {
  Tensor &t = slot.values[node.outputs[r]];
  DType dtype = node.outputTypes[r];
  const Shape &shape = node.outputShapes[r];
  MemorySpace space =
      node.kind == DeviceKind::GPU ? MemorySpace::Device : MemorySpace::Host;
  if (node.kernel->outputsAreViews()) {
    if (t.space() == space)
      t.reset(dtype, shape, nullptr);
    else
      t = Tensor::view(dtype, shape, nullptr, space);
    return t;
  }
  if (space == MemorySpace::Host)
    return hostResult(slot, node.outputs[r], dtype, shape);
  bool allocated = false;
  return deviceResult(slot, node.outputs[r], dtype, shape, allocated);
}

Tensor &StageProgram::deviceResult(Slot &slot, int id, DType dtype,
                                   const Shape &shape, bool &allocated) {
  Tensor &t = slot.values[id];
  // A device buffer is reused while the result fits in it (a last, smaller
  // micro-batch does), so that steady-state steps allocate nothing.
  size_t bytes = numElements(shape) * dtypeSize(dtype);
  if (t.space() == MemorySpace::Device && !t.empty() &&
      bytes <= t.capacityBytes()) {
    t.resize(dtype, shape);
    return t;
  }
  t = gpu->allocate(dtype, shape);
  allocated = true;
  return t;
}

void StageProgram::beginStep() {
  refreshPrivateParameters();
  for (auto &node : nodes) {
    node->accumulated = false;
    node->pushKeys.clear();
    node->pushRows.clear();
  }
}

void StageProgram::flushPushes() {
  batch.push(*ctx.tables);
  batch.collectingPushes = false;
}

void StageProgram::applyStep(const std::vector<StageProgram *> &replicas,
                             int share, int shares) {
  batch.collectingPushes = true;
  int deferred = 0;
  for (size_t n = 0; n < nodes.size(); ++n) {
    Node &node = *nodes[n];
    if (node.deferred == Deferred::None || deferred++ % shares != share)
      continue;
    for (StageProgram *replica : replicas) {
      Node &other = *replica->nodes[n];
      if (replica == this || !other.accumulated)
        continue;
      if (node.deferred == Deferred::Push) {
        node.pushKeys.insert(node.pushKeys.end(), other.pushKeys.begin(),
                             other.pushKeys.end());
        node.pushRows.insert(node.pushRows.end(), other.pushRows.begin(),
                             other.pushRows.end());
        node.pushDim = other.pushDim;
      } else {
        // The other replica's gradient is complete: its segments waited
        // for the device before it reached the barrier.
        accumulate(node, other.gradient, 1.0f);
      }
      node.accumulated = true;
    }
    if (node.accumulated)
      applyNode(node);
  }
  flushPushes();
  waitForDeviceUpdates();
}

void StageProgram::accumulate(Node &node, const Tensor &g, float weight) {
  if (node.kind == DeviceKind::GPU) {
    if (node.gradient.space() != MemorySpace::Device ||
        node.gradient.shape() != g.shape())
      node.gradient = gpu->allocate(DType::F32, g.shape());
    gpu->scaleAdd(weight, g, node.accumulated ? 1.0f : 0.0f, node.gradient);
  } else {
    if (!node.accumulated)
      node.gradient.resize(DType::F32, g.shape());
    float *dst = node.gradient.as<float>();
    const float *src = g.as<float>();
    int64_t n = g.numElements();
    if (node.accumulated)
      for (int64_t i = 0; i < n; ++i)
        dst[i] += weight * src[i];
    else
      for (int64_t i = 0; i < n; ++i)
        dst[i] = weight * src[i];
  }
  node.accumulated = true;
}

Tensor &StageProgram::hostGradient(Node &node) {
  if (node.kind != DeviceKind::GPU)
    return node.gradient;
  if (node.hostGradient.shape() != node.gradient.shape())
    node.hostGradient = Tensor(DType::F32, node.gradient.shape());
  gpu->copyToHost(node.gradient, node.hostGradient);
  return node.hostGradient;
}

void StageProgram::waitForDeviceUpdates() {
  // The other workers' streams read the parameters this one updated.
  for (const auto &node : nodes)
    if (node->deferred == Deferred::Update && node->kind == DeviceKind::GPU) {
      gpu->synchronize();
      return;
    }
}

void StageProgram::applyNode(Node &node) {
  in.clear();
  Tensor keys, rows;
  if (node.deferred == Deferred::Update) {
    in.push_back(&node.gradient);
  } else {
    int64_t k = static_cast<int64_t>(node.pushKeys.size());
    if (k == 0)
      return;
    keys = Tensor::view(DType::I64, {k}, node.pushKeys.data());
    rows = Tensor::view(DType::F32, {k, node.pushDim}, node.pushRows.data());
    in.push_back(&keys);
    in.push_back(&rows);
    shapes.clear();
    shapes.push_back(keys.shape());
    shapes.push_back(rows.shape());
    node.kernel->prepareChecked(shapes);
    node.prepared = false;
  }
  out.clear();
  KernelTimer timer(profiling, node.seconds, trace,
                    opSpan(node.op, traceStep, -1));
  node.kernel->run(in, out, ctx);
}

namespace {
/// A push's keys and rows as one message: [count][dim][keys][rows].
std::vector<char> packPush(const std::vector<int64_t> &keys,
                           const std::vector<float> &rows, int64_t dim) {
  int64_t header[2] = {static_cast<int64_t>(keys.size()), dim};
  std::vector<char> message(sizeof(header) + keys.size() * sizeof(int64_t) +
                            rows.size() * sizeof(float));
  char *p = message.data();
  std::memcpy(p, header, sizeof(header));
  p += sizeof(header);
  std::memcpy(p, keys.data(), keys.size() * sizeof(int64_t));
  p += keys.size() * sizeof(int64_t);
  std::memcpy(p, rows.data(), rows.size() * sizeof(float));
  return message;
}
} // namespace

void StageProgram::applyStep(Communicator &replicas) {
  batch.collectingPushes = true;
  int pushes = 0;
  for (auto &nodePointer : nodes) {
    Node &node = *nodePointer;
    if (node.deferred == Deferred::Update) {
      // A replica without micro-batches this step adds zeros.
      Tensor *sum = &node.gradient;
      if (!node.accumulated) {
        TensorType type =
            fromPlanType(planRef.values(node.op->inputs(0)).type());
        sum = node.kind == DeviceKind::GPU ? &node.hostGradient : sum;
        sum->resize(DType::F32, type.dims);
        std::fill_n(sum->as<float>(), sum->numElements(), 0.0f);
      } else {
        sum = &hostGradient(node);
      }
      replicas.allReduceSum(sum->as<float>(), sum->numElements());
      if (node.kind == DeviceKind::GPU) {
        if (node.gradient.space() != MemorySpace::Device ||
            node.gradient.shape() != sum->shape())
          node.gradient = gpu->allocate(DType::F32, sum->shape());
        gpu->copyToDevice(*sum, node.gradient);
      }
      applyNode(node);
      continue;
    }
    if (node.deferred != Deferred::Push)
      continue;
    std::vector<std::vector<char>> all;
    replicas.allGather(packPush(node.pushKeys, node.pushRows, node.pushDim),
                       all);
    if (pushes++ % replicas.size() != replicas.rank())
      continue;
    node.pushKeys.clear();
    node.pushRows.clear();
    for (size_t r = 0; r < all.size(); ++r) {
      const std::vector<char> &m = all[r];
      int64_t header[2];
      if (m.size() < sizeof(header))
        fail(node.kernel->op().describe(), ": the push of replica ", r, " is ",
             m.size(), " bytes, shorter than its header");
      std::memcpy(header, m.data(), sizeof(header));
      int64_t count = header[0], dim = header[1];
      if (count < 0 || dim < 0 ||
          m.size() !=
              sizeof(header) + static_cast<size_t>(count) *
                                   (sizeof(int64_t) +
                                    static_cast<size_t>(dim) * sizeof(float)))
        fail(node.kernel->op().describe(), ": the push of replica ", r, " is ",
             m.size(), " bytes, not ", count, " keys of rows of ", dim);
      if (count == 0)
        continue;
      if (node.pushDim && dim != node.pushDim && !node.pushKeys.empty())
        fail(node.kernel->op().describe(), ": replica ", r, " pushes rows of ",
             dim, ", another of ", node.pushDim);
      node.pushDim = dim;
      const char *p = m.data() + sizeof(header);
      size_t keysAt = node.pushKeys.size(), rowsAt = node.pushRows.size();
      node.pushKeys.resize(keysAt + count);
      node.pushRows.resize(rowsAt + count * dim);
      std::memcpy(node.pushKeys.data() + keysAt, p, count * sizeof(int64_t));
      std::memcpy(node.pushRows.data() + rowsAt, p + count * sizeof(int64_t),
                  count * dim * sizeof(float));
    }
    applyNode(node);
  }
  flushPushes();
  waitForDeviceUpdates();
}

void StageProgram::pushStepGradients(bool applyLocally) {
  batch.collectingPushes = true;
  for (auto &nodePointer : nodes) {
    Node &node = *nodePointer;
    if (!node.accumulated)
      continue;
    if (node.deferred == Deferred::Update) {
      {
        KernelTimer timer(profiling, node.seconds, trace,
                          opSpan(node.op, traceStep, -1));
        ctx.tables->pushDense(node.op->attrs().at("name").s(),
                              hostGradient(node));
      }
      if (applyLocally)
        applyNode(node);
    } else if (node.deferred == Deferred::Push) {
      applyNode(node);
    }
  }
  flushPushes();
  waitForDeviceUpdates();
}

std::vector<std::string> StageProgram::updatedParameters() const {
  std::vector<std::string> names;
  for (const auto &node : nodes)
    if (node->deferred == Deferred::Update)
      names.push_back(node->op->attrs().at("name").s());
  return names;
}

void StageProgram::pullParameters() {
  for (const std::string &name : updatedParameters())
    ctx.tables->pullDense(name, ctx.params->get(name).value);
}

void StageProgram::keepWrittenParametersPrivate() {
  for (auto &load : nodes) {
    if (load->op->name() != "heterps.load_param" || load->privateParameter >= 0)
      continue;
    bool written = false;
    for (const auto &reader : nodes)
      for (size_t i = 0; i < reader->inputs.size(); ++i)
        written |= reader->inputs[i] == load->outputs[0] &&
                   writesOperandInPlace(reader->op->name(), i);
    if (!written)
      continue;
    load->privateParameter = static_cast<int>(privateParameters.size());
    privateParameters.push_back({load->kernel->op().getString("name"),
                                 load->kind == DeviceKind::GPU, Tensor()});
  }
}

void StageProgram::refreshPrivateParameters() {
  bool onDevice = false;
  for (PrivateParameter &own : privateParameters) {
    if (!own.onDevice) {
      const Tensor &shared = ctx.params->get(own.name).value;
      if (own.value.shape() != shared.shape())
        own.value = shared.clone();
      else
        std::memcpy(own.value.data(), shared.data(), shared.byteSize());
      continue;
    }
    const Tensor &shared = ctx.params->onDevice(own.name, *gpu).deviceValue;
    if (own.value.shape() != shared.shape())
      own.value = gpu->allocate(DType::F32, shared.shape());
    gpu->scaleAdd(1.0f, shared, 0.0f, own.value);
    onDevice = true;
  }
  if (onDevice)
    gpu->synchronize();
}

void StageProgram::addOpTimes(std::map<const plan::Op *, double> &times) const {
  for (const auto &node : nodes)
    times[node->op] += node->seconds;
}
