//===- Passes.h - HeterPS passes --------------------------------*- C++ -*-===//

#ifndef HETERPS_TRANSFORMS_PASSES_H
#define HETERPS_TRANSFORMS_PASSES_H

#include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.h"
#include "heterps/Schedule/Solver.h"

#include "mlir/Pass/Pass.h"
#include "llvm/Support/CommandLine.h"

namespace mlir {
namespace heterps {

//===----------------------------------------------------------------------===//
// Enum pass options: a value outside the list is a parse error that names
// the valid ones, and --help lists them.
//===----------------------------------------------------------------------===//

/// heterps-autodiff's `loss`: one to add, or the model's own.
enum class AddedLoss { model, bce, softmax_ce, mse };

/// heterps-autodiff's `sparse-optimizer`: the dense optimizer's kind, or
/// another.
enum class TableOptimizer { dense, sgd, momentum, adam, adagrad };
OptimizerKind toOptimizerKind(TableOptimizer table);

/// Adds every OptimizerKind as a value of an option.
struct OptimizerValues {
  template <typename Opt> void apply(Opt &option) const {
    for (uint32_t i = 0; i <= getMaxEnumValForOptimizerKind(); ++i) {
      auto kind = static_cast<OptimizerKind>(i);
      option.getParser().addLiteralOption(stringifyOptimizerKind(kind), kind,
                                          stringifyOptimizerKind(kind));
    }
  }
};

/// `dense` (the dense optimizer's kind) and every OptimizerKind.
struct TableOptimizerValues {
  template <typename Opt> void apply(Opt &option) const {
    option.getParser().addLiteralOption("dense", TableOptimizer::dense,
                                        "the dense optimizer's kind");
    for (uint32_t i = 0; i <= getMaxEnumValForOptimizerKind(); ++i) {
      auto kind = static_cast<OptimizerKind>(i);
      option.getParser().addLiteralOption(stringifyOptimizerKind(kind),
                                          static_cast<TableOptimizer>(i + 1),
                                          stringifyOptimizerKind(kind));
    }
  }
};

/// Every solver of the scheduling library, by the name users write.
struct SolverValues {
  template <typename Opt> void apply(Opt &option) const {
    for (::heterps::schedule::SolverKind kind :
         ::heterps::schedule::getSolverKinds())
      option.getParser().addLiteralOption(
          ::heterps::schedule::getSolverName(kind), kind,
          ::heterps::schedule::getSolverSummary(kind));
  }
};

#define GEN_PASS_DECL
#include "heterps/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "heterps/Transforms/Passes.h.inc"

} // namespace heterps
} // namespace mlir

#endif // HETERPS_TRANSFORMS_PASSES_H
