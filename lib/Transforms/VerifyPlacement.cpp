//===- VerifyPlacement.cpp - Check that a module is completely placed -----===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_VERIFYPLACEMENTPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

struct VerifyPlacementPass
    : public mlir::heterps::impl::VerifyPlacementPassBase<VerifyPlacementPass> {
  using Base::Base;

  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](func::FuncOp function) {
      if (!functionName.empty() && function.getSymName() != functionName)
        return;
      function.walk([&](Operation *op) {
        if (op->getDialect() != op->getContext()->getLoadedDialect(
                                    HeterPSDialect::getDialectNamespace()) ||
            isa<PipelineOp, StageOp, YieldOp>(op))
          return;
        if (!getDevice(op) && !op->getParentOfType<StageOp>()) {
          op->emitOpError() << "is not placed: it has no heterps.device and "
                               "is not inside a heterps.stage";
          failed = true;
        }
      });
      function.walk([&](StageOp stage) {
        // Parts of one stage share their workers and so their values.
        for (Value input : stage.getInputs())
          if (auto producer = input.getDefiningOp<StageOp>();
              producer && producer.getIndex() != stage.getIndex()) {
            stage.emitOpError()
                << "takes a result of stage "
                << producer.getIndexAttr().getInt()
                << " as an input: stages exchange values through channels "
                   "(run heterps-insert-pipeline-comm)";
            failed = true;
          }
      });
    });
    if (failed)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
