//===- OutlineStages.cpp - Wrap the ops of each stage in heterps.stage ----===//

#include "ScheduleAdaptor.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_OUTLINESTAGESPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

/// The ops of one heterps.stage op: a stage, or in a training step one
/// part of it (the forward part, or the backward part after the later
/// stages).
struct StagePart {
  int64_t index = 0;
  DeviceAttr device;
  int64_t units = 1;
  SmallVector<Operation *> ops;
};

struct OutlineStagesPass
    : public mlir::heterps::impl::OutlineStagesPassBase<OutlineStagesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> function =
        findModelFunction(module, functionName, getArgument());
    if (failed(function))
      return signalPassFailure();
    if (microBatches < 1) {
      module.emitError() << getArgument()
                         << ": micro-batches must be positive, got "
                         << static_cast<int64_t>(microBatches);
      return signalPassFailure();
    }
    Block &body = function->getBody().front();
    if (!body.getOps<PipelineOp>().empty()) {
      function->emitOpError() << "is already outlined into a heterps.pipeline";
      return signalPassFailure();
    }

    sinkSources(body);
    FailureOr<SmallVector<StagePart>> parts = groupStages(body);
    if (failed(parts))
      return signalPassFailure();
    outline(*function, *parts);
  }

  /// Moves parameter loads and constants (no operands, no side effects)
  /// to just before their first use: importers put them at the top, where
  /// they would cut the stage of their user into parts.
  static void sinkSources(Block &body) {
    SmallVector<Operation *> sources;
    for (Operation &op : body.without_terminator())
      if (isa<LoadParamOp, ConstantOp>(op) && op.getNumOperands() == 0)
        sources.push_back(&op);
    for (Operation *op : llvm::reverse(sources)) {
      Operation *first = nullptr;
      for (Operation *user : op->getUsers()) {
        Operation *inBody = body.findAncestorOpInBlock(*user);
        if (inBody && (!first || inBody->isBeforeInBlock(first)))
          first = inBody;
      }
      if (first && first != op->getNextNode())
        op->moveBefore(first);
    }
  }

  /// Groups the ops into stages: by `heterps.stage` when provisioned, else
  /// by maximal runs of one `heterps.device`; the ops of a layer
  /// (`heterps.layer`) join the stage of its forward op. A stage whose ops
  /// come back after later stages (the backward of its layers) gets a
  /// second part.
  FailureOr<SmallVector<StagePart>> groupStages(Block &body) {
    SmallVector<StagePart> parts;
    // The stage of each layer's forward op, and each stage's device and
    // units, by index.
    DenseMap<int64_t, int64_t> layerStage;
    SmallVector<std::pair<DeviceAttr, int64_t>> stageInfo;
    for (Operation &op : body.without_terminator()) {
      DeviceAttr device = getDevice(&op);
      if (!device)
        return op.emitOpError()
               << "is not placed: run heterps-place-ops before "
               << getArgument();
      auto assignment = op.getAttrOfType<StageAssignmentAttr>(
          HeterPSDialect::getStageAttrName());
      auto layer =
          op.getAttrOfType<IntegerAttr>(HeterPSDialect::getLayerAttrName());
      int64_t numStages = static_cast<int64_t>(stageInfo.size());
      int64_t index;
      if (assignment)
        index = assignment.getIndex();
      else if (auto it =
                   layer ? layerStage.find(layer.getInt()) : layerStage.end();
               it != layerStage.end())
        index = it->second;
      else if (!parts.empty() && parts.back().device == device)
        index = parts.back().index;
      else
        index = numStages;
      if (index < 0 || index > numStages)
        return op.emitOpError()
               << "is in stage " << index << " after ops of stages 0.."
               << numStages - 1
               << ": stages are numbered 0, 1, ... in order of their first op";
      int64_t units = assignment ? assignment.getUnits() : 1;
      if (index == numStages) {
        stageInfo.push_back({device, units});
      } else if (stageInfo[index].first != device) {
        return op.emitOpError() << "is placed on \"" << device.getResource()
                                << "\" but stage " << index << " is on \""
                                << stageInfo[index].first.getResource() << "\"";
      } else if (stageInfo[index].second != units) {
        return op.emitOpError()
               << "gives stage " << index << " " << units
               << " units, an earlier op " << stageInfo[index].second;
      }
      if (layer)
        layerStage.try_emplace(layer.getInt(), index);
      if (parts.empty() || parts.back().index != index) {
        parts.emplace_back();
        parts.back().index = index;
        parts.back().device = device;
        parts.back().units = units;
      }
      parts.back().ops.push_back(&op);
    }
    if (parts.empty())
      return body.getParentOp()->emitOpError() << "has no ops to outline";
    return parts;
  }

  void outline(func::FuncOp function, ArrayRef<StagePart> stages) {
    Block &body = function.getBody().front();
    Operation *terminator = body.getTerminator();
    OpBuilder builder(terminator);
    Location loc = function.getLoc();

    auto pipeline = PipelineOp::create(
        builder, loc, terminator->getOperandTypes(), body.getArguments(),
        builder.getI64IntegerAttr(microBatches));
    Block *pipelineBody = new Block();
    pipeline.getBody().push_back(pipelineBody);
    // What every original value is called inside the pipeline body.
    IRMapping outer;
    for (BlockArgument argument : body.getArguments())
      outer.map(argument, pipelineBody->addArgument(argument.getType(),
                                                    argument.getLoc()));

    OpBuilder pipelineBuilder = OpBuilder::atBlockEnd(pipelineBody);
    for (const StagePart &stage : stages) {
      llvm::SmallPtrSet<Operation *, 16> members(stage.ops.begin(),
                                                 stage.ops.end());
      // Inputs: values the stage uses that come from outside it.
      llvm::SetVector<Value> inputs;
      // Results: values of the stage used outside it.
      llvm::SetVector<Value> results;
      for (Operation *op : stage.ops) {
        for (Value operand : op->getOperands()) {
          Operation *producer = operand.getDefiningOp();
          if (!producer || !members.contains(producer))
            inputs.insert(operand);
        }
        for (Value result : op->getResults())
          for (Operation *user : result.getUsers())
            if (!members.contains(user))
              results.insert(result);
      }
      SmallVector<Value> stageInputs;
      for (Value input : inputs)
        stageInputs.push_back(outer.lookup(input));
      SmallVector<Type> resultTypes;
      for (Value result : results)
        resultTypes.push_back(result.getType());
      auto stageOp = StageOp::create(
          pipelineBuilder, loc, resultTypes,
          pipelineBuilder.getI64IntegerAttr(stage.index), stage.device,
          pipelineBuilder.getI64IntegerAttr(stage.units), stageInputs);
      Block *stageBody = new Block();
      stageOp.getBody().push_back(stageBody);
      IRMapping inner;
      for (Value input : inputs)
        inner.map(input, stageBody->addArgument(input.getType(), loc));
      OpBuilder stageBuilder = OpBuilder::atBlockEnd(stageBody);
      for (Operation *op : stage.ops) {
        Operation *clone = stageBuilder.clone(*op, inner);
        // The stage carries the placement now.
        clone->removeAttr(HeterPSDialect::getDeviceAttrName());
        clone->removeAttr(HeterPSDialect::getStageAttrName());
        clone->removeAttr(HeterPSDialect::getStageCutAttrName());
      }
      SmallVector<Value> yielded;
      for (Value result : results)
        yielded.push_back(inner.lookup(result));
      YieldOp::create(stageBuilder, loc, yielded);
      for (auto [result, stageResult] :
           llvm::zip_equal(results, stageOp.getResults()))
        outer.map(result, stageResult);
    }
    SmallVector<Value> returned;
    for (Value value : terminator->getOperands())
      returned.push_back(outer.lookup(value));
    YieldOp::create(pipelineBuilder, loc, returned);

    terminator->setOperands(pipeline.getResults());
    // The originals, last first so that no use outlives its definition.
    for (const StagePart &stage : llvm::reverse(stages))
      for (Operation *op : llvm::reverse(stage.ops))
        op->erase();
  }
};

} // namespace
