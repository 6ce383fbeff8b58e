//===- HeterPSTrainingOps.cpp - Backward ops and optimizer updates --------===//
//
// Verifiers and costs of the ops that heterps-autodiff writes. Their shapes
// follow the forward ops they differentiate, so most checks are that the
// kinds are ones the runtime implements and that each gradient has the type
// of what it is the gradient of (the kinds are enums, so the parser already
// refused the ones the runtime does not implement). A backward op's cost is the
// work of the backward pass it computes, as its forward cost; nothing
// differentiates it again, so its backward cost is zero.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::heterps;

LogicalResult UnaryGradOp::verify() {
  if (getKind() == UnaryKind::dropout && (!getRatio() || !getDropoutId()))
    return emitOpError() << "dropout gradient needs 'ratio' and 'dropout_id'";
  return success();
}

LogicalResult SumToShapeOp::verify() {
  auto value = cast<RankedTensorType>(getValue().getType());
  auto like = cast<RankedTensorType>(getLike().getType());
  if (value.getElementType() != like.getElementType())
    return emitOpError() << "element types differ: " << value << " and "
                         << like;
  if (like.getRank() > value.getRank())
    return emitOpError() << "cannot sum " << value << " to the higher rank "
                         << like;
  // Broadcasting aligns trailing dimensions; each target dimension is either
  // kept (equal sizes) or summed down to 1.
  int64_t offset = value.getRank() - like.getRank();
  for (int64_t i = 0; i < like.getRank(); ++i) {
    int64_t to = like.getDimSize(i), from = value.getDimSize(i + offset);
    if (to != 1 && to != from && !ShapedType::isDynamic(to) &&
        !ShapedType::isDynamic(from))
      return emitOpError() << "dimension " << i << " of " << like
                           << " is not a broadcast of " << value;
  }
  return success();
}

LogicalResult ReduceGradOp::verify() {
  if (getResult().getType() != getResultGrad().getType())
    return emitOpError() << "result gradient type " << getResultGrad().getType()
                         << " differs from the result type "
                         << getResult().getType();
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  for (int64_t axis : getAxes())
    if (axis < -rank || axis >= rank)
      return emitOpError() << "axis " << axis << " is out of range for rank "
                           << rank;
  return success();
}

LogicalResult LossGradOp::verify() {
  if (getPredictionGrad().getType() != getPrediction().getType())
    return emitOpError() << "gradient type " << getPredictionGrad().getType()
                         << " differs from the prediction type "
                         << getPrediction().getType();
  if (getWeight() && getKind() != LossKind::weighted_nll)
    return emitOpError() << "only weighted_nll takes class weights";
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  auto keys = cast<RankedTensorType>(getKeys().getType());
  auto rows = cast<RankedTensorType>(getRows().getType());
  auto grad = cast<RankedTensorType>(getResultGrad().getType());
  if (keys.getRank() != 1 || rows.getRank() != 2)
    return emitOpError() << "keys must be 1-D and rows 2-D, got " << keys
                         << " and " << rows;
  if (rows.getDimSize(1) != grad.getDimSize(grad.getRank() - 1))
    return emitOpError() << "row width " << rows.getDimSize(1)
                         << " differs from the gradient's last dimension "
                         << grad.getDimSize(grad.getRank() - 1);
  return success();
}

LogicalResult UpdateParamOp::verify() {
  if (getLearningRate().convertToDouble() < 0)
    return emitOpError() << "negative learning rate "
                         << getLearningRate().convertToDouble();
  return success();
}

LogicalResult
UpdateParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = dyn_cast_or_null<ParamOp>(
      symbolTable.lookupNearestSymbolFrom(*this, getNameAttr()));
  if (!param)
    return emitOpError() << "@" << getName()
                         << " does not name a heterps.param";
  if (param.getFrozen())
    return emitOpError() << "parameter @" << getName()
                         << " is frozen and cannot be updated";
  if (param.getType() != getGradient().getType())
    return emitOpError() << "gradient type " << getGradient().getType()
                         << " does not match parameter @" << getName()
                         << " of type " << param.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Shapes of the layer gradients
//===----------------------------------------------------------------------===//

