//===- Program.cpp - Executing a plan -------------------------------------===//

#include "heterps/Runtime/Program.h"

#include "heterps/Runtime/BagOffsets.h"
#include "heterps/Runtime/Devices.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/PlanTypes.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <omp.h>
#include <optional>
#include <set>
#include <sstream>

using namespace heterps;
using namespace heterps::runtime;

struct Program::Node {
  const plan::Op *op = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::vector<int> inputs, outputs;
  /// The column that runs the kernel: its outputs live in device memory
  /// when it is the GPU's.
  DeviceKind kind = DeviceKind::CPU;
  bool sideEffect = false;
  /// A copy between host and device memory that the Program inserted.
  bool transfer = false;
  /// Kernel seconds over the profiled training steps.
  double seconds = 0;
};

/// The tensors of one input signature: one per value, owning a buffer
/// unless a view kernel points it elsewhere.
struct Program::MemoryPlan {
  bool training = false;
  std::vector<int> outputs;
  /// The input shapes the plan was built for; a bag input's dimension 0 is
  /// the capacity its buffers were sized for (raggedCapacity).
  std::vector<Shape> inputShapes;
  /// The ops that read a bag input or a value computed from one, in order:
  /// prepared again, in buffers sized for the capacity, whenever the
  /// number of ids changes. A segment_reduce ends the chain (one row per
  /// example).
  std::vector<Node *> raggedNodes;
  /// The bag inputs' shapes the ragged ops were last prepared for.
  std::vector<Shape> raggedShapes;
  /// The ops to run, in order: first the `early` ones, which compute
  /// integer values from the inputs alone (the ids of lookups, such as an
  /// exported model's `sparse[:, i]`), then the rest.
  std::vector<Node *> active;
  size_t early = 0;
  std::vector<Tensor> values;
  /// The lookups whose ids are plan inputs or computed by early ops, with
  /// their tables: their rows are pulled together before the step.
  std::vector<std::pair<Node *, int>> prefetch;
  /// The inputs and early values of the step pulled ahead (PullAhead.h).
  std::vector<Tensor> aheadValues;
  /// The position in `active` of the op computing a training step's loss
  /// on the host, before any op that updates a parameter or pushes (-1:
  /// none; the step's loss is then not checked).
  int64_t lossAt = -1;
  int lossValue = -1;
};

static bool hasSideEffect(const std::string &name) {
  return name == "heterps.update_param" || name == "heterps.ps_push" ||
         name == "heterps.send";
}

StepExecutor::~StepExecutor() = default;

DeviceKind runtime::resolveStageDevice(const plan::Stage &stage,
                                       const ProgramOptions &options,
                                       std::optional<std::string> &gpuStatus) {
  if (stage.kind() != "gpu")
    return DeviceKind::CPU;
  if (!gpuStatus) {
    if (options.gpu || gpuRuntime()) {
      gpuStatus = "";
    } else {
      DeviceInventory inventory = queryDevices();
      gpuStatus = inventory.gpuStatus.empty()
                      ? "no GPU runs this build's kernels"
                      : inventory.gpuStatus;
    }
  }
  const KernelRegistry &registry =
      options.registry ? *options.registry : KernelRegistry::global();
  bool anyGpuKernel = !registry.opNames(DeviceKind::GPU).empty();
  if (gpuStatus->empty() && anyGpuKernel)
    return DeviceKind::GPU;
  if (!options.fallbackToCPU)
    fail("stage ", stage.index(), " is placed on GPU resource '",
         stage.resource(), "', but ",
         (gpuStatus->empty() ? std::string("this build has no CUDA kernels")
                             : "no GPU is usable here (" + *gpuStatus + ")"),
         "; run with --fallback=cpu to execute it on the CPU");
  return DeviceKind::CPU;
}

