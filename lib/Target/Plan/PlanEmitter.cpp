//===- PlanEmitter.cpp - HeterPS IR to the plan file ----------------------===//
//
// The plan is a flat program: every SSA value of the function gets an id,
// the block arguments of heterps.pipeline and heterps.stage alias the values
// they bind, and stage results alias what the stage yields, so the runtime
// sees one value per tensor and the stages as lists of ops. Attributes are
// written generically (integers, floats, strings, arrays, tensors; enums and
// symbol references as their names) so that a new op needs a kernel, not a
// change here.
//
//===----------------------------------------------------------------------===//

#include "heterps/Target/Plan/PlanEmitter.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSModelFunction.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Plan/PlanFile.h"
#include "heterps/Version.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
using namespace mlir::heterps;
namespace pb = ::heterps::plan;

namespace {

/// The name of a kind an op carries, as the runtime reads it.
std::optional<StringRef> enumName(Attribute attr) {
  return TypeSwitch<Attribute, std::optional<StringRef>>(attr)
      .Case<CombinerAttr, LossReductionAttr, OptimizerKindAttr, UnaryKindAttr,
            LossKindAttr, PoolKindAttr, ReduceKindAttr, CompareKindAttr,
            LogicKindAttr, ExtremeKindAttr>(
          [](auto kind) { return stringifyEnum(kind.getValue()); })
      .Default([](Attribute) { return std::nullopt; });
}

std::optional<pb::DataType> toDataType(Type type) {
  if (type.isF32())
    return pb::F32;
  if (type.isF64())
    return pb::F64;
  if (type.isF16())
    return pb::F16;
  if (type.isBF16())
    return pb::BF16;
  auto i = dyn_cast<IntegerType>(type);
  if (!i)
    return std::nullopt;
  bool u = i.isUnsigned();
  switch (i.getWidth()) {
  case 1:
    return pb::BOOL;
  case 8:
    return u ? pb::U8 : pb::I8;
  case 16:
    return u ? pb::U16 : pb::I16;
  case 32:
    return u ? pb::U32 : pb::I32;
  case 64:
    return u ? pb::U64 : pb::I64;
  default:
    return std::nullopt;
  }
}

std::string locationString(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

class PlanEmitter {
public:
  PlanEmitter(pb::Plan &plan, StringRef passName)
      : plan(plan), passName(passName) {}

  LogicalResult tensorType(Location loc, Type type, pb::TensorType &out) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    std::optional<pb::DataType> dtype =
        ranked ? toDataType(ranked.getElementType()) : std::nullopt;
    if (!dtype)
      return emitError(loc) << passName << ": the plan cannot hold " << type;
    out.set_dtype(*dtype);
    for (int64_t d : ranked.getShape())
      out.add_dims(ShapedType::isDynamic(d) ? -1 : d);
    return success();
  }

  LogicalResult tensorData(Location loc, ElementsAttr attr,
                           pb::TensorData &out) {
    if (failed(tensorType(loc, attr.getType(), *out.mutable_type())))
      return failure();
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
      // A resource (a large table read from external data) is written as
      // its bytes: little-endian and packed, as the plan's raw data.
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      if (!blob)
        return emitError(loc) << passName << ": the data of resource '"
                              << resource.getRawHandle().getKey()
                              << "' is not available (elided)";
      ArrayRef<char> data = blob->getData();
      std::optional<uint64_t> bits =
          resource.getElementType().isIntOrFloat()
              ? std::optional<uint64_t>(
                    resource.getElementType().getIntOrFloatBitWidth())
              : std::nullopt;
      if (!bits || *bits % 8 ||
          data.size() != resource.getNumElements() * (*bits / 8))
        return emitError(loc)
               << passName << ": resource '" << resource.getRawHandle().getKey()
               << "' holds " << data.size() << " bytes for "
               << resource.getType();
      out.mutable_raw()->assign(data.begin(), data.end());
      return success();
    }
    auto dense = dyn_cast<DenseElementsAttr>(attr);
    if (!dense)
      return emitError(loc)
             << passName << ": only dense tensor values can be written";
    Type element = dense.getElementType();
    std::string &raw = *out.mutable_raw();
    int64_t n = dense.getNumElements();
    // Dense storage is little-endian and packed except for i1 (bits) and
    // splats (one element), which are expanded here.
    if (element.isInteger(1)) {
      for (bool v : dense.getValues<bool>())
        raw.push_back(v ? 1 : 0);
      return success();
    }
    ArrayRef<char> data = dense.getRawData();
    if (!dense.isSplat()) {
      raw.assign(data.begin(), data.end());
      return success();
    }
    raw.reserve(data.size() * n);
    for (int64_t i = 0; i < n; ++i)
      raw.append(data.begin(), data.end());
    return success();
  }

