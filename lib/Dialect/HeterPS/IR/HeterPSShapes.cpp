//===- HeterPSShapes.cpp - Shape rules of HeterPS ops ---------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::heterps;

std::string mlir::heterps::formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os,
      [&](int64_t dim) {
        if (ShapedType::isDynamic(dim))
          os << '?';
        else
          os << dim;
      },
      "x");
  return text;
}

bool mlir::heterps::dimsAgree(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}

bool mlir::heterps::shapesAgree(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip_equal(a, b))
    if (!dimsAgree(x, y))
      return false;
  return true;
}

LogicalResult mlir::heterps::verifyBatchNormOperands(
    Operation *op, RankedTensorType input,
    ArrayRef<std::pair<StringRef, Value>> perChannel) {
  if (input.getRank() < 2)
    return op->emitOpError()
           << "input must be N x C x ..., got rank " << input.getRank();
  int64_t channels = input.getDimSize(1);
  for (auto [name, value] : perChannel) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 1 || !dimsAgree(type.getDimSize(0), channels))
      return op->emitOpError() << name << " must have shape " << channels
                               << " (the channels of the input), got "
                               << formatShape(type.getShape());
  }
  return success();
}

std::optional<int64_t> mlir::heterps::normalizeAxis(int64_t axis,
                                                    int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

LogicalResult mlir::heterps::verifyAxis(Operation *op, int64_t axis,
                                        int64_t rank) {
  if (!normalizeAxis(axis, rank))
    return op->emitOpError()
           << "axis " << axis << " is out of range for a rank-" << rank
           << " input";
  return success();
}

/// Broadcasts two dimensions; a dynamic one is taken to match the other.
static std::optional<int64_t> broadcastDim(int64_t a, int64_t b) {
  if (a == 1)
    return b;
  if (b == 1 || a == b)
    return a;
  if (ShapedType::isDynamic(a))
    return b;
  if (ShapedType::isDynamic(b))
    return a;
  return std::nullopt;
}

LogicalResult
mlir::heterps::inferBroadcastResultType(std::optional<Location> location,
                                        StringRef opName, Type lhs, Type rhs,
                                        SmallVectorImpl<Type> &inferred) {
  auto lhsType = cast<RankedTensorType>(lhs);
  auto rhsType = cast<RankedTensorType>(rhs);
  if (lhsType.getElementType() != rhsType.getElementType())
    return emitOptionalError(
        location, "'", opName, "' op operands have different element types: ",
        lhsType.getElementType(), " and ", rhsType.getElementType());
  ArrayRef<int64_t> a = lhsType.getShape(), b = rhsType.getShape();
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> shape(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    std::optional<int64_t> dim = broadcastDim(da, db);
    if (!dim)
      return emitOptionalError(location, "'", opName, "' op operand shapes ",
                               formatShape(a), " and ", formatShape(b),
                               " do not broadcast (dimension ", i, ": ", da,
                               " vs ", db, ")");
    shape[i] = *dim;
  }
  inferred.push_back(RankedTensorType::get(shape, lhsType.getElementType()));
  return success();
}

LogicalResult mlir::heterps::inferReduceResultType(
    std::optional<Location> location, StringRef opName, Type input,
    ArrayRef<int64_t> axes, bool keepdims, SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(input);
  int64_t rank = type.getRank();
  llvm::SmallSet<int64_t, 4> reduced;
  for (int64_t axis : axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized)
      return emitOptionalError(location, "'", opName, "' op axis ", axis,
                               " is out of range for a rank-", rank, " input");
    if (!reduced.insert(*normalized).second)
      return emitOptionalError(location, "'", opName, "' op axis ", axis,
                               " is reduced twice");
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    bool isReduced = axes.empty() || reduced.contains(i);
    if (!isReduced)
      shape.push_back(type.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

/// The output size of a window of `kernel` sliding with `stride` over `size`
/// padded by `padBegin` and `padEnd`; nullopt when the window does not fit.
static std::optional<int64_t> windowOutputSize(int64_t size, int64_t kernel,
                                               int64_t stride, int64_t padBegin,
                                               int64_t padEnd, bool ceilMode) {
  if (ShapedType::isDynamic(size))
    return ShapedType::kDynamic;
  int64_t span = size + padBegin + padEnd - kernel;
  if (span < 0)
    return std::nullopt;
  int64_t steps = ceilMode ? (span + stride - 1) / stride : span / stride;
  // As in ONNX and PyTorch, the last window must start inside the input or
  // the leading padding.
  if (ceilMode && steps * stride >= size + padBegin)
    --steps;
  return steps + 1;
}

LogicalResult mlir::heterps::inferPoolResultType(
    std::optional<Location> location, StringRef opName, Type input,
    ArrayRef<int64_t> kernelShape, std::optional<ArrayRef<int64_t>> strides,
    std::optional<ArrayRef<int64_t>> pads,
    std::optional<ArrayRef<int64_t>> dilations, bool ceilMode,
    SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(input);
  int64_t spatial = type.getRank() - 2;
  if (spatial < 1)
    return emitOptionalError(location, "'", opName,
                             "' op input must be N x C x spatial..., got rank ",
                             type.getRank());
  if (static_cast<int64_t>(kernelShape.size()) != spatial)
    return emitOptionalError(location, "'", opName, "' op kernel_shape has ",
                             kernelShape.size(), " entries for ", spatial,
                             " spatial dimensions");
  if (strides && static_cast<int64_t>(strides->size()) != spatial)
    return emitOptionalError(location, "'", opName, "' op strides has ",
                             strides->size(), " entries for ", spatial,
                             " spatial dimensions");
  if (dilations && static_cast<int64_t>(dilations->size()) != spatial)
    return emitOptionalError(location, "'", opName, "' op dilations has ",
                             dilations->size(), " entries for ", spatial,
                             " spatial dimensions");
  if (pads && static_cast<int64_t>(pads->size()) != 2 * spatial)
    return emitOptionalError(location, "'", opName, "' op pads has ",
                             pads->size(), " entries, expected ", 2 * spatial,
                             " (begins then ends)");
  SmallVector<int64_t> shape = {type.getDimSize(0), type.getDimSize(1)};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t stride = strides ? (*strides)[i] : 1;
    int64_t dilation = dilations ? (*dilations)[i] : 1;
    int64_t pad = pads ? (*pads)[i] + (*pads)[i + spatial] : 0;
    // Bounded so that the window's span cannot overflow.
    constexpr int64_t kMaxWindow = int64_t(1) << 20;
    if (kernelShape[i] < 1 || stride < 1 || dilation < 1 || pad < 0 ||
        kernelShape[i] > kMaxWindow || dilation > kMaxWindow)
      return emitOptionalError(
          location, "'", opName, "' op spatial dimension ", i, " has kernel ",
          kernelShape[i], ", stride ", stride, ", dilation ", dilation,
          ", padding ", pad,
          ": kernels, strides and dilations must be positive (kernels and "
          "dilations at most 2^20), padding non-negative");
    int64_t padBegin = pads ? (*pads)[i] : 0;
    int64_t span = (kernelShape[i] - 1) * dilation + 1;
    std::optional<int64_t> size =
        windowOutputSize(type.getDimSize(i + 2), span, stride, padBegin,
                         pad - padBegin, ceilMode);
    if (!size)
      return emitOptionalError(location, "'", opName, "' op window of ", span,
                               " does not fit spatial size ",
                               type.getDimSize(i + 2), " (padding ", pad,
                               ") in dimension ", i + 2);
    shape.push_back(*size);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}