Program::Program(const plan::Plan &plan, ParamStore &params,
                 EmbeddingStore &tables, const ProgramOptions &options)
    : planRef(plan), profiling(options.profile) {
  context.params = &params;
  context.tables = &tables;
  batch = std::make_unique<TableBatch>();
  context.batch = batch.get();
  context.seed = options.seed;
  context.threads = options.threads;
  omp_set_num_threads(std::max(1, options.threads));

  bagOffsetsOf = bagOffsetsInputs(plan);
  aliasOf.resize(plan.values_size());
  for (int i = 0; i < plan.values_size(); ++i)
    aliasOf[i] = i;
  // In one process a channel is the sent value itself.
  std::map<int64_t, int> sent;
  for (const plan::Stage &stage : plan.stages())
    for (const plan::Op &op : stage.ops()) {
      auto channel = op.attrs().find("channel");
      if (op.name() != "heterps.send")
        continue;
      if (channel == op.attrs().end() || op.inputs_size() != 1)
        fail(op.name(), " at ", op.location(),
             " needs a channel and one value");
      sent[channel->second.i()] = op.inputs(0);
    }

  // One worker runs the stages as the pipeline would run one micro-batch:
  // each stage up to a channel that has not been sent yet, then the next
  // (a stage's backward part waits for the later stages' gradients). The
  // updates and pushes come last, once every op has read the parameters
  // and rows of this step.
  const KernelRegistry &registry =
      options.registry ? *options.registry : KernelRegistry::global();
  std::optional<std::string> gpuStatus;
  std::vector<DeviceKind> kinds;
  for (const plan::Stage &stage : plan.stages())
    kinds.push_back(resolveStageDevice(stage, options, gpuStatus));
  std::vector<std::pair<const plan::Op *, DeviceKind>> order, updates;
  std::vector<int> cursor(plan.stages_size(), 0);
  std::set<int64_t> sentSoFar;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < plan.stages_size(); ++s) {
      const plan::Stage &stage = plan.stages(s);
      for (; cursor[s] < stage.ops_size(); ++cursor[s], progress = true) {
        const plan::Op &op = stage.ops(cursor[s]);
        if (op.name() == "heterps.recv" || op.name() == "heterps.send") {
          auto channel = op.attrs().find("channel");
          if (channel == op.attrs().end() ||
              (op.name() == "heterps.recv" ? op.outputs_size()
                                           : op.inputs_size()) != 1)
            fail(op.name(), " at ", op.location(),
                 " needs a channel and one value");
          int64_t id = channel->second.i();
          if (op.name() == "heterps.send") {
            sentSoFar.insert(id);
            continue;
          }
          if (!sent.count(id))
            fail(op.name(), " at ", op.location(), " receives from channel ",
                 id, ", which no stage sends on");
          if (!sentSoFar.count(id))
            break;
          aliasOf[op.outputs(0)] = sent.at(id);
          continue;
        }
        bool update = op.name() == "heterps.update_param" ||
                      op.name() == "heterps.ps_push";
        (update ? updates : order).push_back({&op, kinds[s]});
      }
    }
  }
  for (int s = 0; s < plan.stages_size(); ++s)
    if (cursor[s] < plan.stages(s).ops_size())
      fail("stage ", s, " waits on ", plan.stages(s).ops(cursor[s]).location(),
           " for a channel that is sent only after it: the plan's "
           "stages wait on each other");
  order.insert(order.end(), updates.begin(), updates.end());
  for (auto [op, kind] : order) {
    auto node = std::make_unique<Node>();
    node->op = op;
    std::vector<TensorType> inTypes, outTypes;
    for (int id : op->inputs())
      inTypes.push_back(fromPlanType(plan.values(id).type()));
    for (int id : op->outputs())
      outTypes.push_back(fromPlanType(plan.values(id).type()));
    OpInfo info(*op, inTypes, outTypes);
    node->kernel = createKernelFor(registry, info, kind, options.fallbackToCPU,
                                   node->kind);
    node->sideEffect = hasSideEffect(op->name());
    nodes.push_back(std::move(node));
  }
  for (auto &node : nodes) {
    for (int id : node->op->inputs())
      node->inputs.push_back(resolve(id));
    for (int id : node->op->outputs())
      node->outputs.push_back(resolve(id));
  }
  valueCount = plan.values_size();
  loadParametersWhereTheyAreWritten(nodes, registry);
  for (const auto &node : nodes)
    if (node->kind == DeviceKind::GPU) {
      gpu = options.gpu ? options.gpu : gpuRuntime();
      if (!gpu)
        fail(node->kernel->op().describe(),
             " runs on the GPU column, but no GPU is usable here");
      gpu->setMath(options.gpuMath);
      context.gpu = gpu;
      placeValues();
      break;
    }
  if (options.pullAhead != PullAheadMode::Off && isTraining())
    ahead = std::make_unique<PullAhead>(tables, options.pullAhead);
}

