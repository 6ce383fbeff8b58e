//===- Autodiff.cpp - Write the training step into the model --------------===//
//
// Reverse-mode differentiation of a straight-line function: the ops between
// the inputs and the loss are visited in reverse, each building its
// operands' gradients through GradientOpInterface. Parameters and tables are
// the leaves: a parameter's gradient, complete once all its loads have been
// visited, becomes one heterps.update_param; an embedding lookup's becomes a
// sparse heterps.ps_push.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSModelFunction.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

/// Gives every op built for the backward of a forward op that op's layer
/// and, when it has them, its placement and stage, so that the backward
/// runs where the forward does whichever of autodiff and scheduling comes
/// first. Also records the backward ops, so that the gradients nobody needs
/// (of the model's inputs, say) can be erased afterwards.
struct PlacementListener : public OpBuilder::Listener {
  Operation *forward = nullptr;
  SmallVector<Operation *> created;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (forward)
      for (StringRef name : {HeterPSDialect::getDeviceAttrName(),
                             HeterPSDialect::getStageAttrName(),
                             HeterPSDialect::getLayerAttrName()})
        if (Attribute attr = forward->getAttr(name))
          op->setAttr(name, attr);
    created.push_back(op);
  }
};

struct AutodiffPass
    : public mlir::heterps::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  /// Training computes losses, gradients and updates in f32: a loss of
  /// another float type is named here rather than as a plan that does not
  /// verify.
  LogicalResult checkTrainsInF32(func::FuncOp func, Type type, StringRef what) {
    Type element = cast<ShapedType>(type).getElementType();
    if (element.isF32())
      return success();
    return func.emitError()
           << getArgument() << ": the " << what << " is " << type
           << "; training computes in f32 (export the model in float32, "
              "e.g. PyTorch's module.float())";
  }

  /// A loss spelled out in the graph (`-(y*log(p) + (1-y)*log(1-p)).mean()`
  /// as users write it): the function's one 0-D float result. Its label is
  /// the input that only the loss reads, when there is exactly one.
  FailureOr<std::pair<Value, std::string>> graphLoss(func::FuncOp func,
                                                     func::ReturnOp ret) {
    SmallVector<unsigned> scalars;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto type = cast<RankedTensorType>(v.getType());
      if (type.getRank() == 0 && isa<FloatType>(type.getElementType()))
        scalars.push_back(i);
    }
    if (scalars.empty())
      return func.emitError()
             << getArgument()
             << ": the function returns no loss (a 0-D float result); add "
                "one with loss=bce|softmax-ce|mse label=NAME";
    if (scalars.size() > 1) {
      InFlightDiagnostic diag =
          func.emitError() << getArgument() << ": the function returns "
                           << scalars.size() << " 0-D float results (results";
      for (unsigned i : scalars)
        diag << " #" << i;
      return diag << "); the loss must be the only one";
    }
    Value lossValue = ret.getOperand(scalars.front());
    if (failed(checkTrainsInF32(func, lossValue.getType(), "loss")))
      return failure();
    // The inputs each result depends on.
    auto inputsOf = [&](Value root) {
      llvm::SmallDenseSet<unsigned> args;
      SmallVector<Value> work{root};
      llvm::SmallPtrSet<Operation *, 32> seen;
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          args.insert(arg.getArgNumber());
          continue;
        }
        Operation *def = v.getDefiningOp();
        if (def && seen.insert(def).second)
          llvm::append_range(work, def->getOperands());
      }
      return args;
    };
    llvm::SmallDenseSet<unsigned> lossInputs = inputsOf(lossValue), others;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (i != scalars.front())
        for (unsigned a : inputsOf(v))
          others.insert(a);
    SmallVector<unsigned> labels;
    for (unsigned a : lossInputs)
      if (!others.contains(a))
        labels.push_back(a);
    if (labels.size() == 1)
      func.setArgAttr(labels.front(), HeterPSDialect::getLabelAttrName(),
                      UnitAttr::get(func.getContext()));
    return std::make_pair(lossValue, std::string("graph"));
  }

  /// The loss value: added from the options, or the model's own.
  FailureOr<std::pair<Value, std::string>> buildLoss(func::FuncOp func,
                                                     func::ReturnOp ret) {
    OpBuilder b(ret);
    // The loss op gets a name, as imported ops have, so that profile tables
    // and reports can name it.
    Location loc = NameLoc::get(b.getStringAttr("loss"), ret.getLoc());
    if (loss == AddedLoss::model) {
      for (Value v : ret.getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && cast<RankedTensorType>(v.getType()).getRank() == 0 &&
            isa<BCELossOp, MSELossOp, SoftmaxCELossOp, NLLLossOp,
                WeightedNLLLossOp>(def)) {
          // The loss's label, when it is an input, is what data binds the
          // labels of a batch to.
          if (auto arg = dyn_cast<BlockArgument>(def->getOperand(1)))
            func.setArgAttr(arg.getArgNumber(),
                            HeterPSDialect::getLabelAttrName(),
                            UnitAttr::get(func.getContext()));
          return std::make_pair(
              v, def->getName().getStringRef().drop_front(8).str());
        }
      }
      return graphLoss(func, ret);
    }
    // A second loss beside the model's would train on their sum and report
    // only the added one.
    for (auto [index, v] : llvm::enumerate(ret.getOperands()))
      if (Operation *def = v.getDefiningOp();
          def && isa<BCELossOp, MSELossOp, SoftmaxCELossOp, NLLLossOp,
                     WeightedNLLLossOp>(def))
        return func.emitError()
               << getArgument() << ": the function already returns a loss ("
               << def->getName() << ", result " << index
               << "); leave loss= unset to train on it, or drop it from the "
                  "model to add another";
    if (prediction >= ret.getNumOperands())
      return func.emitError()
             << getArgument() << ": prediction=" << prediction.getValue()
             << " but the function has " << ret.getNumOperands() << " results";
    Value pred = ret.getOperand(prediction);
    auto predType = cast<RankedTensorType>(pred.getType());
    if (failed(checkTrainsInF32(func, predType, "prediction")))
      return failure();
    Type labelType;
    if (loss == AddedLoss::bce || loss == AddedLoss::mse) {
      labelType = predType;
    } else {
      if (predType.getRank() < 2)
        return func.emitError() << getArgument()
                                << ": softmax-ce needs logits of rank >= 2, "
                                   "the prediction is "
                                << predType;
      SmallVector<int64_t> shape(predType.getShape());
      shape.erase(shape.begin() + 1);
      labelType = RankedTensorType::get(shape, b.getI64Type());
    }
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<StringAttr>(
              i, HeterPSDialect::getNameAttrName()))
        if (name.getValue() == labelName)
          return func.emitError() << getArgument() << ": the function already "
                                  << "has an input named '" << labelName
                                  << "'; choose another with label=NAME";
    // The plan names inputs and outputs in one space (heterps-run --input
    // and --output-dir, Trainer.step and predict).
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto name = func.getResultAttrOfType<StringAttr>(
              i, HeterPSDialect::getNameAttrName()))
        if (name.getValue() == labelName)
          return func.emitError() << getArgument() << ": the function has an "
                                  << "output named '" << labelName
                                  << "'; choose another label name with "
                                     "label=NAME";
    unsigned index = func.getNumArguments();
    NamedAttrList attrs;
    attrs.set(HeterPSDialect::getNameAttrName(), b.getStringAttr(labelName));
    attrs.set(HeterPSDialect::getLabelAttrName(), b.getUnitAttr());
    if (failed(func.insertArgument(index, labelType,
                                   attrs.getDictionary(&getContext()),
                                   NameLoc::get(b.getStringAttr(labelName)))))
      return failure();
    Value label = func.getArgument(index);
    auto scalar = RankedTensorType::get({}, predType.getElementType());
    // The loss runs where the prediction is computed.
    Operation *predictionOp = pred.getDefiningOp();
    Value l;
    std::string lossName = "softmax-ce";
    if (loss == AddedLoss::bce) {
      lossName = "bce";
      l = BCELossOp::create(
          b, loc, TypeRange{scalar}, ValueRange{pred, label},
          {b.getNamedAttr("from_logits", b.getBoolAttr(fromLogits))});
    } else if (loss == AddedLoss::mse) {
      lossName = "mse";
      l = MSELossOp::create(b, loc, TypeRange{scalar}, ValueRange{pred, label},
                            ArrayRef<NamedAttribute>{});
    } else {
      l = SoftmaxCELossOp::create(b, loc, TypeRange{scalar},
                                  ValueRange{pred, label},
                                  ArrayRef<NamedAttribute>{});
    }
    if (predictionOp)
      for (StringRef name : {HeterPSDialect::getDeviceAttrName(),
                             HeterPSDialect::getStageAttrName()})
        if (Attribute attr = predictionOp->getAttr(name))
          l.getDefiningOp()->setAttr(name, attr);
    return std::make_pair(l, lossName);
  }

  /// Fails naming an option set that nothing reads: a hyper-parameter of
  /// another optimizer than the dense and the tables' ones, a loss option
  /// without loss=, from-logits without bce, an empty label name. "Set" is
  /// "other than its default": a pass made from an options struct has every
  /// option given.
  LogicalResult checkOptionsAreRead(ModuleOp module) {
    OptimizerKind sparseKind = sparseOptimizer == TableOptimizer::dense
                                   ? optimizer.getValue()
                                   : toOptimizerKind(sparseOptimizer);
    auto used = [&](std::initializer_list<OptimizerKind> readers) {
      return llvm::is_contained(readers, optimizer.getValue()) ||
             llvm::is_contained(readers, sparseKind);
    };
    struct HyperParameter {
      bool given;
      StringRef name, readers;
      bool read;
    } hyperParameters[] = {
        {momentum != 0.9, "momentum", "momentum",
         used({OptimizerKind::momentum})},
        {beta1 != 0.9, "beta1", "adam", used({OptimizerKind::adam})},
        {beta2 != 0.999, "beta2", "adam", used({OptimizerKind::adam})},
        {epsilon != 1.0e-8, "epsilon", "adam and adagrad",
         used({OptimizerKind::adam, OptimizerKind::adagrad})},
    };
    for (const HyperParameter &h : hyperParameters)
      if (h.given && !h.read)
        return module.emitError()
               << getArgument() << ": " << h.name << "= is read by "
               << h.readers << " only, and this trains with "
               << stringifyOptimizerKind(optimizer.getValue())
               << (sparseKind == optimizer.getValue()
                       ? std::string()
                       : " and tables with " +
                             stringifyOptimizerKind(sparseKind).str());
    if (loss == AddedLoss::model)
      for (auto [given, name] :
           {std::pair<bool, StringRef>{labelName != "label", "label"},
            {prediction != 0, "prediction"},
            {fromLogits, "from-logits"}})
        if (given)
          return module.emitError()
                 << getArgument() << ": " << name
                 << "= is an option of the added loss; give loss=bce, "
                    "softmax-ce or mse (without loss=, the model's own loss "
                    "is trained)";
    if (fromLogits && loss != AddedLoss::bce)
      return module.emitError()
             << getArgument()
             << ": from-logits is bce's (softmax-ce always reads logits)";
    if (labelName.empty())
      return module.emitError()
             << getArgument() << ": label= needs a name for the label input";
    return success();
  }

  /// The optimizer the options describe; null (after an error) when a
  /// hyper-parameter is out of range.
  OptimizerAttr optimizerAttr(ModuleOp module, OptimizerKind kind, double lr,
                              StringRef what) {
    return OptimizerAttr::getChecked(
        [&] {
          return module.emitError()
                 << getArgument() << ": bad " << what << " options: ";
        },
        module.getContext(), kind, APFloat(lr),
        APFloat(kind == OptimizerKind::momentum ? double(momentum) : 0.0),
        APFloat(double(beta1)), APFloat(double(beta2)),
        APFloat(double(epsilon)), APFloat(double(weightDecay)));
  }

  /// The attributes of an update_param applying `optimizer`.
  static NamedAttrList updateAttrs(Builder &b, OptimizerAttr optimizer) {
    Type f64 = b.getF64Type();
    NamedAttrList attrs;
    attrs.set("kind",
              OptimizerKindAttr::get(b.getContext(), optimizer.getKind()));
    attrs.set("learning_rate",
              b.getFloatAttr(f64, optimizer.getLearningRate()));
    attrs.set("momentum", b.getFloatAttr(f64, optimizer.getMomentum()));
    attrs.set("beta1", b.getFloatAttr(f64, optimizer.getBeta1()));
    attrs.set("beta2", b.getFloatAttr(f64, optimizer.getBeta2()));
    attrs.set("epsilon", b.getFloatAttr(f64, optimizer.getEpsilon()));
    attrs.set("weight_decay", b.getFloatAttr(f64, optimizer.getWeightDecay()));
    return attrs;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (learningRate < 0) {
      module.emitError() << getArgument() << ": negative learning-rate "
                         << learningRate;
      return signalPassFailure();
    }
    // -1 (the default) stands for the dense learning rate.
    if (sparseLearningRate < 0 && sparseLearningRate != -1.0) {
      module.emitError() << getArgument() << ": negative sparse-learning-rate "
                         << sparseLearningRate
                         << " (leave it out for the dense learning rate)";
      return signalPassFailure();
    }
    if (failed(checkOptionsAreRead(module)))
      return signalPassFailure();
    // The table optimizer shares the dense one's hyper-parameters: a bad
    // one is reported once.
    OptimizerAttr denseOptimizer =
        optimizerAttr(module, optimizer, learningRate, "optimizer");
    if (!denseOptimizer)
      return signalPassFailure();
    OptimizerKind sparseKind = sparseOptimizer == TableOptimizer::dense
                                   ? optimizer.getValue()
                                   : toOptimizerKind(sparseOptimizer);
    double sparseLr = sparseLearningRate < 0 ? learningRate.getValue()
                                             : sparseLearningRate.getValue();
    OptimizerAttr tableOptimizer =
        optimizerAttr(module, sparseKind, sparseLr, "table optimizer");
    if (!tableOptimizer)
      return signalPassFailure();
    FailureOr<func::FuncOp> found =
        findModelFunction(module, functionName, getArgument());
    if (failed(found))
      return signalPassFailure();
    func::FuncOp func = *found;
    if (func->hasAttr(HeterPSDialect::getTrainingAttrName())) {
      func.emitError() << getArgument() << ": @" << func.getSymName()
                       << " is already a training step";
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError() << getArgument() << ": @" << func.getSymName()
                       << " has control flow; only straight-line models are "
                          "differentiated";
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (Operation &op : body.without_terminator())
      if (isa<PipelineOp>(op)) {
        op.emitError() << getArgument()
                       << " runs before heterps-outline-stages";
        return signalPassFailure();
      }

    FailureOr<std::pair<Value, std::string>> lossInfo = buildLoss(func, ret);
    if (failed(lossInfo))
      return signalPassFailure();
    Value lossValue = lossInfo->first;
    MLIRContext *context = &getContext();
    OpBuilder b(context);

    // The loss becomes a result when the options added it.
    unsigned lossOutput = 0;
    {
      auto it = llvm::find(ret.getOperands(), lossValue);
      if (it != ret.getOperands().end()) {
        lossOutput = std::distance(ret.getOperands().begin(), it);
      } else {
        lossOutput = ret.getNumOperands();
        NamedAttrList attrs;
        attrs.set(HeterPSDialect::getNameAttrName(), b.getStringAttr("loss"));
        if (failed(func.insertResult(lossOutput, lossValue.getType(),
                                     attrs.getDictionary(context))))
          return signalPassFailure();
        ret->insertOperands(lossOutput, lossValue);
      }
    }

    // Number dropouts so their gradients redraw the forward masks.
    int64_t dropouts = 0;
    func.walk([&](DropoutOp op) {
      op->setAttr(HeterPSDialect::getDropoutIdAttrName(),
                  b.getI64IntegerAttr(dropouts++));
    });

    // Only ops the loss depends on are differentiated.
    llvm::SetVector<Operation *> needed;
    SmallVector<Operation *> worklist{lossValue.getDefiningOp()};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!op || !needed.insert(op))
        continue;
      for (Value operand : op->getOperands())
        worklist.push_back(operand.getDefiningOp());
    }
    llvm::StringMap<int> loadsLeft;
    for (Operation &op : body)
      if (auto load = dyn_cast<LoadParamOp>(op); load && needed.count(&op))
        ++loadsLeft[load.getName()];

    // Every differentiated op is a layer of its own; its backward ops join
    // it (the listener).
    int64_t layers = 0;
    for (Operation &op : body.without_terminator())
      if (needed.count(&op))
        op.setAttr(HeterPSDialect::getLayerAttrName(),
                   b.getI64IntegerAttr(layers++));

    PlacementListener listener;
    b.setListener(&listener);
    b.setInsertionPoint(ret);
    DenseMap<Value, Value> grads;
    auto accumulate = [&](Value v, Value g) {
      if (!g)
        return;
      auto [it, inserted] = grads.try_emplace(v, g);
      if (!inserted)
        it->second = AddOp::create(b, v.getLoc(), it->second, g);
    };
    {
      auto scalar = cast<RankedTensorType>(lossValue.getType());
      listener.forward = lossValue.getDefiningOp();
      accumulate(
          lossValue,
          ConstantOp::create(
              b, lossValue.getLoc(),
              DenseElementsAttr::get(
                  scalar, b.getFloatAttr(scalar.getElementType(), 1.0))));
    }
    SymbolTable symbols(module);
    llvm::StringMap<Value> paramGrads;
    NamedAttrList denseUpdate = updateAttrs(b, denseOptimizer);

    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      if (needed.count(&op))
        forward.push_back(&op);
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        resultGrads.push_back(grads.lookup(r));
        any |= static_cast<bool>(resultGrads.back());
      }
      listener.forward = op;
      if (auto load = dyn_cast<LoadParamOp>(op)) {
        auto param = symbols.lookup<ParamOp>(load.getName());
        Value &acc = paramGrads[load.getName()];
        if (Value g = resultGrads[0])
          acc = acc ? Value(AddOp::create(b, op->getLoc(), acc, g)) : g;
        if (--loadsLeft[load.getName()] == 0 && acc && !param.getFrozen()) {
          NamedAttrList attrs = denseUpdate;
          attrs.set("name", load.getNameAttr());
          UpdateParamOp::create(b, op->getLoc(), TypeRange{}, ValueRange{acc},
                                attrs.getAttrs());
        }
        continue;
      }
      if (!any)
        continue;
      if (auto lookup = dyn_cast<EmbeddingLookupOp>(op)) {
        auto table = symbols.lookup<EmbeddingTableOp>(lookup.getTable());
        int64_t dim = table.getDim();
        auto idsType = cast<RankedTensorType>(lookup.getIds().getType());
        auto keysType = RankedTensorType::get({ShapedType::kDynamic},
                                              idsType.getElementType());
        auto rowsType =
            RankedTensorType::get({ShapedType::kDynamic, dim}, b.getF32Type());
        auto grad = EmbeddingGradOp::create(
            b, op->getLoc(), TypeRange{keysType, rowsType},
            ValueRange{lookup.getIds(), resultGrads[0]},
            {b.getNamedAttr("combiner", lookup.getCombinerAttr())});
        PSPushOp::create(b, op->getLoc(), lookup.getTableAttr(), grad.getKeys(),
                         grad.getRows());
        continue;
      }
      if (isa<ConstantOp>(op))
        continue;
      auto differentiable = dyn_cast<GradientOpInterface>(op);
      if (!differentiable) {
        op->emitOpError() << "has no gradient rule; " << getArgument()
                          << " cannot differentiate through it";
        return signalPassFailure();
      }
      // Rules see a null gradient for a result that is off the loss path.
      SmallVector<Value> operandGrads;
      if (failed(differentiable.buildGradient(b, resultGrads, operandGrads)))
        return signalPassFailure();
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
        accumulate(operand, g);
    }
    b.setListener(nullptr);
    for (Operation *op : llvm::reverse(listener.created))
      if (isOpTriviallyDead(op))
        op->erase();

    for (auto table : module.getOps<EmbeddingTableOp>())
      table.setOptimizerAttr(tableOptimizer);
    func->setAttr(HeterPSDialect::getTrainingAttrName(),
                  TrainingAttr::get(context, lossInfo->second, lossOutput));
  }
};

} // namespace

OptimizerKind mlir::heterps::toOptimizerKind(TableOptimizer table) {
  // TableOptimizer lists `dense` and then OptimizerKind's values in order.
  static_assert(static_cast<int>(TableOptimizer::sgd) ==
                    static_cast<int>(OptimizerKind::sgd) + 1 &&
                static_cast<int>(TableOptimizer::adagrad) ==
                    static_cast<int>(OptimizerKind::adagrad) + 1);
  assert(table != TableOptimizer::dense && "dense names no kind of its own");
  return static_cast<OptimizerKind>(static_cast<int>(table) - 1);
}
