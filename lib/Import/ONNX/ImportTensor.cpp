//===- ImportTensor.cpp - ONNX indexing and layout ops --------------------===//
//
// Identity, Shape, Transpose, GatherElements, ScatterElements, ScatterND,
// CumSum, ArgMax and ArgMin. Shape is folded: the sizes become a known
// integer tensor (a dynamic batch stays a run-time entry with its
// multiple of the batch).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;

LogicalResult Importer::convertScatterElements() {
  FailureOr<Value> data = input(0), indices = input(1), updates = input(2);
  if (failed(data) || failed(indices) || failed(updates))
    return failure();
  std::string reduction = stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return nodeError() << "reduction '" << reduction
                       << "' is not supported (none or add)";
  if (!isa<IntegerType>(typeOf(*indices).getElementType()))
    return nodeError() << "indices must be integers, got " << typeOf(*indices);
  setOutput(ScatterElementsOp::create(
      b, loc, typeOf(*data), *data, *indices, *updates,
      b.getI64IntegerAttr(intAttr("axis", 0)), b.getStringAttr(reduction)));
  return success();
}

LogicalResult Importer::convertScatterND() {
  FailureOr<Value> data = input(0), indices = input(1), updates = input(2);
  if (failed(data) || failed(indices) || failed(updates))
    return failure();
  std::string reduction = stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return nodeError() << "reduction '" << reduction
                       << "' is not supported (none, add or mul)";
  if (!isa<IntegerType>(typeOf(*indices).getElementType()))
    return nodeError() << "indices must be integers, got " << typeOf(*indices);
  setOutput(ScatterNDOp::create(b, loc, typeOf(*data), *data, *indices,
                                *updates, b.getStringAttr(reduction)));
  return success();
}

LogicalResult Importer::convertGatherElements() {
  FailureOr<Value> data = input(0), indices = input(1);
  if (failed(data) || failed(indices))
    return failure();
  return emit(make<GatherElementsOp>(*data, *indices,
                                     b.getI64IntegerAttr(intAttr("axis", 0))));
}

LogicalResult Importer::convertCumSum() {
  const Known *axis = known(1);
  if (!axis || axis->isFloat() || axis->size() != 1 || !axis->complete())
    return nodeError() << "the axis must be an integer scalar known at "
                          "import time";
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  if (rank == 0 || !normalizeAxis(axis->ints[0], rank))
    return nodeError() << "axis " << axis->ints[0]
                       << " is out of range for rank " << rank;
  setOutput(CumSumOp::create(b, loc, x->getType(), *x,
                             b.getI64IntegerAttr(axis->ints[0]),
                             b.getBoolAttr(intAttr("exclusive", 0) != 0),
                             b.getBoolAttr(intAttr("reverse", 0) != 0)));
  return success();
}

LogicalResult Importer::convertArgExtreme(StringRef op) {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  return emit(make<ArgExtremeOp>(
      ExtremeKindAttr::get(b.getContext(), op == "ArgMax" ? ExtremeKind::max
                                                          : ExtremeKind::min),
      *x, b.getI64IntegerAttr(intAttr("axis", 0)),
      b.getBoolAttr(intAttr("keepdims", 1) != 0),
      b.getBoolAttr(intAttr("select_last_index", 0) != 0)));
}

LogicalResult Importer::convertIdentity() {
  if (const Known *k = foldable(0)) {
    setKnown(*k);
    return success();
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  setOutput(*x);
  return success();
}

LogicalResult Importer::convertShape() {
  Ints shape;
  BatchMultiple multiple;
  if (const Known *k = known(0)) {
    shape = k->shape;
  } else {
    FailureOr<Value> x = input(0);
    if (failed(x))
      return failure();
    shape.assign(typeOf(*x).getShape().begin(), typeOf(*x).getShape().end());
    multiple = batchMultipleOf(*x);
  }
  int64_t rank = shape.size();
  int64_t start = intAttr("start", 0), end = intAttr("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  Known k;
  k.elementType = b.getI64Type();
  for (int64_t d = start; d < end; ++d) {
    if (ShapedType::isDynamic(shape[d]))
      k.pushDynamic(multiple);
    else
      k.ints.push_back(shape[d]);
  }
  k.shape.push_back(k.ints.size());
  setKnown(k);
  return success();
}

LogicalResult Importer::convertTranspose() {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  Ints perm;
  for (int64_t d = rank - 1; d >= 0; --d)
    perm.push_back(d);
  perm = intsAttr("perm").value_or(perm);
  return emit(make<TransposeOp>(*x, b.getDenseI64ArrayAttr(perm)));
}

/// TopK as the indices (heterps.top_k_indices) and a gather_elements of
/// them for the values, whose gradient is a scatter-add.
LogicalResult Importer::convertTopK() {
  int64_t k;
  if (opset < 10) {
    k = intAttr("k", -1);
  } else {
    const Known *known1 = known(1);
    if (!known1 || known1->isFloat() || known1->size() != 1 ||
        !known1->complete())
      return nodeError() << "K must be a one-element integer tensor known at "
                            "import time";
    k = known1->ints[0];
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  int64_t axis = intAttr("axis", -1);
  FailureOr<Value> indices =
      make<TopKIndicesOp>(*x, b.getI64IntegerAttr(k), b.getI64IntegerAttr(axis),
                          b.getBoolAttr(intAttr("largest", 1) != 0));
  if (failed(indices))
    return failure();
  FailureOr<Value> values =
      make<GatherElementsOp>(*x, *indices, b.getI64IntegerAttr(axis));
  if (failed(values))
    return failure();
  setOutput(*values, 0);
  if (node->output_size() > 1)
    setOutput(*indices, 1);
  return success();
}