Program::~Program() = default;

void Program::addOpTimes(OpTimes &times) const {
  for (const auto &node : nodes)
    times[node->op] += node->seconds;
}

TensorType Program::valueType(int id) const {
  while (id >= planRef.values_size())
    id = copySource[id - planRef.values_size()];
  return fromPlanType(planRef.values(id).type());
}

int Program::outputValue(int o) const {
  return outputValues.empty() ? resolve(planRef.outputs(o)) : outputValues[o];
}

void Program::placeValues() {
  // Every value lives where its producer ran; an op that reads one from
  // the other space reads a copy, made once before the first op that
  // needs it. Outputs of the step come back to the host.
  std::vector<MemorySpace> spaceOf(valueCount, MemorySpace::Host);
  std::map<std::pair<int, MemorySpace>, int> copies;
  std::vector<std::unique_ptr<Node>> placed;
  auto copyOf = [&](int id, MemorySpace to, const Node &user) {
    auto [it, fresh] = copies.try_emplace({id, to}, valueCount);
    if (!fresh)
      return it->second;
    auto node = std::make_unique<Node>();
    node->op = user.op;
    TensorType type = valueType(id);
    node->kernel =
        makeTransferKernel(OpInfo(*user.op, {type}, {type}), *gpu, to);
    node->kind = to == MemorySpace::Device ? DeviceKind::GPU : DeviceKind::CPU;
    node->transfer = true;
    node->inputs = {id};
    node->outputs = {valueCount};
    copySource.push_back(id);
    spaceOf.push_back(to);
    aliasOf.push_back(valueCount);
    placed.push_back(std::move(node));
    return valueCount++;
  };
  std::vector<const Node *> producer(valueCount, nullptr);
  for (auto &node : nodes) {
    MemorySpace want =
        node->kind == DeviceKind::GPU ? MemorySpace::Device : MemorySpace::Host;
    for (int &id : node->inputs)
      if (spaceOf[id] != want)
        id = copyOf(id, want, *node);
    for (int id : node->outputs) {
      spaceOf[id] = want;
      producer[id] = node.get();
    }
    placed.push_back(std::move(node));
  }
  outputValues.resize(planRef.outputs_size());
  for (int o = 0; o < planRef.outputs_size(); ++o) {
    int id = resolve(planRef.outputs(o));
    outputValues[o] = spaceOf[id] == MemorySpace::Device
                          ? copyOf(id, MemorySpace::Host, *producer[id])
                          : id;
  }
  nodes = std::move(placed);
}

int Program::resolve(int id) const {
  while (aliasOf[id] != id)
    id = aliasOf[id];
  return id;
}

int Program::inputIndex(const std::string &name) const {
  for (int i = 0; i < planRef.inputs_size(); ++i)
    if (planRef.values(planRef.inputs(i)).name() == name)
      return i;
  return -1;
}

int Program::outputIndex(const std::string &name) const {
  for (int i = 0; i < planRef.outputs_size(); ++i)
    if (planRef.values(planRef.outputs(i)).name() == name)
      return i;
  return -1;
}

TensorType Program::inputType(int i) const {
  return fromPlanType(planRef.values(planRef.inputs(i)).type());
}
TensorType Program::outputType(int i) const {
  return fromPlanType(planRef.values(planRef.outputs(i)).type());
}
void Program::checkBatchRows(const std::vector<const Tensor *> &inputs) const {
  int64_t rows = -1;
  std::string first;
  for (int i = 0; i < planRef.inputs_size() && i < int(inputs.size()); ++i) {
    TensorType type = inputType(i);
    const Tensor *t = inputs[i];
    if (!t || type.dims.empty() || type.dims[0] >= 0 || bagOffsetsOf[i] >= 0 ||
        t->rank() == 0)
      continue;
    if (rows >= 0 && t->dim(0) != rows)
      fail("input '", inputName(i), "' has ", t->dim(0), " rows, input '",
           first, "' ", rows,
           ": the inputs of a batch have one row per example");
    if (rows < 0) {
      rows = t->dim(0);
      first = inputName(i);
    }
  }
}

