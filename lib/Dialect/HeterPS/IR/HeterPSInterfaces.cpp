//===- HeterPSInterfaces.cpp - Cost and gradient interfaces ---------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::heterps;

#include "heterps/Dialect/HeterPS/IR/HeterPSInterfaces.cpp.inc"

OpCost &OpCost::operator+=(const OpCost &other) {
  forwardFlops += other.forwardFlops;
  backwardFlops += other.backwardFlops;
  forwardBytes += other.forwardBytes;
  backwardBytes += other.backwardBytes;
  parameterBytes += other.parameterBytes;
  embeddingBytes += other.embeddingBytes;
  return *this;
}

double mlir::heterps::getNumElements(ShapedType type, int64_t batchSize) {
  double count = 1;
  for (int64_t dim : type.getShape())
    count *= ShapedType::isDynamic(dim) ? batchSize : dim;
  return count;
}

double mlir::heterps::getNumBytes(ShapedType type, int64_t batchSize) {
  unsigned bits = type.getElementTypeBitWidth();
  return getNumElements(type, batchSize) * ((bits + 7) / 8);
}

double mlir::heterps::getOperandAndResultBytes(Operation *op,
                                               int64_t batchSize) {
  double bytes = 0;
  for (Type type : op->getOperandTypes())
    if (auto shaped = dyn_cast<ShapedType>(type))
      bytes += getNumBytes(shaped, batchSize);
  for (Type type : op->getResultTypes())
    if (auto shaped = dyn_cast<ShapedType>(type))
      bytes += getNumBytes(shaped, batchSize);
  return bytes;
}

/// The largest tensor an op touches, in elements: the work of an elementwise
/// op, a broadcast or a loss.
static double getLargestTensorElements(Operation *op, int64_t batchSize) {
  double largest = 0;
  for (Type type :
       llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
    if (auto shaped = dyn_cast<ShapedType>(type))
      largest = std::max(largest, getNumElements(shaped, batchSize));
  return largest;
}

OpCost mlir::heterps::getElementwiseCost(Operation *op, int64_t batchSize,
                                         double flopsPerElement) {
  OpCost cost;
  cost.forwardFlops = flopsPerElement * getLargestTensorElements(op, batchSize);
  cost.backwardFlops = 2 * cost.forwardFlops;
  cost.forwardBytes = getOperandAndResultBytes(op, batchSize);
  cost.backwardBytes = 2 * cost.forwardBytes;
  return cost;
}

OpCost mlir::heterps::getReduceCost(Operation *op, int64_t batchSize) {
  OpCost cost;
  cost.forwardFlops =
      getNumElements(cast<ShapedType>(op->getOperand(0).getType()), batchSize);
  // The backward pass broadcasts the result gradient back to the input.
  cost.backwardFlops = cost.forwardFlops;
  cost.forwardBytes = getOperandAndResultBytes(op, batchSize);
  cost.backwardBytes = cost.forwardBytes;
  return cost;
}

OpCost mlir::heterps::getPoolCost(Operation *op, ArrayRef<int64_t> kernelShape,
                                  int64_t batchSize) {
  double window = 1;
  for (int64_t k : kernelShape)
    window *= k;
  OpCost cost;
  cost.forwardFlops =
      window *
      getNumElements(cast<ShapedType>(op->getResult(0).getType()), batchSize);
  cost.backwardFlops = cost.forwardFlops;
  cost.forwardBytes = getOperandAndResultBytes(op, batchSize);
  cost.backwardBytes = 2 * cost.forwardBytes;
  return cost;
}