  LogicalResult attribute(Location loc, Attribute attr, pb::Attribute &out) {
    if (auto b = dyn_cast<BoolAttr>(attr)) {
      out.set_b(b.getValue());
    } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
      out.set_i(i.getValue().getSExtValue());
    } else if (auto f = dyn_cast<FloatAttr>(attr)) {
      out.set_f(f.getValueAsDouble());
    } else if (auto s = dyn_cast<StringAttr>(attr)) {
      out.set_s(s.str());
    } else if (auto sym = dyn_cast<FlatSymbolRefAttr>(attr)) {
      out.set_s(sym.getValue().str());
    } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr)) {
      auto *list = out.mutable_ints();
      for (int64_t v : ints.asArrayRef())
        list->add_values(v);
    } else if (auto ints32 = dyn_cast<DenseI32ArrayAttr>(attr)) {
      auto *list = out.mutable_ints();
      for (int32_t v : ints32.asArrayRef())
        list->add_values(v);
    } else if (auto floats = dyn_cast<DenseF64ArrayAttr>(attr)) {
      auto *list = out.mutable_floats();
      for (double v : floats.asArrayRef())
        list->add_values(v);
    } else if (auto elements = dyn_cast<ElementsAttr>(attr)) {
      return tensorData(loc, elements, *out.mutable_tensor());
    } else if (std::optional<StringRef> name = enumName(attr)) {
      out.set_s(name->str());
    } else if (auto array = dyn_cast<ArrayAttr>(attr)) {
      auto *list = out.mutable_ints();
      for (Attribute e : array) {
        auto i = dyn_cast<IntegerAttr>(e);
        if (!i)
          return emitError(loc) << passName << ": cannot write attribute "
                                << attr << " (arrays of integers only)";
        list->add_values(i.getValue().getSExtValue());
      }
    } else {
      return emitError(loc) << passName << ": cannot write attribute " << attr;
    }
    return success();
  }

  FailureOr<int> valueId(Value v) {
    auto it = ids.find(v);
    if (it != ids.end())
      return it->second;
    int id = plan.values_size();
    pb::Value *value = plan.add_values();
    value->set_id(id);
    if (failed(tensorType(v.getLoc(), v.getType(), *value->mutable_type())))
      return failure();
    ids[v] = id;
    return id;
  }

  void alias(Value v, int id) { ids[v] = id; }
  int lookup(Value v) { return ids.lookup(v); }

  LogicalResult op(Operation *op, pb::Stage &stage) {
    pb::Op *out = stage.add_ops();
    out->set_name(op->getName().getStringRef().str());
    out->set_location(locationString(op->getLoc()));
    for (Value operand : op->getOperands()) {
      FailureOr<int> id = valueId(operand);
      if (failed(id))
        return failure();
      out->add_inputs(*id);
    }
    for (Value result : op->getResults()) {
      FailureOr<int> id = valueId(result);
      if (failed(id))
        return failure();
      out->add_outputs(*id);
    }
    ArrayRef<StringAttr> inherent = op->getName().getAttributeNames();
    for (NamedAttribute attr : op->getAttrs()) {
      StringRef name = attr.getName().strref();
      // Of the discardable attributes the plan keeps the layer (profiles
      // group ops by it) and the dropout number; placement and staging are
      // carried by the stage itself, and other notes (another pass's, a
      // user's) mean nothing to the runtime, which refuses attributes an
      // op does not take.
      if (name == HeterPSDialect::getDropoutIdAttrName())
        name = "dropout_id";
      else if (name != HeterPSDialect::getLayerAttrName() &&
               !llvm::is_contained(inherent, attr.getName()))
        continue;
      if (failed(attribute(op->getLoc(), attr.getValue(),
                           (*out->mutable_attrs())[name.str()])))
        return failure();
    }
    if (auto send = dyn_cast<SendOp>(op))
      sendStage[send.getChannel()] = {stage.index(), send.getValue()};
    if (auto recv = dyn_cast<RecvOp>(op))
      recvStage[recv.getChannel()] = stage.index();
    return success();
  }

  LogicalResult channels() {
    for (auto &[channel, from] : sendStage) {
      pb::Channel *c = plan.add_channels();
      c->set_id(channel);
      c->set_from_stage(from.first);
      c->set_to_stage(recvStage.lookup(channel));
      if (failed(tensorType(from.second.getLoc(), from.second.getType(),
                            *c->mutable_type())))
        return failure();
    }
    return success();
  }

