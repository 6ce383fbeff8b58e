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

struct StageOps {
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

    FailureOr<SmallVector<StageOps>> stages = groupStages(body);
    if (failed(stages))
      return signalPassFailure();
    outline(*function, *stages);
  }

  /// Groups the ops into stages: by `heterps.stage` when provisioned, else
  /// by maximal runs of one `heterps.device`.
  FailureOr<SmallVector<StageOps>> groupStages(Block &body) {
    SmallVector<StageOps> stages;
    int64_t lastIndex = -1;
    for (Operation &op : body.without_terminator()) {
      DeviceAttr device = getDevice(&op);
      if (!device)
        return op.emitOpError()
               << "is not placed: run heterps-place-ops before "
               << getArgument();
      auto assignment = op.getAttrOfType<StageAssignmentAttr>(
          HeterPSDialect::getStageAttrName());
      bool startsStage;
      if (assignment) {
        if (assignment.getIndex() < lastIndex ||
            assignment.getIndex() > lastIndex + 1)
          return op.emitOpError()
                 << "is in stage " << assignment.getIndex()
                 << " after an op of stage " << lastIndex
                 << ": stages must be numbered 0, 1, ... along the op order";
        startsStage = assignment.getIndex() != lastIndex;
        lastIndex = assignment.getIndex();
      } else {
        startsStage = stages.empty() || stages.back().device != device;
      }
      if (startsStage) {
        stages.emplace_back();
        stages.back().device = device;
        stages.back().units = assignment ? assignment.getUnits() : 1;
      } else if (stages.back().device != device) {
        return op.emitOpError()
               << "is placed on \"" << device.getResource() << "\" but stage "
               << stages.size() - 1 << " is on \""
               << stages.back().device.getResource() << "\"";
      }
      stages.back().ops.push_back(&op);
    }
    if (stages.empty())
      return body.getParentOp()->emitOpError() << "has no ops to outline";
    return stages;
  }

  void outline(func::FuncOp function, ArrayRef<StageOps> stages) {
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
    for (auto [index, stage] : llvm::enumerate(stages)) {
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
          pipelineBuilder.getI64IntegerAttr(index), stage.device,
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
    for (const StageOps &stage : llvm::reverse(stages))
      for (Operation *op : llvm::reverse(stage.ops))
        op->erase();
  }
};

} // namespace
