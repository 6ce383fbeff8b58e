//===- Passes.h - HeterPS passes --------------------------------*- C++ -*-===//

#ifndef HETERPS_TRANSFORMS_PASSES_H
#define HETERPS_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace heterps {

#define GEN_PASS_DECL
#include "heterps/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "heterps/Transforms/Passes.h.inc"

/// Registers `heterps-schedule`: place-ops, provision, outline-stages,
/// insert-pipeline-comm and verify-placement with shared options.
void registerHeterPSPipelines();

} // namespace heterps
} // namespace mlir

#endif // HETERPS_TRANSFORMS_PASSES_H