private:
  pb::Plan &plan;
  StringRef passName;
  DenseMap<Value, int> ids;
  std::map<int64_t, std::pair<int, Value>> sendStage;
  DenseMap<int64_t, int> recvStage;
};

pb::Initializer initializer(InitAttr init) {
  pb::Initializer out;
  out.set_kind(stringifyInitKind(init.getKind()).str());
  for (double a : init.getArgs().asArrayRef())
    out.add_args(a);
  return out;
}

void optimizer(OptimizerAttr attr, pb::Optimizer &out) {
  out.set_kind(stringifyOptimizerKind(attr.getKind()).str());
  out.set_learning_rate(attr.getLearningRate().convertToDouble());
  out.set_momentum(attr.getMomentum().convertToDouble());
  out.set_beta1(attr.getBeta1().convertToDouble());
  out.set_beta2(attr.getBeta2().convertToDouble());
  out.set_epsilon(attr.getEpsilon().convertToDouble());
  out.set_weight_decay(attr.getWeightDecay().convertToDouble());
}

std::string argName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(
          i, HeterPSDialect::getNameAttrName()))
    return name.str();
  if (auto loc = dyn_cast<NameLoc>(func.getArgument(i).getLoc()))
    return loc.getName().str();
  return "input" + std::to_string(i);
}

std::string resultName(func::FuncOp func, unsigned i) {
  if (auto name = func.getResultAttrOfType<StringAttr>(
          i, HeterPSDialect::getNameAttrName()))
    return name.str();
  return "output" + std::to_string(i);
}

