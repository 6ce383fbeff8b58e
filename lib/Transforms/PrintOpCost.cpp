//===- PrintOpCost.cpp - Print what ops report to the cost model ----------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSBatch.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <memory>

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace heterps {
#define GEN_PASS_DEF_PRINTOPCOSTPASS
#include "heterps/Transforms/Passes.h.inc"
} // namespace heterps
} // namespace mlir

using namespace mlir;
using namespace mlir::heterps;

namespace {

void printCost(llvm::raw_ostream &os, const OpCost &cost) {
  os << "fwd_flops=" << llvm::format("%.0f", cost.forwardFlops)
     << " bwd_flops=" << llvm::format("%.0f", cost.backwardFlops)
     << " fwd_bytes=" << llvm::format("%.0f", cost.forwardBytes)
     << " bwd_bytes=" << llvm::format("%.0f", cost.backwardBytes)
     << " param_bytes=" << llvm::format("%.0f", cost.parameterBytes)
     << " embedding_bytes=" << llvm::format("%.0f", cost.embeddingBytes)
     << "\n";
}

struct PrintOpCostPass
    : public mlir::heterps::impl::PrintOpCostPassBase<PrintOpCostPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t batch = batchSize;
    if (batch < 1) {
      getOperation()->emitError()
          << "heterps-print-op-cost: batch-size must be positive, got "
          << batch;
      return signalPassFailure();
    }
    llvm::raw_ostream &os = llvm::errs();
    os << "op cost for batch size " << batch << "\n";
    OpCost total;
    // Per function, how its dynamic dimensions relate to the batch.
    llvm::DenseMap<Operation *, std::unique_ptr<BatchMultiples>> multiples;
    getOperation()->walk([&](CostOpInterface op) {
      int64_t rows = batch;
      if (auto function = op->getParentOfType<FunctionOpInterface>()) {
        std::unique_ptr<BatchMultiples> &m = multiples[function];
        if (!m)
          m = std::make_unique<BatchMultiples>(function.getFunctionBody());
        rows = m->batchSizeOf(op, batch);
      }
      OpCost cost = op.getCost(rows);
      total += cost;
      os << op->getName() << " @ " << op->getLoc() << ": ";
      if (rows != batch)
        os << "rows=" << rows << " ";
      printCost(os, cost);
    });
    os << "total: ";
    printCost(os, total);
    markAllAnalysesPreserved();
  }
};

} // namespace