std::string Program::inputName(int i) const {
  return planRef.values(planRef.inputs(i)).name();
}
std::string Program::outputName(int i) const {
  return planRef.values(planRef.outputs(i)).name();
}
bool Program::isLabelInput(int i) const {
  for (int id : planRef.training().label_inputs())
    if (id == planRef.inputs(i))
      return true;
  return false;
}

Program::MemoryPlan &Program::planFor(const std::vector<const Tensor *> &inputs,
                                      bool training,
                                      const std::vector<int> &outputs) {
  // Found without building a key: looking up a plan must not allocate.
  auto matches = [&](const MemoryPlan &mp) {
    if (mp.training != training || mp.outputs != outputs)
      return false;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!plannedFor(mp.inputShapes[i], inputs[i], static_cast<int>(i)))
        return false;
    return true;
  };
  MemoryPlan *found = current && matches(*current) ? current : nullptr;
  for (size_t i = 0; !found && i < plans.size(); ++i)
    if (matches(*plans[i]))
      found = plans[i].get();
  if (found) {
    if (current != found) {
      // Kernels keep the state of the signature they last prepared.
      std::vector<Shape> shapes;
      for (Node *node : found->active) {
        shapes.clear();
        for (int id : node->inputs)
          shapes.push_back(found->values[id].shape());
        node->kernel->prepare(shapes);
      }
      current = found;
    }
    return *found;
  }
  auto mp = std::make_unique<MemoryPlan>();
  mp->training = training;
  mp->outputs = outputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    mp->inputShapes.push_back(inputs[i] ? inputs[i]->shape() : Shape{});
    if (inputs[i] && bagOffsetsOf[i] >= 0 && inputs[i]->rank() > 0)
      mp->inputShapes[i][0] = raggedCapacity(inputs[i]->dim(0));
  }
  // The ops to run: all for training, else those the outputs depend on.
  std::vector<bool> needed(valueCount, training);
  if (!training)
    for (int o : outputs)
      needed[outputValue(o)] = true;
  std::vector<Node *> order;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node *node = it->get();
    bool use = training;
    if (!training && !node->sideEffect)
      for (int id : node->outputs)
        use |= needed[id];
    if (!use)
      continue;
    order.push_back(node);
    for (int id : node->inputs)
      needed[id] = true;
  }
  mp->active.assign(order.rbegin(), order.rend());
  mp->values.resize(valueCount);
  std::vector<bool> defined(valueCount, false);
  for (int i = 0; i < planRef.inputs_size(); ++i) {
    int id = resolve(planRef.inputs(i));
    if (!needed[id])
      continue;
    if (!inputs[i])
      fail("input '", inputName(i), "' is needed but not given");
    TensorType type = inputType(i);
    const Tensor &t = *inputs[i];
    if (t.dtype() != type.dtype ||
        t.rank() != static_cast<int64_t>(type.dims.size()))
      fail("input '", inputName(i), "' is ", t.typeString(),
           ", the plan expects ",
           Tensor::view(type.dtype, type.dims, nullptr).typeString());
    for (size_t d = 0; d < type.dims.size(); ++d)
      if (type.dims[d] >= 0 && type.dims[d] != t.dim(d))
        fail("input '", inputName(i), "' has dimension ", d, " of size ",
             t.dim(d), ", the plan expects ", type.dims[d]);
    mp->values[id] = Tensor::view(t.dtype(), mp->inputShapes[i], nullptr);
    defined[id] = true;
  }
  // Early ops: no side effect, integer results, operands that are inputs
  // or early results. Moved to the front, they let the rows of lookups by
  // computed ids be pulled with the rest before the step.
  std::vector<bool> known = defined;
  std::vector<Node *> early, late;
  for (Node *node : mp->active) {
    bool isEarly = !node->sideEffect && !node->transfer &&
                   !node->outputs.empty() && !readsTableRows(*node->op);
    for (int id : node->inputs)
      isEarly = isEarly && known[id];
    for (int id : node->outputs)
      isEarly = isEarly && !isFloat(valueType(id).dtype);
    if (isEarly)
      for (int id : node->outputs)
        known[id] = true;
    (isEarly ? early : late).push_back(node);
  }
  mp->early = early.size();
  mp->active = early;
  mp->active.insert(mp->active.end(), late.begin(), late.end());
  for (Node *node : mp->active)
    if (readsTableRows(*node->op) && !node->inputs.empty() &&
        known[node->inputs[0]]) {
      auto table = node->op->attrs().find("table");
      if (table != node->op->attrs().end())
        mp->prefetch.push_back(
            {node, context.tables->tableId(table->second.s())});
    }
  // The host ends of copies between host and device are page-locked, so
  // that the copies are DMA transfers.
  std::vector<bool> staged(valueCount, false);
  for (Node *node : mp->active)
    if (node->transfer)
      staged[node->kind == DeviceKind::GPU ? node->inputs[0]
                                           : node->outputs[0]] = true;
  std::vector<Shape> shapes;
  for (Node *node : mp->active) {
    shapes.clear();
    for (int id : node->inputs) {
      if (!defined[id])
        fail(node->kernel->op().describe(), ": operand value ", id,
             " is not computed before it");
      shapes.push_back(mp->values[id].shape());
    }
    std::vector<Shape> outShapes = node->kernel->prepareChecked(shapes);
    for (size_t r = 0; r < node->outputs.size(); ++r) {
      int id = node->outputs[r];
      DType dtype = valueType(id).dtype;
      bool onDevice = node->kind == DeviceKind::GPU;
      if (node->kernel->outputsAreViews())
        mp->values[id] =
            Tensor::view(dtype, outShapes[r], nullptr,
                         onDevice ? MemorySpace::Device : MemorySpace::Host);
      else if (onDevice)
        mp->values[id] = gpu->allocate(dtype, outShapes[r]);
      else if (staged[id])
        mp->values[id] = gpu->allocateHost(dtype, outShapes[r]);
      else
        mp->values[id] = Tensor(dtype, outShapes[r]);
      defined[id] = true;
    }
  }
  std::vector<bool> ragged(valueCount, false);
  for (int i = 0; i < planRef.inputs_size(); ++i)
    if (bagOffsetsOf[i] >= 0)
      ragged[resolve(planRef.inputs(i))] = true;
  for (Node *node : mp->active) {
    bool reads = false;
    for (int id : node->inputs)
      reads = reads || ragged[id];
    if (!reads)
      continue;
    mp->raggedNodes.push_back(node);
    // A copy between host and device names the op it serves: a copy of a
    // segment_reduce's rows is as ragged as the rows.
    if (node->transfer || node->op->name() != "heterps.segment_reduce")
      for (int id : node->outputs)
        ragged[id] = true;
  }
  mp->raggedShapes.resize(inputs.size());
  findLoss(*mp);
  current = mp.get();
  plans.push_back(std::move(mp));
  return *current;
}