LogicalResult emitFunction(ModuleOp module, func::FuncOp func,
                           const PlanEmitterOptions &options, pb::Plan &plan) {
  StringRef passName = options.passName;
  PlanEmitter emitter(plan, passName);
  plan.set_producer("HeterPS " HETERPS_VERSION);
  plan.set_function(func.getSymName().str());
  int64_t batch = options.batchSize.value_or(256);
  if (auto prediction = module->getAttrOfType<PredictionAttr>(
          HeterPSDialect::getPredictionAttrName());
      prediction && prediction.getBatch() > 0) {
    if (options.batchSize && *options.batchSize != prediction.getBatch())
      return module.emitError()
             << passName << ": batch=" << *options.batchSize
             << " is not the batch the plan was scheduled for ("
             << prediction.getBatch()
             << ", heterps.prediction): its predicted figures are for that "
                "batch; give batch="
             << prediction.getBatch()
             << ", or schedule again with batch=" << *options.batchSize;
    batch = prediction.getBatch();
  }
  if (batch < 1)
    return module.emitError()
           << passName << ": the batch size must be positive, got " << batch;
  plan.set_batch_size(batch);
  plan.set_micro_batches(1);

  for (auto param : module.getOps<ParamOp>()) {
    pb::DenseParam *p = plan.add_params();
    p->set_name(param.getSymName().str());
    p->set_frozen(param.getFrozen());
    if (failed(emitter.tensorType(param.getLoc(), param.getType(),
                                  *p->mutable_type())))
      return failure();
    if (auto init = dyn_cast<InitAttr>(param.getValue()))
      *p->mutable_init() = initializer(init);
    else if (failed(emitter.tensorData(param.getLoc(),
                                       cast<ElementsAttr>(param.getValue()),
                                       *p->mutable_value())))
      return failure();
  }
  for (auto table : module.getOps<EmbeddingTableOp>()) {
    pb::SparseTable *t = plan.add_tables();
    t->set_id(plan.tables_size() - 1);
    t->set_name(table.getSymName().str());
    t->set_vocab(table.getVocab());
    t->set_dim(table.getDim());
    *t->mutable_init() = initializer(table.getInitializer());
    if (std::optional<ElementsAttr> value = table.getValue())
      if (failed(
              emitter.tensorData(table.getLoc(), *value, *t->mutable_value())))
        return failure();
    if (OptimizerAttr opt = table.getOptimizerAttr())
      optimizer(opt, *t->mutable_optimizer());
  }

  Block &body = func.getBody().front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    FailureOr<int> id = emitter.valueId(arg);
    if (failed(id))
      return failure();
    plan.add_inputs(*id);
    plan.mutable_values(*id)->set_name(argName(func, i));
  }
  // Bag inputs name their offsets by argument; the plan by value id.
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto offsets = func.getArgAttrOfType<IntegerAttr>(
            i, HeterPSDialect::getBagOffsetsAttrName()))
      plan.mutable_values(plan.inputs(i))
          ->set_bag_offsets(plan.inputs(offsets.getInt()));

  PipelineOp pipeline;
  for (Operation &op : body.without_terminator()) {
    if (auto p = dyn_cast<PipelineOp>(op)) {
      if (pipeline)
        return op.emitError() << passName << ": the function has two pipelines";
      pipeline = p;
    }
  }
  if (pipeline) {
    if (&body.front() != pipeline.getOperation() ||
        body.getOperations().size() != 2)
      return pipeline.emitError()
             << passName << ": the pipeline must be the whole function body";
    plan.set_micro_batches(pipeline.getMicroBatches());
    Block &pbody = pipeline.getBody().front();
    for (auto [arg, input] :
         llvm::zip(pbody.getArguments(), pipeline.getInputs()))
      emitter.alias(arg, emitter.lookup(input));
    // The parts of a stage (forward, then backward) are one plan stage,
    // its ops in pipeline order.
    for (Operation &op : pbody.without_terminator()) {
      auto stage = dyn_cast<StageOp>(op);
      if (!stage)
        return op.emitError() << passName << ": a pipeline holds only stages";
      if (stage.getIndex() > static_cast<uint64_t>(plan.stages_size()))
        return stage.emitError()
               << passName << ": stage " << stage.getIndex()
               << " comes before stage " << plan.stages_size();
      if (stage.getIndex() == static_cast<uint64_t>(plan.stages_size())) {
        pb::Stage *s = plan.add_stages();
        s->set_index(stage.getIndex());
        s->set_resource(stage.getDevice().getResource().str());
        s->set_kind(stringifyResourceKind(stage.getDevice().getKind()).str());
        s->set_units(stage.getUnits());
      }
      pb::Stage *s = plan.mutable_stages(stage.getIndex());
      Block &sbody = stage.getBody().front();
      for (auto [arg, input] :
           llvm::zip(sbody.getArguments(), stage.getInputs()))
        emitter.alias(arg, emitter.lookup(input));
      for (Operation &inner : sbody.without_terminator())
        if (failed(emitter.op(&inner, *s)))
          return failure();
      for (auto [result, yielded] :
           llvm::zip(stage.getResults(), sbody.getTerminator()->getOperands()))
        emitter.alias(result, emitter.lookup(yielded));
    }
    for (auto [result, yielded] :
         llvm::zip(pipeline.getResults(), pbody.getTerminator()->getOperands()))
      emitter.alias(result, emitter.lookup(yielded));
  } else {
    pb::Stage *s = plan.add_stages();
    s->set_index(0);
    s->set_resource("cpu");
    s->set_kind("cpu");
    s->set_units(1);
    for (Operation &op : body.without_terminator()) {
      if (auto device =
              op.getAttrOfType<DeviceAttr>(HeterPSDialect::getDeviceAttrName());
          device && device.getKind() != ResourceKind::cpu)
        return op.emitError()
               << passName << ": the op is placed on \"" << device.getResource()
               << "\" but the function is not staged; run "
                  "--heterps-schedule (or heterps-outline-stages and "
                  "heterps-insert-pipeline-comm) first";
      if (failed(emitter.op(&op, *s)))
        return failure();
    }
  }
  if (failed(emitter.channels()))
    return failure();

  Operation *ret = body.getTerminator();
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    int id = emitter.lookup(v);
    plan.add_outputs(id);
    if (plan.values(id).name().empty())
      plan.mutable_values(id)->set_name(resultName(func, i));
  }

  if (auto training = func->getAttrOfType<TrainingAttr>(
          HeterPSDialect::getTrainingAttrName())) {
    pb::Training *t = plan.mutable_training();
    t->set_loss(training.getLoss().str());
    t->set_loss_output(training.getLossOutput());
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (func.getArgAttr(i, HeterPSDialect::getLabelAttrName()))
        t->add_label_inputs(plan.inputs(i));
    func.walk([&](UpdateParamOp update) {
      if (t->has_optimizer())
        return;
      optimizer(OptimizerAttr::get(func.getContext(), update.getKind(),
                                   update.getLearningRate(),
                                   update.getMomentum(), update.getBeta1(),
                                   update.getBeta2(), update.getEpsilon(),
                                   update.getWeightDecay()),
                *t->mutable_optimizer());
    });
  }
  if (auto prediction = module->getAttrOfType<PredictionAttr>(
          HeterPSDialect::getPredictionAttrName())) {
    pb::Prediction *p = plan.mutable_prediction();
    p->set_throughput(prediction.getThroughput().convertToDouble());
    p->set_cost_usd(prediction.getCostUsd().convertToDouble());
    p->set_cost_per_hour(prediction.getCostPerHour().convertToDouble());
    // Stage figures belong to the outlined stages; a module emitted
    // before heterps-outline-stages is one plan stage, without one.
    ArrayRef<APFloat> rates = prediction.getStageThroughputs();
    if (rates.size() == static_cast<size_t>(plan.stages_size()))
      for (auto [stage, rate] : llvm::zip(*plan.mutable_stages(), rates))
        stage.set_predicted_throughput(rate.convertToDouble());
  }
  return success();
}

} // namespace

LogicalResult mlir::heterps::emitPlan(ModuleOp module,
                                      const PlanEmitterOptions &options,
                                      ::heterps::plan::Plan &plan) {
  StringRef passName = options.passName;
  FailureOr<func::FuncOp> func =
      findModelFunction(module, options.functionName, passName);
  if (failed(func))
    return failure();
  if (failed(emitFunction(module, *func, options, plan)))
    return failure();
  std::string problem = pb::verifyPlan(plan);
  if (!problem.empty())
    return module.emitError()
           << passName << ": the plan is invalid: " << problem;
  return success();
}
