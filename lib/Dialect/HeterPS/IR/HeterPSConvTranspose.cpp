//===- HeterPSConvTranspose.cpp - Transposed convolution ------------------===//
//
// Shape inference, verifier and cost of heterps.conv_transpose and its
// gradient. Both derive the result shape from one function, so the gradient
// checks its result gradient against the shape its forward op inferred.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::heterps;

namespace {

/// The attributes both ops have.
struct Attrs {
  std::optional<ArrayRef<int64_t>> strides, pads, dilations, outputPadding;
  int64_t group;
};

/// The result type of a transposed convolution of `input` by `filter`.
FailureOr<RankedTensorType> convTransposeType(RankedTensorType input,
                                              RankedTensorType filter,
                                              Value bias, const Attrs &a,
                                              std::optional<Location> loc) {
  constexpr StringLiteral op = "'heterps.conv_transpose' op ";
  int64_t spatial = input.getRank() - 2;
  if (spatial < 1)
    return emitOptionalError(loc, op, "input must be N x C x spatial..., got ",
                             "rank ", input.getRank());
  if (filter.getRank() != input.getRank())
    return emitOptionalError(loc, op, "filter has rank ", filter.getRank(),
                             ", expected ", input.getRank(),
                             " (C x M/group x kernel...)");
  if (filter.getElementType() != input.getElementType())
    return emitOptionalError(loc, op, "filter element type ",
                             filter.getElementType(), " differs from the ",
                             "input's ", input.getElementType());
  int64_t inChannels = filter.getDimSize(0);
  if (a.group < 1 ||
      (!ShapedType::isDynamic(inChannels) && inChannels % a.group != 0))
    return emitOptionalError(loc, op, "group ", a.group,
                             " must be positive and divide the filter's ",
                             inChannels, " input channels");
  if (!dimsAgree(input.getDimSize(1), inChannels))
    return emitOptionalError(loc, op, "input has ", input.getDimSize(1),
                             " channels, the filter ", inChannels);
  int64_t outChannels = ShapedType::isDynamic(filter.getDimSize(1))
                            ? ShapedType::kDynamic
                            : filter.getDimSize(1) * a.group;
  if (bias) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(bias.getType()).getShape();
    if (shape.size() != 1 || !dimsAgree(shape[0], outChannels))
      return emitOptionalError(loc, op, "bias must have shape ", outChannels,
                               ", got ", formatShape(shape));
  }
  auto expectSize = [&](std::optional<ArrayRef<int64_t>> v, StringRef name,
                        int64_t size) -> LogicalResult {
    if (v && static_cast<int64_t>(v->size()) != size)
      return emitOptionalError(loc, op, name, " has ", v->size(),
                               " entries, expected ", size);
    return success();
  };
  if (failed(expectSize(a.strides, "strides", spatial)) ||
      failed(expectSize(a.dilations, "dilations", spatial)) ||
      failed(expectSize(a.outputPadding, "output_padding", spatial)) ||
      failed(expectSize(a.pads, "pads", 2 * spatial)))
    return failure();
  SmallVector<int64_t> shape = {input.getDimSize(0), outChannels};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t stride = a.strides ? (*a.strides)[i] : 1;
    int64_t dilation = a.dilations ? (*a.dilations)[i] : 1;
    int64_t extra = a.outputPadding ? (*a.outputPadding)[i] : 0;
    int64_t padBegin = a.pads ? (*a.pads)[i] : 0;
    int64_t padEnd = a.pads ? (*a.pads)[i + spatial] : 0;
    if (stride < 1 || dilation < 1 || padBegin < 0 || padEnd < 0 || extra < 0 ||
        extra >= std::max(stride, dilation))
      return emitOptionalError(
          loc, op, "spatial dimension ", i, " has stride ", stride,
          ", dilation ", dilation, ", pads ", padBegin, "/", padEnd,
          ", output_padding ", extra,
          ": strides and dilations must be positive, pads non-negative, "
          "output_padding below the stride or the dilation");
    int64_t size = input.getDimSize(i + 2), kernel = filter.getDimSize(i + 2);
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(kernel)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    int64_t out = stride * (size - 1) + extra + dilation * (kernel - 1) + 1 -
                  padBegin - padEnd;
    if (size < 1 || out < 1)
      return emitOptionalError(loc, op, "spatial dimension ", i, " of size ",
                               size, " gives an output of ", out,
                               " (pads larger than the output)");
    shape.push_back(out);
  }
  return RankedTensorType::get(shape, input.getElementType());
}

/// FLOPs of the forward pass: each input element times the filter's
/// M/group x kernel taps, a multiply-add each.
double forwardFlops(RankedTensorType input, RankedTensorType filter,
                    int64_t batchSize) {
  double taps = getNumElements(filter, batchSize) / filter.getDimSize(0);
  return 2 * getNumElements(input, batchSize) * taps;
}

} // namespace

LogicalResult
ConvTransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  Attrs a{adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
          adaptor.getOutputPadding(), static_cast<int64_t>(adaptor.getGroup())};
  FailureOr<RankedTensorType> type =
      convTransposeType(cast<RankedTensorType>(adaptor.getInput().getType()),
                        cast<RankedTensorType>(adaptor.getFilter().getType()),
                        adaptor.getBias(), a, loc);
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

OpCost ConvTransposeOp::getCost(int64_t batchSize) {
  double flops =
      forwardFlops(getInput().getType(), getFilter().getType(), batchSize);
  double outputs = getNumElements(getResult().getType(), batchSize);
  OpCost cost;
  cost.forwardFlops = flops + (getBias() ? outputs : 0);
  // The input's gradient is a convolution, the filter's another.
  cost.backwardFlops = 2 * flops + outputs;
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  cost.backwardBytes = 2 * cost.forwardBytes;
  return cost;
}

LogicalResult ConvTransposeGradOp::verify() {
  Attrs a{getStrides(), getPads(), getDilations(), getOutputPadding(),
          static_cast<int64_t>(getGroup())};
  FailureOr<RankedTensorType> result = convTransposeType(
      getInput().getType(), getFilter().getType(), Value(), a, getLoc());
  if (failed(result))
    return failure();
  RankedTensorType dy = getResultGrad().getType();
  if (failed(verifyCompatibleShape(*result, dy)) ||
      result->getElementType() != dy.getElementType())
    return emitOpError() << "result gradient " << dy
                         << " is not of the forward op's result type "
                         << *result;
  if (getInputGrad().getType() != getInput().getType() ||
      getFilterGrad().getType() != getFilter().getType())
    return emitOpError() << "input and filter gradients must have the types "
                            "of the input and the filter";
  RankedTensorType bias = getBiasGrad().getType();
  if (bias.getRank() != 1 || !dimsAgree(bias.getDimSize(0), dy.getDimSize(1)))
    return emitOpError() << "bias gradient must have shape " << dy.getDimSize(1)
                         << " (the output channels), got "
                         << formatShape(bias.getShape());
  return success();
}

OpCost ConvTransposeGradOp::getCost(int64_t batchSize) {
  OpCost cost;
  cost.forwardFlops =
      2 * forwardFlops(getInput().getType(), getFilter().getType(), batchSize) +
      getNumElements(getResultGrad().getType(), batchSize);
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  return cost;
}
