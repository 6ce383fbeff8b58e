//===- HeterPSShapes.h - Shape rules of HeterPS ops -------------*- C++ -*-===//
//
// The shape rules shared by several ops: type inference and verification use
// the same functions, so that an op built without result types and an op
// parsed with them agree. Errors go to `location` when there is one.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSSHAPES_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSSHAPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OpDefinition.h"

#include <optional>
#include <string>

namespace mlir {
namespace heterps {

/// Two dimensions agree when equal or when either is dynamic.
bool dimsAgree(int64_t a, int64_t b);
/// Shapes of one rank whose dimensions agree.
bool shapesAgree(ArrayRef<int64_t> a, ArrayRef<int64_t> b);

/// Batch normalisation's operands: `input` is N x C x ..., and each of
/// `perChannel` (name, value) has shape C.
LogicalResult
verifyBatchNormOperands(Operation *op, RankedTensorType input,
                        ArrayRef<std::pair<StringRef, Value>> perChannel);

/// Formats a shape as `4x?x8` (`scalar` for rank 0).
std::string formatShape(ArrayRef<int64_t> shape);

/// Normalises a possibly negative `axis` for `rank`; std::nullopt when it is
/// out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Emits "axis A is out of range for a rank-R input" on `op` when it is.
LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank);

/// NumPy broadcasting of two tensors with one element type.
LogicalResult inferBroadcastResultType(std::optional<Location> location,
                                       StringRef opName, Type lhs, Type rhs,
                                       SmallVectorImpl<Type> &inferred);

/// The result of reducing `input` over `axes` (all when empty).
LogicalResult inferReduceResultType(std::optional<Location> location,
                                    StringRef opName, Type input,
                                    ArrayRef<int64_t> axes, bool keepdims,
                                    SmallVectorImpl<Type> &inferred);

/// The result of pooling `input` (N x C x spatial...).
LogicalResult inferPoolResultType(std::optional<Location> location,
                                  StringRef opName, Type input,
                                  ArrayRef<int64_t> kernelShape,
                                  std::optional<ArrayRef<int64_t>> strides,
                                  std::optional<ArrayRef<int64_t>> pads,
                                  std::optional<ArrayRef<int64_t>> dilations,
                                  bool ceilMode,
                                  SmallVectorImpl<Type> &inferred);

} // namespace heterps
} // namespace mlir

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSSHAPES_H
