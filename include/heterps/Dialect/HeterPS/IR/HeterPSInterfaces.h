//===- HeterPSInterfaces.h - Cost and gradient interfaces -------*- C++ -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSINTERFACES_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace mlir {
namespace heterps {

/// The work of one op for one batch. FLOPs are floating-point operations;
/// bytes are what the op moves through memory, each tensor counted once.
struct OpCost {
  /// Forward pass FLOPs.
  double forwardFlops = 0;
  /// Backward pass FLOPs: the gradients of the inputs and of the parameters.
  double backwardFlops = 0;
  /// Bytes of the operands and results read and written by the forward pass.
  double forwardBytes = 0;
  /// Bytes the backward pass reads and writes.
  double backwardBytes = 0;
  /// Bytes of dense parameters the op reads; they are synchronised between
  /// the data-parallel units of a stage.
  double parameterBytes = 0;
  /// Bytes of embedding rows pulled from the parameter server (their
  /// gradients, the same amount, are pushed back in training).
  double embeddingBytes = 0;

  OpCost &operator+=(const OpCost &other);
};

/// The number of elements of `type` with every dynamic dimension bound to
/// `batchSize`.
double getNumElements(ShapedType type, int64_t batchSize);
/// The bytes of `type` with every dynamic dimension bound to `batchSize`.
double getNumBytes(ShapedType type, int64_t batchSize);
/// The bytes of all tensor operands and results of `op`.
double getOperandAndResultBytes(Operation *op, int64_t batchSize);

/// An elementwise op: `flopsPerElement` per result element forward, twice
/// that backward, every tensor touched once forward and twice backward.
OpCost getElementwiseCost(Operation *op, int64_t batchSize,
                          double flopsPerElement);
/// A reduction: one FLOP per input element.
OpCost getReduceCost(Operation *op, int64_t batchSize);
/// A pooling op: one FLOP per window element per output element.
OpCost getPoolCost(Operation *op, ArrayRef<int64_t> kernelShape,
                   int64_t batchSize);

} // namespace heterps
} // namespace mlir

#include "heterps/Dialect/HeterPS/IR/HeterPSInterfaces.h.inc"

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSINTERFACES_H