/// `grad` must have the type of `of`, whose gradient it is.
static LogicalResult verifyGradType(Operation *op, StringRef gradName,
                                    Value grad, StringRef ofName, Value of) {
  if (grad.getType() != of.getType())
    return op->emitOpError()
           << gradName << " type " << grad.getType() << " differs from the "
           << ofName << " type " << of.getType();
  return success();
}

/// `values` has `expected` entries when present.
static LogicalResult verifyCount(Operation *op, StringRef name,
                                 std::optional<ArrayRef<int64_t>> values,
                                 int64_t expected, StringRef what) {
  if (values && static_cast<int64_t>(values->size()) != expected)
    return op->emitOpError()
           << name << " has " << values->size() << " entries, expected "
           << expected << " (" << what << ")";
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(*this, getAxis(), getResult().getType().getRank());
}

LogicalResult ConvGradOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType filter = getFilter().getType();
  int64_t spatial = input.getRank() - 2;
  if (spatial < 1)
    return emitOpError() << "input must be N x C x spatial..., got rank "
                         << input.getRank();
  if (filter.getRank() != input.getRank() ||
      getResultGrad().getType().getRank() != input.getRank())
    return emitOpError() << "filter and result gradient must have the input's "
                         << "rank " << input.getRank() << ", got "
                         << filter.getRank() << " and "
                         << getResultGrad().getType().getRank();
  if (failed(verifyGradType(*this, "input gradient", getInputGrad(), "input",
                            getInput())) ||
      failed(verifyGradType(*this, "filter gradient", getFilterGrad(), "filter",
                            getFilter())))
    return failure();
  RankedTensorType bias = getBiasGrad().getType();
  int64_t outChannels = filter.getDimSize(0);
  if (bias.getRank() != 1 || !dimsAgree(bias.getDimSize(0), outChannels))
    return emitOpError() << "bias gradient must have shape " << outChannels
                         << " (the filter's first dimension), got "
                         << formatShape(bias.getShape());
  if (!dimsAgree(getResultGrad().getType().getDimSize(1), outChannels))
    return emitOpError() << "result gradient has "
                         << getResultGrad().getType().getDimSize(1)
                         << " channels, the filter " << outChannels;
  int64_t group = getGroup();
  if (group < 1 ||
      (!ShapedType::isDynamic(outChannels) && outChannels % group != 0))
    return emitOpError() << "group " << group << " must be positive and divide "
                         << "the " << outChannels << " output channels";
  if (failed(verifyCount(*this, "strides", getStrides(), spatial,
                         "one per spatial dimension")) ||
      failed(verifyCount(*this, "dilations", getDilations(), spatial,
                         "one per spatial dimension")) ||
      failed(verifyCount(*this, "pads", getPads(), 2 * spatial,
                         "begins then ends")))
    return failure();
  return success();
}

LogicalResult PoolGradOp::verify() {
  int64_t spatial = getInput().getType().getRank() - 2;
  if (spatial < 1)
    return emitOpError() << "input must be N x C x spatial..., got rank "
                         << getInput().getType().getRank();
  if (failed(verifyGradType(*this, "result gradient", getResultGrad(), "result",
                            getResult())) ||
      failed(verifyCount(*this, "kernel_shape", getKernelShape(), spatial,
                         "one per spatial dimension")) ||
      failed(verifyCount(*this, "strides", getStrides(), spatial,
                         "one per spatial dimension")) ||
      failed(verifyCount(*this, "dilations", getDilations(), spatial,
                         "one per spatial dimension")) ||
      failed(verifyCount(*this, "pads", getPads(), 2 * spatial,
                         "begins then ends")))
    return failure();
  for (int64_t k : getKernelShape())
    if (k < 1)
      return emitOpError() << "kernel_shape entries must be positive, got "
                           << k;
  return success();
}

/// A normalisation's gradients have the types of what they are the
/// gradients of: the input's, and the scale's for scale and bias.
template <typename OpTy> static LogicalResult verifyNormGradTypes(OpTy op) {
  if (failed(verifyGradType(op, "result gradient", op.getResultGrad(), "input",
                            op.getInput())) ||
      failed(verifyGradType(op, "input gradient", op.getInputGrad(), "input",
                            op.getInput())) ||
      failed(verifyGradType(op, "scale gradient", op.getScaleGrad(), "scale",
                            op.getScale())) ||
      failed(verifyGradType(op, "bias gradient", op.getBiasGrad(), "scale",
                            op.getScale())))
    return failure();
  return success();
}