bool Program::plannedFor(const Shape &planned, const Tensor *input,
                         int position) const {
  if (!input)
    return planned.empty();
  const Shape &shape = input->shape();
  if (bagOffsetsOf[position] < 0 || shape.empty())
    return planned == shape;
  return planned.size() == shape.size() &&
         planned[0] == raggedCapacity(shape[0]) &&
         std::equal(shape.begin() + 1, shape.end(), planned.begin() + 1);
}

void Program::prepareRagged(MemoryPlan &mp,
                            const std::vector<const Tensor *> &inputs) {
  bool changed = false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (bagOffsetsOf[i] >= 0 && inputs[i] &&
        mp.raggedShapes[i] != inputs[i]->shape()) {
      mp.raggedShapes[i] = inputs[i]->shape();
      changed = true;
    }
  if (!changed)
    return;
  // The buffers keep the capacity's size; only the shapes follow the ids.
  std::vector<Shape> shapes;
  for (Node *node : mp.raggedNodes) {
    shapes.clear();
    for (int id : node->inputs)
      shapes.push_back(mp.values[id].shape());
    std::vector<Shape> outShapes = node->kernel->prepareChecked(shapes);
    for (size_t r = 0; r < node->outputs.size(); ++r) {
      Tensor &value = mp.values[node->outputs[r]];
      if (node->kernel->outputsAreViews())
        value.reset(value.dtype(), outShapes[r], nullptr);
      else
        value.resize(value.dtype(), outShapes[r]);
    }
  }
}

