//===- HeterPSResize.cpp - Interpolating resize ---------------------------===//
//
// Verifiers and costs of heterps.resize and its gradient, which share their
// attributes and the check of an input against a resized shape.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::heterps;

namespace {

/// Interpolation taps per output element along one resized dimension.
int64_t tapsOf(StringRef mode) {
  return mode == "cubic" ? 4 : mode == "linear" ? 2 : 1;
}

template <typename OpTy>
LogicalResult verifyResize(OpTy op, RankedTensorType input,
                           RankedTensorType result) {
  StringRef mode = op.getMode(), coords = op.getCoordinateTransformationMode(),
            nearest = op.getNearestMode();
  if (!llvm::is_contained({"nearest", "linear", "cubic"}, mode))
    return op.emitOpError()
           << "mode '" << mode << "' is not nearest, linear or cubic";
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn",
                           "tf_crop_and_resize"},
                          coords))
    return op.emitOpError() << "coordinate_transformation_mode '" << coords
                            << "' is not supported";
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          nearest))
    return op.emitOpError()
           << "nearest_mode '" << nearest << "' is not supported";
  int64_t rank = input.getRank();
  if (result.getRank() != rank ||
      result.getElementType() != input.getElementType())
    return op.emitOpError() << "resizes " << input << " to " << result
                            << ": the rank and element type must agree";
  ArrayRef<double> scales = op.getScales();
  if (static_cast<int64_t>(scales.size()) != rank)
    return op.emitOpError()
           << "scales has " << scales.size() << " entries for rank " << rank;
  for (auto [d, scale] : llvm::enumerate(scales))
    if (!std::isfinite(scale) || scale <= 0)
      return op.emitOpError() << "scales[" << d << "] is " << scale
                              << ", expected a positive number";
  std::optional<ArrayRef<double>> roi = op.getRoi();
  if (coords == "tf_crop_and_resize" &&
      (!roi || static_cast<int64_t>(roi->size()) != 2 * rank))
    return op.emitOpError() << "tf_crop_and_resize needs roi of " << 2 * rank
                            << " entries (starts, then ends)";
  if (roi && coords != "tf_crop_and_resize")
    return op.emitOpError()
           << "roi is only read by tf_crop_and_resize, not " << coords;
  for (int64_t d = 0; d < rank; ++d) {
    bool dynamicIn = input.isDynamicDim(d), dynamicOut = result.isDynamicDim(d);
    if (dynamicIn != dynamicOut || (dynamicIn && scales[d] != 1.0))
      return op.emitOpError()
             << "dimension " << d << " of " << input << " and " << result
             << ": a dynamic (batch) dimension is not resized (scale 1), a "
                "static one stays static";
    if (!dynamicIn && result.getDimSize(d) < 1)
      return op.emitOpError() << "dimension " << d << " resizes to "
                              << result.getDimSize(d) << " elements";
  }
  return success();
}

template <typename OpTy>
double resizeFlops(OpTy op, RankedTensorType input, RankedTensorType result,
                   int64_t batchSize) {
  int64_t resized = 0;
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (input.getDimSize(d) != result.getDimSize(d) || op.getScales()[d] != 1)
      ++resized;
  return 2.0 * static_cast<double>(tapsOf(op.getMode()) * resized) *
         getNumElements(result, batchSize);
}

} // namespace

LogicalResult ResizeOp::verify() {
  return verifyResize(*this, getInput().getType(), getResult().getType());
}

OpCost ResizeOp::getCost(int64_t batchSize) {
  OpCost cost;
  cost.forwardFlops = resizeFlops(*this, getInput().getType(),
                                  getResult().getType(), batchSize);
  cost.backwardFlops = cost.forwardFlops;
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  cost.backwardBytes = 2 * cost.forwardBytes;
  return cost;
}

LogicalResult ResizeGradOp::verify() {
  return verifyResize(*this, getInput().getType(), getResultGrad().getType());
}

OpCost ResizeGradOp::getCost(int64_t batchSize) {
  OpCost cost;
  cost.forwardFlops = resizeFlops(*this, getInput().getType(),
                                  getResultGrad().getType(), batchSize);
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  return cost;
}