LogicalResult BatchNormGradOp::verify() {
  if (failed(verifyBatchNormOperands(*this, getInput().getType(),
                                     {{"scale", getScale()}})))
    return failure();
  return verifyNormGradTypes(*this);
}

LogicalResult LayerNormGradOp::verify() {
  RankedTensorType input = getInput().getType();
  std::optional<int64_t> axis = normalizeAxis(getAxis(), input.getRank());
  if (!axis)
    return emitOpError() << "axis " << static_cast<int64_t>(getAxis())
                         << " is out of range for a rank-" << input.getRank()
                         << " input";
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  ArrayRef<int64_t> scale = getScale().getType().getShape();
  if (!shapesAgree(scale, normalized))
    return emitOpError() << "scale must have shape " << formatShape(normalized)
                         << " (the normalised dimensions), got "
                         << formatShape(scale);
  return verifyNormGradTypes(*this);
}

//===----------------------------------------------------------------------===//
// Costs of the backward ops
//===----------------------------------------------------------------------===//

/// A backward op doing `flops`, touching each operand and result once.
static OpCost getBackwardOpCost(Operation *op, int64_t batchSize,
                                double flops) {
  OpCost cost;
  cost.forwardFlops = flops;
  cost.forwardBytes = getOperandAndResultBytes(op, batchSize);
  return cost;
}

OpCost UnaryGradOp::getCost(int64_t batchSize) {
  // The result gradient times the op's derivative: a multiply, plus the
  // derivative's own arithmetic for the smooth kinds.
  double perElement = 1.0;
  switch (getKind()) {
  case UnaryKind::sigmoid:
  case UnaryKind::tanh:
    perElement = 3.0;
    break;
  case UnaryKind::erf:
    perElement = 4.0;
    break;
  case UnaryKind::log:
  case UnaryKind::sqrt:
  case UnaryKind::exp:
    perElement = 2.0;
    break;
  default:
    break;
  }
  return getBackwardOpCost(
      *this, batchSize,
      perElement * getNumElements(getInputGrad().getType(), batchSize));
}

OpCost SoftmaxGradOp::getCost(int64_t batchSize) {
  // A product and a sum along the axis, then a multiply-subtract.
  return getBackwardOpCost(
      *this, batchSize, 4 * getNumElements(getResult().getType(), batchSize));
}

OpCost ReduceGradOp::getCost(int64_t batchSize) {
  return getBackwardOpCost(*this, batchSize,
                           getNumElements(getInput().getType(), batchSize));
}

OpCost LossGradOp::getCost(int64_t batchSize) {
  return getBackwardOpCost(
      *this, batchSize,
      3 * getNumElements(getPrediction().getType(), batchSize));
}

OpCost EmbeddingGradOp::getCost(int64_t batchSize) {
  // Every key's row is the result gradient's row, scaled for mean.
  return getBackwardOpCost(*this, batchSize,
                           getNumElements(getRows().getType(), batchSize));
}

OpCost ConvGradOp::getCost(int64_t batchSize) {
  // The input and the filter gradients are each a dot product over the
  // window per output element; the bias gradient sums the outputs.
  RankedTensorType filter = getFilter().getType();
  double window = getNumElements(filter, batchSize) / filter.getDimSize(0);
  double outputs = getNumElements(getResultGrad().getType(), batchSize);
  return getBackwardOpCost(*this, batchSize, 4 * outputs * window + outputs);
}

OpCost PoolGradOp::getCost(int64_t batchSize) {
  double window = 1;
  for (int64_t k : getKernelShape())
    window *= k;
  return getBackwardOpCost(
      *this, batchSize,
      window * getNumElements(getResult().getType(), batchSize));
}

OpCost BatchNormGradOp::getCost(int64_t batchSize) {
  // Two reductions over the batch and spatial dimensions, the statistics
  // again, and the elementwise input gradient.
  return getBackwardOpCost(
      *this, batchSize, 10 * getNumElements(getInput().getType(), batchSize));
}

OpCost LayerNormGradOp::getCost(int64_t batchSize) {
  return getBackwardOpCost(
      *this, batchSize, 12 * getNumElements(getInput().getType(), batchSize));
}