void Program::runNode(Node &node, std::vector<Tensor> &values, bool training) {
  std::vector<const Tensor *> &in = inScratch;
  std::vector<Tensor *> &out = outScratch;
  in.clear();
  out.clear();
  for (int id : node.inputs)
    in.push_back(&values[id]);
  for (int id : node.outputs)
    out.push_back(&values[id]);
  if (!(profiling || trace) || !training) {
    node.kernel->run(in, out, context);
    return;
  }
  auto start = std::chrono::steady_clock::now();
  node.kernel->run(in, out, context);
  auto end = std::chrono::steady_clock::now();
  if (profiling)
    node.seconds += std::chrono::duration<double>(end - start).count();
  if (trace) {
    TraceSpan span;
    span.op = node.op;
    span.step = context.step;
    trace->add(span, start, end);
  }
}

void Program::pullRows(MemoryPlan &mp) {
  if (ahead && ahead->pending()) {
    lookupScratch.clear();
    idsScratch.clear();
    for (auto [node, table] : mp.prefetch) {
      lookupScratch.push_back({node->op, table});
      idsScratch.push_back(&mp.values[node->inputs[0]]);
    }
    if (ahead->take(batch, lookupScratch, idsScratch)) {
      context.batch = batch.get();
      return;
    }
  }
  batch->clearPulls();
  for (auto [node, table] : mp.prefetch)
    batch->addPull(node->op, table, mp.values[node->inputs[0]]);
  batch->pull(*context.tables);
}

void Program::pullAhead(const std::vector<const Tensor *> &inputs) {
  if (!ahead)
    return;
  queued = inputs;
  haveQueued = true;
}

void Program::startPullAhead(MemoryPlan &mp) {
  // A batch of another shape (an epoch's last) pulls its rows when it runs.
  if (queued.size() != mp.inputShapes.size())
    return;
  for (size_t i = 0; i < queued.size(); ++i)
    if (queued[i] ? mp.inputShapes[i] != queued[i]->shape()
                  : !mp.inputShapes[i].empty())
      return;
  // Bag inputs change their shapes from step to step: their rows are
  // pulled when the step runs.
  if (mp.prefetch.empty() || !mp.raggedNodes.empty())
    return;
  // The next step's ids: its inputs, and the early ops run on them in
  // tensors of their own (the step's values are in use).
  std::vector<Tensor> &values = mp.aheadValues;
  if (values.empty()) {
    values.resize(mp.values.size());
    for (size_t i = 0; i < mp.early; ++i)
      for (int id : mp.active[i]->outputs)
        values[id] = mp.active[i]->kernel->outputsAreViews()
                         ? Tensor::view(mp.values[id].dtype(),
                                        mp.values[id].shape(), nullptr)
                         : Tensor(mp.values[id].dtype(), mp.values[id].shape());
  }
  for (size_t i = 0; i < queued.size(); ++i)
    if (queued[i]) {
      int id = resolve(planRef.inputs(static_cast<int>(i)));
      values[id].reset(queued[i]->dtype(), queued[i]->shape(),
                       queued[i]->data());
    }
  for (size_t i = 0; i < mp.early; ++i)
    runNode(*mp.active[i], values, false);
  lookupScratch.clear();
  idsScratch.clear();
  for (auto [node, table] : mp.prefetch) {
    lookupScratch.push_back({node->op, table});
    idsScratch.push_back(&values[node->inputs[0]]);
  }
  ahead->start(lookupScratch, idsScratch);
}

void Program::findLoss(MemoryPlan &mp) const {
  mp.lossAt = -1;
  if (!mp.training || !planRef.has_training())
    return;
  int loss = resolve(planRef.outputs(planRef.training().loss_output()));
  for (size_t i = 0; i < mp.active.size(); ++i) {
    const Node &node = *mp.active[i];
    if (node.sideEffect && !node.transfer && node.op->name() != "heterps.send")
      return; // an update before the loss: the step could not be undone
    if (std::find(node.outputs.begin(), node.outputs.end(), loss) ==
        node.outputs.end())
      continue;
    if (node.kind == DeviceKind::CPU && valueType(loss).dtype == DType::F32)
      mp.lossAt = static_cast<int64_t>(i);
    mp.lossValue = loss;
    return;
  }
}

