//===- InsertPipelineComm.cpp - Channels between stages -------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Transforms/Passes.h"

#include "llvm/ADT/BitVector.h"

#include <limits>

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_INSERTPIPELINECOMMPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

/// Rebuilds `stage` without the results nobody uses any more (an op's
/// results cannot be removed in place).
static void dropUnusedResults(StageOp stage) {
  if (llvm::all_of(stage.getResults(),
                   [](Value result) { return !result.use_empty(); }))
    return;
  Block &body = stage.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  SmallVector<Value> yielded;
  SmallVector<Type> resultTypes;
  SmallVector<unsigned> keptResults;
  for (auto [i, result] : llvm::enumerate(stage.getResults()))
    if (!result.use_empty()) {
      keptResults.push_back(i);
      yielded.push_back(yield.getValues()[i]);
      resultTypes.push_back(result.getType());
    }
  OpBuilder builder(stage);
  auto rebuilt = StageOp::create(builder, stage.getLoc(), resultTypes,
                                 stage.getIndexAttr(), stage.getDevice(),
                                 stage.getUnitsAttr(), stage.getInputs());
  rebuilt.getBody().takeBody(stage.getBody());
  builder.setInsertionPoint(yield);
  YieldOp::create(builder, yield.getLoc(), yielded);
  yield.erase();
  for (auto [newIndex, oldIndex] : llvm::enumerate(keptResults))
    stage.getResult(oldIndex).replaceAllUsesWith(rebuilt.getResult(newIndex));
  stage.erase();
}

struct InsertPipelineCommPass
    : public mlir::heterps::impl::InsertPipelineCommPassBase<
          InsertPipelineCommPass> {
  using Base::Base;

  void runOnOperation() override {
    bool anyPipeline = false;
    WalkResult walk = getOperation().walk([&](PipelineOp pipeline) {
      anyPipeline = true;
      return failed(insertChannels(pipeline)) ? WalkResult::interrupt()
                                              : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (!anyPipeline && failed(checkNotProvisionedOnly()))
      return signalPassFailure();
  }

  /// A function whose ops carry stages but no pipeline was provisioned and
  /// not outlined: there is nothing to connect yet, and passing it on would
  /// leave a step without channels that only fails later.
  LogicalResult checkNotProvisionedOnly() {
    Operation *staged = nullptr;
    getOperation().walk([&](Operation *op) {
      if (op->hasAttr(HeterPSDialect::getStageAttrName())) {
        staged = op;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (!staged)
      return success();
    return staged->emitOpError()
           << "has a stage (" << HeterPSDialect::getStageAttrName()
           << ") but is not in a heterps.pipeline; " << getArgument()
           << " connects the stages that heterps-outline-stages builds, run "
              "it first";
  }

  LogicalResult insertChannels(PipelineOp pipeline) {
    // New channels follow any the pipeline already has.
    int64_t lastChannel = -1;
    pipeline.walk([&](SendOp send) {
      lastChannel = std::max<int64_t>(lastChannel, send.getChannel());
    });

    SmallVector<StageOp> stages(pipeline.getStages());
    DenseMap<Operation *, llvm::BitVector> dropped;
    for (StageOp stage : stages)
      dropped[stage] = llvm::BitVector(stage.getInputs().size());

    for (StageOp producer : stages) {
      auto yield = cast<YieldOp>(producer.getBody().front().getTerminator());
      for (auto [i, result] : llvm::enumerate(producer.getResults())) {
        // One channel per consuming stage input, in stage order, so that
        // channel numbers follow the pipeline rather than use-list order.
        // A later part of the same stage runs on the same workers: the
        // value stays an SSA value there.
        SmallVector<OpOperand *> uses;
        for (OpOperand &use : result.getUses())
          if (auto consumer = dyn_cast<StageOp>(use.getOwner());
              consumer && consumer.getIndex() != producer.getIndex())
            uses.push_back(&use);
        llvm::sort(uses, [](OpOperand *a, OpOperand *b) {
          auto stageA = cast<StageOp>(a->getOwner());
          auto stageB = cast<StageOp>(b->getOwner());
          if (stageA != stageB)
            return stageA.getIndexAttr().getInt() <
                   stageB.getIndexAttr().getInt();
          return a->getOperandNumber() < b->getOperandNumber();
        });
        for (OpOperand *use : uses) {
          auto consumer = cast<StageOp>(use->getOwner());
          if (lastChannel == std::numeric_limits<int64_t>::max())
            return producer.emitOpError()
                   << "sends to stage " << consumer.getIndex()
                   << " but the pipeline already uses channel " << lastChannel
                   << ", the largest id; no channel id is left";
          int64_t channel = ++lastChannel;
          OpBuilder builder(yield);
          SendOp::create(builder, producer.getLoc(), yield.getValues()[i],
                         builder.getI64IntegerAttr(channel));
          Block &consumerBody = consumer.getBody().front();
          builder.setInsertionPointToStart(&consumerBody);
          unsigned input = use->getOperandNumber();
          auto recv =
              RecvOp::create(builder, consumer.getLoc(), result.getType(),
                             builder.getI64IntegerAttr(channel));
          consumerBody.getArgument(input).replaceAllUsesWith(recv);
          dropped[consumer].set(input);
        }
      }
    }
    // The inputs now received through channels go, then the results that
    // only fed them.
    for (StageOp stage : stages) {
      const llvm::BitVector &inputs = dropped[stage];
      SmallVector<Value> kept;
      for (auto [i, input] : llvm::enumerate(stage.getInputs()))
        if (!inputs.test(i))
          kept.push_back(input);
      stage.getInputsMutable().assign(kept);
      stage.getBody().front().eraseArguments(inputs);
    }
    for (StageOp stage : stages)
      dropUnusedResults(stage);
    return success();
  }
};

} // namespace
