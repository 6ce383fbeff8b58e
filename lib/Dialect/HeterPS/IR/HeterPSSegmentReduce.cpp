//===- HeterPSSegmentReduce.cpp - Reductions over runs of rows ------------===//
//
// Verifiers of heterps.segment_reduce and its gradient: one result row per
// offset, the rows' trailing dimensions kept.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::heterps;

/// The checks segment_reduce and its gradient share: a sum, mean or max
/// over rows of `data`, 1-D `offsets` and a `result` of one row per offset.
template <typename OpTy>
static LogicalResult verifySegmentReduce(OpTy op, RankedTensorType data,
                                         RankedTensorType offsets,
                                         RankedTensorType result) {
  ReduceKind kind = op.getKind();
  if (kind != ReduceKind::sum && kind != ReduceKind::mean &&
      kind != ReduceKind::max)
    return op.emitOpError() << "reduces runs by sum, mean or max, not "
                            << stringifyReduceKind(kind);
  if (data.getRank() < 1)
    return op.emitOpError() << "needs data with rows (rank >= 1), got " << data;
  if (offsets.getRank() != 1)
    return op.emitOpError() << "offsets must be 1-D, got " << offsets;
  if (result.getElementType() != data.getElementType())
    return op.emitOpError()
           << "the result's element type must be the data's ("
           << data.getElementType() << "), got " << result.getElementType();
  SmallVector<int64_t> expected{offsets.getDimSize(0)};
  llvm::append_range(expected, data.getShape().drop_front());
  if (!shapesAgree(expected, result.getShape()))
    return op.emitOpError()
           << "the result " << formatShape(result.getShape())
           << " must have one row per offset and the data's rows: "
           << formatShape(expected);
  return success();
}

LogicalResult SegmentReduceOp::verify() {
  return verifySegmentReduce(*this, getData().getType(), getOffsets().getType(),
                             cast<RankedTensorType>(getResult().getType()));
}

LogicalResult SegmentReduceGradOp::verify() {
  return verifySegmentReduce(*this, getData().getType(), getOffsets().getType(),
                             cast<RankedTensorType>(getResultGrad().getType()));
}