void Program::checkLoss(MemoryPlan &mp) {
  const Tensor &value = mp.values[mp.lossValue];
  if (value.numElements() != 1 || std::isfinite(value.as<float>()[0]))
    return;
  // Nothing was updated yet: forget the step, so that the next one runs as
  // if this one had not been tried.
  float loss = value.as<float>()[0];
  --context.step;
  batch->dropPushes();
  batch->collectingPushes = false;
  fail("training step ", context.step + 1, ": the loss is ",
       std::isnan(loss) ? "NaN"
       : loss > 0       ? "inf"
                        : "-inf",
       "; nothing was updated (a NaN or infinite input, label or weight "
       "gives this)");
}

const std::vector<const Tensor *> &
Program::run(const std::vector<const Tensor *> &inputs, bool training,
             const std::vector<int> &outputs) {
  if (inputs.size() != static_cast<size_t>(planRef.inputs_size()))
    fail("the plan has ", planRef.inputs_size(), " inputs, ", inputs.size(),
         " were given");
  if (training && !isTraining())
    fail("the plan is not a training step; compile it with "
         "--heterps-autodiff");
  // A batch of no rows runs no kernel (oneDNN divides by the rows):
  // inference answers outputs of no rows, a training step is an error.
  for (int i = 0; i < planRef.inputs_size(); ++i) {
    // Read from the plan in place: a step must not allocate.
    const plan::TensorType &type = planRef.values(planRef.inputs(i)).type();
    if (!inputs[i] || bagOffsetsOf[i] >= 0 || type.dims_size() == 0 ||
        type.dims(0) >= 0 || inputs[i]->rank() == 0 || inputs[i]->dim(0) != 0)
      continue;
    if (training)
      fail("input '", inputName(i),
           "' has no rows; a training step needs at least one example");
    emptyResults.resize(outputs.size());
    results.clear();
    for (size_t k = 0; k < outputs.size(); ++k) {
      TensorType out =
          fromPlanType(planRef.values(planRef.outputs(outputs[k])).type());
      for (size_t d = 0; d < out.dims.size(); ++d)
        if (out.dims[d] < 0 && d > 0)
          fail("output '", outputName(outputs[k]),
               "' has a dynamic dimension besides the batch; an empty "
               "batch gives it no shape");
      if (!out.dims.empty())
        out.dims[0] = 0;
      emptyResults[k].resize(out.dtype, out.dims);
      results.push_back(&emptyResults[k]);
    }
    return results;
  }
  MemoryPlan &mp = planFor(inputs, training, outputs);
  for (int i = 0; i < planRef.inputs_size(); ++i) {
    int id = resolve(planRef.inputs(i));
    // The plan was found for these shapes: only the data moves (and the
    // number of a bag input's ids).
    if (inputs[i])
      mp.values[id].reset(inputs[i]->dtype(), inputs[i]->shape(),
                          inputs[i]->data());
  }
  if (!mp.raggedNodes.empty())
    prepareRagged(mp, inputs);
  context.training = training;
  if (training)
    ++context.step;
  for (size_t i = 0; i < mp.early; ++i)
    runNode(*mp.active[i], mp.values, training);
  pullRows(mp);
  if (training && haveQueued)
    startPullAhead(mp);
  haveQueued = false;
  batch->collectingPushes = training;
  for (size_t i = mp.early; i < mp.active.size(); ++i) {
    runNode(*mp.active[i], mp.values, training);
    if (training && static_cast<int64_t>(i) == mp.lossAt)
      checkLoss(mp);
  }
  if (training) {
    if (ahead)
      ahead->push(*batch);
    else
      batch->push(*context.tables);
  }
  batch->collectingPushes = false;
  // The host may reuse its buffers once the device has read them.
  if (gpu)
    gpu->synchronize();
  results.clear();
  for (int o : outputs)
    results.push_back(&mp.values[outputValue(o)]);
  return results;
}
