//===- HeterPSONNXOps.cpp - Ops added for the ONNX frontend ---------------===//
//
// Shape inference and verifiers of the ops the ONNX importer needs beyond the
// model-layer set (dense gather, static slice, cast) and of the gathers' and
// slices' gradients, and the check of an embedding table's optional initial
// rows.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::heterps;

/// A gradient op's check that its result gradient has the type of the
/// forward op's result (`forward`, failed when that op's attributes are
/// wrong, already reported).
static LogicalResult verifyResultGrad(Operation *op,
                                      FailureOr<RankedTensorType> forward,
                                      RankedTensorType resultGrad,
                                      StringRef forwardName) {
  if (failed(forward))
    return failure();
  if (failed(verifyCompatibleShape(*forward, resultGrad)) ||
      forward->getElementType() != resultGrad.getElementType())
    return op->emitOpError()
           << "result gradient " << resultGrad << " is not of the "
           << forwardName << "'s result type " << *forward;
  return success();
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

/// The result type of gathering `indices` along `axis` of `data`.
static FailureOr<RankedTensorType>
gatherType(RankedTensorType data, RankedTensorType indices, int64_t axisAttr,
           std::optional<Location> loc, StringRef opName) {
  std::optional<int64_t> axis = normalizeAxis(axisAttr, data.getRank());
  if (!axis)
    return emitOptionalError(loc, opName, ": axis ", axisAttr,
                             " is out of range for rank ", data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  return RankedTensorType::get(shape, data.getElementType());
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> type =
      gatherType(cast<RankedTensorType>(adaptor.getData().getType()),
                 cast<RankedTensorType>(adaptor.getIndices().getType()),
                 adaptor.getAxis(), loc, getOperationName());
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult GatherGradOp::verify() {
  FailureOr<RankedTensorType> forward =
      gatherType(getData().getType(), getIndices().getType(), getAxis(),
                 getLoc(), getOperationName());
  return verifyResultGrad(*this, forward, getResultGrad().getType(), "gather");
}

/// The result type of gather_elements: the indices' shape, the data's
/// element type.
static FailureOr<RankedTensorType>
gatherElementsType(RankedTensorType data, RankedTensorType indices,
                   int64_t axisAttr, std::optional<Location> loc,
                   StringRef opName) {
  if (data.getRank() != indices.getRank())
    return emitOptionalError(loc, opName, ": indices of rank ",
                             indices.getRank(), " for data of rank ",
                             data.getRank());
  if (!normalizeAxis(axisAttr, data.getRank()))
    return emitOptionalError(loc, opName, ": axis ", axisAttr,
                             " is out of range for rank ", data.getRank());
  for (int64_t d = 0; d < data.getRank(); ++d) {
    int64_t i = indices.getDimSize(d), n = data.getDimSize(d);
    if (!ShapedType::isDynamic(i) && !ShapedType::isDynamic(n) && i > n &&
        d != *normalizeAxis(axisAttr, data.getRank()))
      return emitOptionalError(loc, opName, ": indices dimension ", d, " (", i,
                               ") is larger than the data's (", n, ")");
  }
  return RankedTensorType::get(indices.getShape(), data.getElementType());
}

LogicalResult
GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> type =
      gatherElementsType(cast<RankedTensorType>(adaptor.getData().getType()),
                         cast<RankedTensorType>(adaptor.getIndices().getType()),
                         adaptor.getAxis(), loc, getOperationName());
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult GatherElementsGradOp::verify() {
  FailureOr<RankedTensorType> forward =
      gatherElementsType(getData().getType(), getIndices().getType(), getAxis(),
                         getLoc(), getOperationName());
  return verifyResultGrad(*this, forward, getResultGrad().getType(), "gather");
}

//===----------------------------------------------------------------------===//
// ScatterElementsOp
//===----------------------------------------------------------------------===//

/// The checks scatter_elements and its gradient share: indices that
/// gather_elements could read from `data` with `updates` of their shape,
/// and a known reduction.
template <typename OpTy>
static LogicalResult verifyScatter(OpTy op, RankedTensorType data,
                                   RankedTensorType indices,
                                   RankedTensorType updates) {
  if (failed(gatherElementsType(data, indices, op.getAxis(), op.getLoc(),
                                op.getOperationName())))
    return failure();
  if (!shapesAgree(indices.getShape(), updates.getShape()))
    return op.emitOpError() << "updates " << formatShape(updates.getShape())
                            << " must have the indices' shape "
                            << formatShape(indices.getShape());
  if (op.getReduction() != "none" && op.getReduction() != "add")
    return op.emitOpError() << "reduction '" << op.getReduction()
                            << "' is not one of: none, add";
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  if (getUpdates().getType().getElementType() !=
      getData().getType().getElementType())
    return emitOpError() << "updates of " << getUpdates().getType()
                         << " for data of " << getData().getType();
  return verifyScatter(*this, getData().getType(), getIndices().getType(),
                       getUpdates().getType());
}

LogicalResult ScatterElementsGradOp::verify() {
  auto dy = cast<RankedTensorType>(getResultGrad().getType());
  if (getDataGrad().getType() != dy ||
      cast<RankedTensorType>(getUpdatesGrad().getType()).getElementType() !=
          dy.getElementType())
    return emitOpError() << "the data's gradient must have the result "
                            "gradient's type "
                         << dy << ", the updates' its element type";
  return verifyScatter(*this, dy, getIndices().getType(),
                       cast<RankedTensorType>(getUpdatesGrad().getType()));
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

/// The result type of slicing `input` (bounds clamped as ONNX does).
static FailureOr<RankedTensorType>
sliceType(RankedTensorType input, ArrayRef<int64_t> starts,
          ArrayRef<int64_t> ends, ArrayRef<int64_t> steps,
          std::optional<Location> loc, StringRef opName) {
  int64_t rank = input.getRank();
  if ((int64_t)starts.size() != rank || (int64_t)ends.size() != rank ||
      (int64_t)steps.size() != rank)
    return emitOptionalError(
        loc, opName, ": needs one start, end and step per dimension (", rank,
        "), got ", starts.size(), ", ", ends.size(), " and ", steps.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = input.getDimSize(d);
    if (steps[d] == 0)
      return emitOptionalError(loc, opName, ": step of dimension ", d,
                               " is zero");
    if (ShapedType::isDynamic(size)) {
      if (starts[d] != 0 || ends[d] != std::numeric_limits<int64_t>::max() ||
          steps[d] != 1)
        return emitOptionalError(
            loc, opName, ": dynamic dimension ", d,
            " must be kept whole (start 0, end INT64_MAX, step 1)");
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    // Bounds are clamped as ONNX does: [0, size] going forward, [-1, size-1]
    // going backward.
    int64_t step = steps[d];
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? size : size - 1;
    int64_t start = std::clamp(starts[d], lo, hi);
    int64_t end = std::clamp(ends[d], lo, hi);
    int64_t count = step > 0 ? (end - start + step - 1) / step
                             : (start - end - step - 1) / -step;
    shape.push_back(std::max<int64_t>(count, 0));
  }
  return RankedTensorType::get(shape, input.getElementType());
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> type = sliceType(
      cast<RankedTensorType>(adaptor.getInput().getType()), adaptor.getStarts(),
      adaptor.getEnds(), adaptor.getSteps(), loc, getOperationName());
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult SliceGradOp::verify() {
  FailureOr<RankedTensorType> forward =
      sliceType(getInput().getType(), getStarts(), getEnds(), getSteps(),
                getLoc(), getOperationName());
  return verifyResultGrad(*this, forward, getResultGrad().getType(), "slice");
}

//===----------------------------------------------------------------------===//
// PadOp, PadGradOp
//===----------------------------------------------------------------------===//

/// The result type of padding `input`.
static FailureOr<RankedTensorType>
padType(RankedTensorType input, StringRef mode, ArrayRef<int64_t> pads,
        std::optional<Location> loc, StringRef opName) {
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return emitOptionalError(loc, opName, ": unknown mode '", mode,
                             "'; expected constant, reflect or edge");
  int64_t rank = input.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return emitOptionalError(loc, opName, ": needs 2 x rank (", 2 * rank,
                             ") pads, got ", pads.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = pads[d], after = pads[rank + d];
    int64_t size = input.getDimSize(d);
    if (before < 0 || after < 0)
      return emitOptionalError(loc, opName, ": pads of dimension ", d, " (",
                               before, ", ", after, ") are negative");
    if (ShapedType::isDynamic(size)) {
      if (before || after)
        return emitOptionalError(loc, opName, ": dynamic dimension ", d,
                                 " cannot be padded");
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    if ((before || after) && mode == "reflect" &&
        (before >= size || after >= size))
      return emitOptionalError(loc, opName, ": reflect pads of dimension ", d,
                               " (", before, ", ", after,
                               ") must be below its size ", size);
    if ((before || after) && mode == "edge" && size == 0)
      return emitOptionalError(loc, opName,
                               ": edge pads of the empty "
                               "dimension ",
                               d);
    shape.push_back(size + before + after);
  }
  return RankedTensorType::get(shape, input.getElementType());
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> type =
      padType(cast<RankedTensorType>(adaptor.getInput().getType()),
              adaptor.getMode(), adaptor.getPads(), loc, getOperationName());
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult PadGradOp::verify() {
  FailureOr<RankedTensorType> forward = padType(
      getInput().getType(), getMode(), getPads(), getLoc(), getOperationName());
  return verifyResultGrad(*this, forward, getResultGrad().getType(), "pad");
}

//===----------------------------------------------------------------------===//
// CompareOp, LogicalOp, WhereOp
//===----------------------------------------------------------------------===//

/// The broadcast of `lhs` and `rhs` as an `i1` tensor.
static LogicalResult inferBoolBroadcast(std::optional<Location> loc,
                                        StringRef opName, Type lhs, Type rhs,
                                        SmallVectorImpl<Type> &inferred) {
  SmallVector<Type> shaped;
  if (failed(inferBroadcastResultType(loc, opName, lhs, rhs, shaped)))
    return failure();
  auto type = cast<RankedTensorType>(shaped.front());
  inferred.push_back(type.clone(IntegerType::get(lhs.getContext(), 1)));
  return success();
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferBoolBroadcast(loc, getOperationName(), adaptor.getLhs().getType(),
                            adaptor.getRhs().getType(), inferred);
}

LogicalResult LogicalOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferBoolBroadcast(loc, getOperationName(), adaptor.getLhs().getType(),
                            adaptor.getRhs().getType(), inferred);
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  SmallVector<Type> values;
  if (failed(inferBroadcastResultType(loc, getOperationName(),
                                      adaptor.getX().getType(),
                                      adaptor.getY().getType(), values)))
    return failure();
  auto valueType = cast<RankedTensorType>(values.front());
  // The condition broadcasts too: compare shapes with its element type
  // replaced by the values'.
  auto condition = cast<RankedTensorType>(adaptor.getCondition().getType())
                       .clone(valueType.getElementType());
  return inferBroadcastResultType(loc, getOperationName(), condition, valueType,
                                  inferred);
}

//===----------------------------------------------------------------------===//
// CumSumOp
//===----------------------------------------------------------------------===//

LogicalResult CumSumOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (!normalizeAxis(getAxis(), rank) || rank == 0)
    return emitOpError() << "axis " << static_cast<int64_t>(getAxis())
                         << " is out of range for rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// ArgExtremeOp
//===----------------------------------------------------------------------===//

/// The axis an index-producing reduction works along, normalised; reports
/// one out of range (every axis is, for a 0-D input).
static std::optional<int64_t> inferAxis(std::optional<Location> loc,
                                        StringRef opName, int64_t axis,
                                        int64_t rank) {
  std::optional<int64_t> normalized = normalizeAxis(axis, rank);
  if (!normalized || rank == 0) {
    (void)emitOptionalError(loc, opName, ": axis ", axis,
                            " is out of range for rank ", rank);
    return std::nullopt;
  }
  return normalized;
}

LogicalResult ArgExtremeOp::inferReturnTypes(MLIRContext *context,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  std::optional<int64_t> axis =
      inferAxis(loc, getOperationName(), adaptor.getAxis(), input.getRank());
  if (!axis)
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  if (adaptor.getKeepdims())
    shape[*axis] = 1;
  else
    shape.erase(shape.begin() + *axis);
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// TopKIndicesOp
//===----------------------------------------------------------------------===//

LogicalResult TopKIndicesOp::inferReturnTypes(MLIRContext *context,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  std::optional<int64_t> axis =
      inferAxis(loc, getOperationName(), adaptor.getAxis(), input.getRank());
  if (!axis)
    return failure();
  int64_t k = adaptor.getK(), size = input.getDimSize(*axis);
  if (k < 0 || (!ShapedType::isDynamic(size) && k > size))
    return emitOptionalError(loc, getOperationName(), ": k = ", k,
                             " is not between 0 and the axis' size ",
                             formatShape({size}));
  SmallVector<int64_t> shape(input.getShape());
  shape[*axis] = k;
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  Type from = getInput().getType().getElementType();
  Type to = getType().getElementType();
  auto numeric = [](Type t) { return t.isIntOrIndexOrFloat(); };
  if (!numeric(from) || !numeric(to))
    return emitOpError() << "casts numbers only, got " << from << " to " << to;
  return success();
}

//===----------------------------------------------------------------------===//
// WeightedNLLLossOp
//===----------------------------------------------------------------------===//

LogicalResult
WeightedNLLLossOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  auto logProbs = cast<RankedTensorType>(adaptor.getLogProbs().getType());
  auto label = cast<RankedTensorType>(adaptor.getLabel().getType());
  if (logProbs.getRank() < 2)
    return emitOptionalError(loc, getOperationName(),
                             ": log_probs must be N x C x ..., got rank ",
                             logProbs.getRank());
  SmallVector<int64_t> perSample(logProbs.getShape());
  int64_t classes = perSample[1];
  perSample.erase(perSample.begin() + 1);
  ArrayRef<int64_t> labels = label.getShape();
  bool agree = (int64_t)labels.size() == (int64_t)perSample.size();
  for (size_t d = 0; agree && d < labels.size(); ++d)
    agree = labels[d] == perSample[d] || ShapedType::isDynamic(labels[d]) ||
            ShapedType::isDynamic(perSample[d]);
  if (!agree)
    return emitOptionalError(loc, getOperationName(), ": labels of shape ",
                             formatShape(labels), " do not match log_probs ",
                             formatShape(logProbs.getShape()),
                             " without dimension 1");
  if (Value weight = adaptor.getWeight()) {
    auto w = cast<RankedTensorType>(weight.getType());
    if (w.getRank() != 1 ||
        (w.getDimSize(0) != classes && !ShapedType::isDynamic(classes)))
      return emitOptionalError(loc, getOperationName(), ": weight of shape ",
                               formatShape(w.getShape()), " must have one of ",
                               classes, " classes");
  }
  if (adaptor.getReduction() == LossReduction::none)
    inferred.push_back(
        RankedTensorType::get(perSample, logProbs.getElementType()));
  else
    inferred.push_back(RankedTensorType::get({}, logProbs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ExpandOp
//===----------------------------------------------------------------------===//

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> target = adaptor.getShape();
  if (llvm::any_of(target, [](int64_t d) { return d < 0; }))
    return emitOptionalError(loc, getOperationName(), ": target shape ",
                             formatShape(target),
                             " must have non-negative sizes");
  size_t rank = std::max<size_t>(input.getRank(), target.size());
  SmallVector<int64_t> in(rank - input.getRank(), 1),
      to(rank - target.size(), 1);
  llvm::append_range(in, input.getShape());
  llvm::append_range(to, target);
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    if (in[d] == to[d] || to[d] == 1) {
      shape.push_back(in[d]);
    } else if (in[d] == 1) {
      shape.push_back(to[d]);
    } else {
      return emitOptionalError(loc, getOperationName(), ": cannot broadcast ",
                               formatShape(input.getShape()), " to ",
                               formatShape(target));
    }
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ScatterNDOp
//===----------------------------------------------------------------------===//

/// The checks scatter_nd and its gradient share: index tuples of k <= rank
/// entries and updates of shape indices[:-1] + data[k:].
template <typename OpTy>
static LogicalResult
verifyScatterND(OpTy op, RankedTensorType data, RankedTensorType indices,
                RankedTensorType updates, ArrayRef<StringRef> reductions) {
  if (!llvm::is_contained(reductions, op.getReduction()))
    return op.emitOpError()
           << "reduction '" << op.getReduction()
           << "' is not one of: " << llvm::join(reductions, ", ");
  if (indices.getRank() < 1 || ShapedType::isDynamic(indices.getShape().back()))
    return op.emitOpError() << "indices must end in a static tuple size, got "
                            << formatShape(indices.getShape());
  int64_t k = indices.getShape().back();
  if (k < 1 || k > data.getRank())
    return op.emitOpError() << "index tuples of " << k
                            << " entries for data of rank " << data.getRank();
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(k));
  if (!shapesAgree(expected, updates.getShape()))
    return op.emitOpError() << "updates " << formatShape(updates.getShape())
                            << " must have shape " << formatShape(expected)
                            << " (indices[:-1] + data[" << k << ":])";
  return success();
}

LogicalResult ScatterNDOp::verify() {
  if (getUpdates().getType().getElementType() !=
      getData().getType().getElementType())
    return emitOpError() << "updates of " << getUpdates().getType()
                         << " for data of " << getData().getType();
  return verifyScatterND(*this, getData().getType(), getIndices().getType(),
                         getUpdates().getType(), {"none", "add", "mul"});
}

LogicalResult ScatterNDGradOp::verify() {
  auto dy = cast<RankedTensorType>(getResultGrad().getType());
  auto du = cast<RankedTensorType>(getUpdatesGrad().getType());
  if (getDataGrad().getType() != dy ||
      du.getElementType() != dy.getElementType())
    return emitOpError() << "the data's gradient must have the result "
                            "gradient's type "
                         << dy << ", the updates' its element type";
  return verifyScatterND(*this, dy, getIndices().getType(), du,
                         {"none", "add"});
}
