//===- ImportShape.cpp - ONNX shape ops -----------------------------------===//
//
// Reshape, Flatten, Squeeze, Unsqueeze, Gather, Slice, Split, Concat,
// Expand, Pad, Tile, Range, ConstantOfShape and Constant. Known values fold
// (the shape subgraphs exporters write); a Gather of a float initializer by
// computed ids becomes an embedding table lookup.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"
#include "heterps/Support/CheckedMath.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;
using ::heterps::checkedAdd;
using ::heterps::checkedMul;
using ::heterps::checkedProduct;

static Known sliceKnown(const Known &k, const Ints &fs, const Ints &fe,
                        const Ints &fst);

LogicalResult Importer::convertConstantOfShape() {
  const Known *shape = foldable(0);
  if (!shape || shape->isFloat())
    return nodeError() << "the shape must be an integer tensor known at "
                          "import time";
  Known fill;
  fill.elementType = b.getF32Type();
  fill.shape = {1};
  fill.floats = {0.0};
  if (const onnx::AttributeProto *a = attr("value")) {
    FailureOr<Known> v = readTensor(a->t());
    if (failed(v))
      return failure();
    if (v->size() != 1)
      return nodeError() << "the value must have one element, it has "
                         << v->size();
    fill = *v;
  }
  if (!shape->complete()) {
    // PyTorch's zero initial state of a recurrent layer, [D, B, H]: no
    // tensor is built; the layer takes it as absent (input() refuses it
    // to every other consumer).
    batchShapedFills[node->output(0)] = fill.at(0);
    return success();
  }
  std::optional<int64_t> n = checkedProduct(shape->ints);
  for (int64_t d : shape->ints)
    if (d < 0)
      n.reset();
  if (!n)
    return nodeError() << "the shape " << formatShape(shape->ints)
                       << " is not a valid shape";
  if (*n > kMaxFoldedElements)
    return nodeError() << "the shape " << formatShape(shape->ints) << " has "
                       << *n << " elements; at most " << kMaxFoldedElements
                       << " are built at import time";
  Known r;
  r.elementType = fill.elementType;
  r.shape = shape->ints;
  for (int64_t i = 0; i < *n; ++i)
    pushFrom(r, fill, 0);
  setKnown(r);
  return success();
}
LogicalResult Importer::convertReshapeTo(Value x, Ints target) {
  setOutput(ReshapeOp::create(
      b, loc, RankedTensorType::get(target, typeOf(x).getElementType()), x));
  return success();
}
/// Reshape of a known tensor: the data is unchanged.
static Known reshaped(const Known &k, ArrayRef<int64_t> shape) {
  Known r = k;
  r.shape.assign(shape.begin(), shape.end());
  auto type = RankedTensorType::get(shape, r.elementType);
  if (auto resource = dyn_cast_if_present<DenseResourceElementsAttr>(r.data))
    r.data = DenseResourceElementsAttr::get(type, resource.getRawHandle());
  else if (r.data)
    r.data = cast<DenseElementsAttr>(r.data).reshape(type);
  return r;
}
LogicalResult Importer::convertReshapeLike(StringRef op) {
  const Known *k;
  Ints in;
  Value x;
  if (failed(foldableOrInput(0, k, x, in)))
    return failure();
  int64_t rank = in.size();
  Ints out;
  auto normAxes = [&](Ints axes, int64_t r) -> FailureOr<Ints> {
    for (int64_t &a : axes) {
      std::optional<int64_t> n = normalizeAxis(a, r);
      if (!n)
        return nodeError() << "axis " << a << " is out of range for rank " << r;
      a = *n;
    }
    llvm::sort(axes);
    // ONNX forbids a repeated axis; Unsqueeze would read past its input's
    // dimensions for one.
    for (size_t i = 1; i < axes.size(); ++i)
      if (axes[i] == axes[i - 1])
        return nodeError() << "axis " << axes[i]
                           << " is given twice (axes must be distinct)";
    return axes;
  };

  if (op == "Flatten") {
    int64_t axis = intAttr("axis", 1);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis > rank)
      return nodeError() << "axis " << intAttr("axis", 1)
                         << " is out of range for rank " << rank;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t &p = d < axis ? outer : inner;
      if (ShapedType::isDynamic(in[d]) || ShapedType::isDynamic(p)) {
        p = kDyn;
      } else if (std::optional<int64_t> q = checkedMul(p, in[d])) {
        p = *q;
      } else {
        return nodeError() << "flattening " << formatShape(in)
                           << " overflows a 64-bit size";
      }
    }
    out = {outer, inner};
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    FailureOr<std::optional<Ints>> axesOrNone = axesInputOrAttr(opset >= 13);
    if (failed(axesOrNone))
      return failure();
    std::optional<Ints> axes = *axesOrNone;
    if (op == "Unsqueeze") {
      if (!axes)
        return nodeError() << "needs axes";
      int64_t outRank = rank + axes->size();
      FailureOr<Ints> a = normAxes(*axes, outRank);
      if (failed(a))
        return failure();
      int64_t next = 0;
      for (int64_t d = 0; d < outRank; ++d)
        out.push_back(llvm::is_contained(*a, d) ? 1 : in[next++]);
    } else {
      Ints drop;
      if (axes) {
        FailureOr<Ints> a = normAxes(*axes, rank);
        if (failed(a))
          return failure();
        drop = *a;
      } else {
        for (int64_t d = 0; d < rank; ++d)
          if (in[d] == 1)
            drop.push_back(d);
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (!llvm::is_contained(drop, d)) {
          out.push_back(in[d]);
          continue;
        }
        if (in[d] != 1)
          return nodeError()
                 << "cannot squeeze dimension " << d << " of size "
                 << (ShapedType::isDynamic(in[d]) ? std::string("?")
                                                  : std::to_string(in[d]));
      }
    }
  } else { // Reshape
    Ints shape;
    const Known *target = nullptr;
    if (opset < 5) {
      shape = intsAttr("shape").value_or(Ints());
    } else {
      FailureOr<Ints> s = constInts(1, "the target shape");
      if (failed(s))
        return failure();
      shape = *s;
      target = known(1);
    }
    // The input's run-time dimension, if any, against the batch.
    int64_t inDynAt = -1;
    for (int64_t d = 0; d < rank; ++d)
      if (ShapedType::isDynamic(in[d]))
        inDynAt = d;
    BatchMultiple inMultiple = k ? BatchMultiple() : batchMultipleOf(x);
    bool allowZero = intAttr("allowzero", 0) != 0;
    int64_t inferAt = -1, dynAt = -1;
    BatchMultiple dynMultiple;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t s = shape[d];
      bool dynamic = false;
      if (s == 0 && !allowZero) {
        if ((int64_t)d >= rank)
          return nodeError() << "target dimension " << d
                             << " copies a dimension the input lacks";
        s = in[d];
        if ((dynamic = ShapedType::isDynamic(s)))
          dynMultiple = inMultiple;
      } else if (s == kDyn) {
        // A size computed from Shape(...) at run time: the batch, or a
        // multiple of it the importer may have followed.
        dynamic = true;
        dynMultiple = target ? target->batchAt(d) : BatchMultiple();
      } else if (s == -1) {
        if (inferAt >= 0)
          return nodeError() << "target shape has more than one -1";
        inferAt = d;
      } else if (s < 0) {
        return nodeError() << "target dimension " << d << " is " << s;
      }
      if (dynamic) {
        if (dynAt >= 0)
          return nodeError() << "target dimensions " << dynAt << " and " << d
                             << " both depend on the run-time batch size";
        if (inDynAt < 0)
          return nodeError() << "target dimension " << d
                             << " depends on the run-time batch size, but "
                                "the input "
                             << formatShape(in) << " has none";
        dynAt = d;
      }
      out.push_back(s);
    }
    std::optional<int64_t> inProd = 1, outProd = 1;
    for (int64_t s : in)
      if (!ShapedType::isDynamic(s) && inProd)
        inProd = checkedMul(*inProd, s);
    for (size_t d = 0; d < out.size(); ++d)
      if ((int64_t)d != inferAt && (int64_t)d != dynAt && outProd)
        outProd = checkedMul(*outProd, out[d]);
    if (!inProd || !outProd)
      return nodeError() << "reshaping " << formatShape(in) << " to "
                         << formatShape(shape) << " overflows a 64-bit size";
    if (inferAt >= 0) {
      if (inDynAt >= 0 && dynAt < 0) {
        out[inferAt] = kDyn; // -1 absorbs the batch.
      } else if (inDynAt >= 0) {
        // Both the input and the target hold the batch: -1 is what is left
        // of the input's elements, in multiples of the batch.
        if (!inMultiple.known() || !dynMultiple.known())
          return nodeError()
                 << "cannot infer the -1 of target dimension " << inferAt
                 << ": target dimension " << dynAt
                 << " is computed from the run-time batch size in a way the "
                    "importer does not follow";
        std::optional<int64_t> n = checkedMul(*inProd, dynMultiple.den),
                               d = checkedMul(*outProd, dynMultiple.num);
        BatchMultiple left =
            n && d ? inMultiple.scaled(*n, *d) : BatchMultiple();
        if (!left.known() || left.den != 1)
          return nodeError() << "cannot reshape " << formatShape(in) << " to "
                             << formatShape(shape);
        out[inferAt] = left.num;
      } else if (*outProd == 0 || *inProd % *outProd != 0) {
        return nodeError() << "cannot reshape " << formatShape(in) << " to "
                           << formatShape(shape);
      } else {
        out[inferAt] = *inProd / *outProd;
      }
    } else if (dynAt >= 0) {
      // Both sides' element counts, where they are known multiples of the
      // batch, must agree.
      BatchMultiple have = inMultiple.scaled(*inProd, 1),
                    want = dynMultiple.scaled(*outProd, 1);
      if (have.known() && want.known() && !(have == want))
        return nodeError() << "cannot reshape " << formatShape(in) << " to "
                           << formatShape(shape) << ": the input holds "
                           << have.str() << " elements per sample, the target "
                           << want.str();
    }
  }
  if (k) {
    std::optional<int64_t> n = checkedProduct(out);
    if (!n || *n != k->size())
      return nodeError() << "cannot reshape " << formatShape(in) << " ("
                         << k->size() << " elements) to " << formatShape(out);
    setKnown(reshaped(*k, out));
    return success();
  }
  return convertReshapeTo(x, out);
}
LogicalResult Importer::convertGather() {
  int64_t axis = intAttr("axis", 0);
  const Known *data = foldable(0), *idx = foldable(1);
  if (data && idx && !idx->isFloat()) {
    int64_t rank = data->shape.size();
    std::optional<int64_t> a = normalizeAxis(axis, rank);
    if (!a)
      return nodeError() << "axis " << axis << " is out of range for rank "
                         << rank;
    Known r;
    r.elementType = data->elementType;
    r.shape.assign(data->shape.begin(), data->shape.begin() + *a);
    llvm::append_range(r.shape, idx->shape);
    r.shape.append(data->shape.begin() + *a + 1, data->shape.end());
    int64_t outer = 1, inner = 1, dim = data->shape[*a];
    for (int64_t d = 0; d < *a; ++d)
      outer *= data->shape[d];
    for (int64_t d = *a + 1; d < rank; ++d)
      inner *= data->shape[d];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : idx->ints) {
        if (i < 0)
          i += dim;
        if (i < 0 || i >= dim)
          return nodeError() << "index " << i << " is out of range for " << dim
                             << " entries";
        for (int64_t e = 0; e < inner; ++e)
          pushFrom(r, *data, (o * dim + i) * inner + e);
      }
    setKnown(r);
    return success();
  }
  // Rows of a float initializer picked by computed ids: a sparse table.
  const Known *table = known(0);
  if (table && table->initializer && table->isFloat() && !known(1) &&
      table->shape.size() == 2 && axis == 0 && table->elementType.isF32()) {
    FailureOr<Value> ids = input(1);
    if (failed(ids))
      return failure();
    if (!isa<IntegerType>(typeOf(*ids).getElementType()))
      return nodeError() << "indices of table '" << node->input(0)
                         << "' are not integers";
    std::string symbol = tableSymbol(node->input(0), *table);
    SmallVector<int64_t> shape(typeOf(*ids).getShape());
    shape.push_back(table->shape[1]);
    setOutput(EmbeddingLookupOp::create(
        b, loc, RankedTensorType::get(shape, b.getF32Type()), symbol, *ids,
        Combiner::none));
    return success();
  }
  FailureOr<Value> x = input(0), ids = input(1);
  if (failed(x) || failed(ids))
    return failure();
  // Constant indices are checked against the data's extent here, naming
  // the node; the runtime checks the others as it gathers.
  ArrayRef<int64_t> dataShape = typeOf(*x).getShape();
  std::optional<int64_t> a =
      normalizeAxis(axis, static_cast<int64_t>(dataShape.size()));
  if (!a)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << dataShape.size();
  if (const Known *k = known(1);
      k && !k->isFloat() && !ShapedType::isDynamic(dataShape[*a]))
    for (int64_t i : k->ints)
      if (i != kDyn && (i < -dataShape[*a] || i >= dataShape[*a]))
        return nodeError() << "index " << i << " is out of range for "
                           << dataShape[*a] << " entries along axis " << *a;
  return emit(make<GatherOp>(*x, *ids, b.getI64IntegerAttr(axis)));
}
LogicalResult Importer::convertSlice() {
  Ints starts, ends, axes, steps;
  if (opset < 10) {
    starts = intsAttr("starts").value_or(Ints());
    ends = intsAttr("ends").value_or(Ints());
    axes = intsAttr("axes").value_or(Ints());
  } else {
    FailureOr<Ints> s = constInts(1, "starts"), e = constInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (has(3)) {
      FailureOr<Ints> a = constInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (has(4)) {
      FailureOr<Ints> st = constInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  const Known *k;
  Value x;
  Ints in;
  if (failed(foldableOrInput(0, k, x, in)))
    return failure();
  int64_t rank = in.size();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return nodeError() << "starts, ends, axes and steps differ in length";
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  Ints fs(rank, 0), fe(rank, kMax), fst(rank, 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    std::optional<int64_t> a = normalizeAxis(axes[i], rank);
    if (!a)
      return nodeError() << "axis " << axes[i] << " is out of range for rank "
                         << rank;
    int64_t size = in[*a];
    if (steps[i] == 0)
      return nodeError() << "step of axis " << axes[i] << " is zero";
    if (ShapedType::isDynamic(size)) {
      if (starts[i] != 0 || ends[i] < (int64_t)INT32_MAX || steps[i] != 1)
        return nodeError() << "slices the dynamic batch dimension " << *a;
      continue;
    }
    auto norm = [&](int64_t v) {
      if (v < 0)
        v += size;
      int64_t lo = steps[i] > 0 ? 0 : -1, hi = steps[i] > 0 ? size : size - 1;
      return std::clamp(v, lo, hi);
    };
    fs[*a] = norm(starts[i]);
    fe[*a] = norm(ends[i]);
    fst[*a] = steps[i];
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!ShapedType::isDynamic(in[d]) && fe[d] == kMax)
      fe[d] = in[d];
  if (!k)
    return emit(make<SliceOp>(x, b.getDenseI64ArrayAttr(fs),
                              b.getDenseI64ArrayAttr(fe),
                              b.getDenseI64ArrayAttr(fst)));
  setKnown(sliceKnown(*k, fs, fe, fst));
  return success();
}
/// Folds a slice of a known tensor (bounds normalised, one per dimension).
static Known sliceKnown(const Known &k, const Ints &fs, const Ints &fe,
                        const Ints &fst) {
  // Enumerate the selected index along every dimension.
  int64_t rank = k.shape.size();
  SmallVector<Ints> picks(rank);
  Known r;
  r.elementType = k.elementType;
  for (int64_t d = 0; d < rank; ++d) {
    for (int64_t i = fs[d]; fst[d] > 0 ? i < fe[d] : i > fe[d]; i += fst[d])
      picks[d].push_back(i);
    r.shape.push_back(picks[d].size());
  }
  Ints strides = stridesOf(k.shape);
  // At most the input's elements: every dimension picks at most its size.
  int64_t n = checkedProduct(r.shape).value_or(0);
  Ints outStrides = stridesOf(r.shape);
  for (int64_t e = 0; e < n; ++e) {
    int64_t src = 0, rem = e;
    for (int64_t d = 0; d < rank; ++d) {
      src += picks[d][rem / outStrides[d]] * strides[d];
      rem %= outStrides[d];
    }
    pushFrom(r, k, src);
  }
  return r;
}
LogicalResult Importer::convertSplit() {
  int64_t outputs = node->output_size();
  Ints split;
  if (opset < 13) {
    split = intsAttr("split").value_or(Ints());
  } else if (has(1)) {
    FailureOr<Ints> s = constInts(1, "split");
    if (failed(s))
      return failure();
    split = *s;
  }
  const Known *k;
  Value x;
  Ints in;
  if (failed(foldableOrInput(0, k, x, in)))
    return failure();
  int64_t rank = in.size();
  std::optional<int64_t> axis = normalizeAxis(intAttr("axis", 0), rank);
  if (!axis)
    return nodeError() << "axis " << intAttr("axis", 0)
                       << " is out of range for rank " << rank;
  int64_t size = in[*axis];
  if (ShapedType::isDynamic(size))
    return nodeError() << "splits the dynamic batch dimension " << *axis;
  if (split.empty()) {
    // Equal parts; from opset 18 the last may be smaller.
    int64_t parts = opset >= 18 ? intAttr("num_outputs", outputs) : outputs;
    if (parts != outputs)
      return nodeError() << "num_outputs is " << parts << " but the node has "
                         << outputs << " outputs";
    int64_t each = opset >= 18 ? (size + parts - 1) / parts : size / parts;
    if (opset < 18 && size % parts)
      return nodeError() << "cannot split dimension " << *axis << " of size "
                         << size << " into " << parts << " equal parts";
    for (int64_t i = 0, left = size; i < parts; ++i, left -= each)
      split.push_back(std::min(each, left));
  }
  if (static_cast<int64_t>(split.size()) != outputs)
    return nodeError() << "has " << split.size() << " split sizes for "
                       << outputs << " outputs";
  int64_t total = 0;
  for (int64_t part : split) {
    if (part < 0)
      return nodeError() << "split sizes " << formatShape(split)
                         << " include a negative one";
    total += part;
  }
  if (total != size)
    return nodeError() << "split sizes " << formatShape(split) << " add up to "
                       << total << ", dimension " << *axis << " has " << size;
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t at = 0;
  for (int64_t i = 0; i < outputs; ++i) {
    Ints fs(rank, 0), fe(rank, kMax), fst(rank, 1);
    for (int64_t d = 0; d < rank; ++d)
      if (!ShapedType::isDynamic(in[d]))
        fe[d] = in[d];
    fs[*axis] = at;
    fe[*axis] = at + split[i];
    at += split[i];
    if (node->output(i).empty())
      continue;
    if (k) {
      setKnown(sliceKnown(*k, fs, fe, fst), i);
      continue;
    }
    FailureOr<Value> part =
        make<SliceOp>(x, b.getDenseI64ArrayAttr(fs), b.getDenseI64ArrayAttr(fe),
                      b.getDenseI64ArrayAttr(fst));
    if (failed(part))
      return failure();
    setOutput(*part, i);
  }
  return success();
}
LogicalResult Importer::convertConcat() {
  int64_t axis = intAttr("axis", 0);
  bool allKnown = true;
  for (int i = 0; i < node->input_size(); ++i)
    allKnown &= foldable(i) != nullptr;
  if (allKnown && node->input_size() > 0 && !foldable(0)->isFloat()) {
    const Known *first = foldable(0);
    int64_t rank = first->shape.size();
    std::optional<int64_t> a = normalizeAxis(axis, rank);
    if (!a)
      return nodeError() << "axis " << axis << " is out of range for rank "
                         << rank;
    Known r;
    r.elementType = first->elementType;
    r.shape = first->shape;
    r.shape[*a] = 0;
    int64_t outer = 1;
    for (int64_t d = 0; d < *a; ++d)
      outer *= first->shape[d];
    for (int i = 0; i < node->input_size(); ++i) {
      const Known *k = foldable(i);
      if ((int64_t)k->shape.size() != rank)
        return nodeError() << "inputs differ in rank";
      r.shape[*a] += k->shape[*a];
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < node->input_size(); ++i) {
        const Known *k = foldable(i);
        int64_t block = k->size() / std::max<int64_t>(outer, 1);
        for (int64_t e = 0; e < block; ++e)
          pushFrom(r, *k, o * block + e);
      }
    setKnown(r);
    return success();
  }
  SmallVector<Value> inputs;
  for (int i = 0; i < node->input_size(); ++i) {
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  return emit(make<ConcatOp>(ValueRange(inputs), b.getI64IntegerAttr(axis)));
}
LogicalResult Importer::convertExpand() {
  FailureOr<Ints> shape = constInts(1, "the target shape");
  if (failed(shape))
    return failure();
  const Known *k = foldable(0);
  if (!k || !k->complete()) {
    FailureOr<Value> x = input(0);
    if (failed(x))
      return failure();
    // A target dimension that is the run-time batch (x.expand_as(y), as
    // F.normalize writes it) is kept from the input's own batch dimension:
    // broadcasting against 1 keeps it.
    ArrayRef<int64_t> in = typeOf(*x).getShape();
    Ints target = *shape;
    int64_t offset =
        static_cast<int64_t>(target.size()) - static_cast<int64_t>(in.size());
    for (int64_t d = 0; d < static_cast<int64_t>(target.size()); ++d) {
      if (target[d] != kDyn)
        continue;
      int64_t i = d - offset;
      if (i < 0 || !ShapedType::isDynamic(in[i]))
        return nodeError() << "the target shape " << formatShape(*shape)
                           << " expands dimension " << d
                           << " to the run-time batch size";
      target[d] = 1;
    }
    return emit(make<ExpandOp>(*x, b.getDenseI64ArrayAttr(target)));
  }
  Known ones;
  ones.elementType = k->elementType;
  ones.shape = *shape;
  for (int64_t i = 0, n = ones.size(); i < n; ++i)
    push(ones, 1.0);
  std::optional<Known> r = foldBinary("Mul", *k, ones);
  if (!r)
    return nodeError() << "cannot broadcast " << formatShape(k->shape) << " to "
                       << formatShape(*shape);
  setKnown(*r);
  return success();
}
LogicalResult Importer::convertPad() {
  std::string mode = stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return nodeError() << "mode '" << mode
                       << "' is not supported; expected constant, reflect or "
                          "edge";
  Ints pads;
  double value = 0;
  if (opset < 11) {
    std::optional<Ints> p = intsAttr("pads");
    if (!p)
      return nodeError() << "needs the pads attribute";
    pads = *p;
    value = floatAttr("value", 0);
  } else {
    FailureOr<Ints> p = constInts(1, "the pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (has(2)) {
      const Known *k = known(2);
      if (!k || k->size() != 1)
        return nodeError() << "constant_value must be a scalar known at "
                              "import time";
      value = k->at(0);
    }
    if (has(3))
      return nodeError() << "the axes input is not supported; give pads for "
                            "every dimension";
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return nodeError() << "has " << pads.size() << " pads for a rank-" << rank
                       << " input; expected " << 2 * rank;
  for (int64_t p : pads)
    if (p < 0)
      return nodeError() << "negative pads (cropping) are not supported, got "
                         << formatShape(pads);
  // An exporter's Pad before a pooling is often all zeros: nothing to do.
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; })) {
    setOutput(*x);
    return success();
  }
  return emit(make<PadOp>(*x, b.getStringAttr(mode),
                          b.getDenseI64ArrayAttr(pads),
                          b.getF64FloatAttr(value)));
}
LogicalResult Importer::convertTile() {
  FailureOr<Ints> repeats = constInts(1, "the repeats");
  if (failed(repeats))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  RankedTensorType type = typeOf(*x);
  ArrayRef<int64_t> in = type.getShape();
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(repeats->size()) != rank)
    return nodeError() << "has " << repeats->size() << " repeats for a rank-"
                       << rank << " input";
  // Tile is a broadcast of the input with a unit dimension before each
  // repeated one: reshape [.., 1, d, ..], expand [.., r, d, ..], and reshape
  // [.., r * d, ..]. The ops and their gradients exist already.
  Ints split, expand, out;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t r = (*repeats)[d];
    if (r < 1)
      return nodeError() << "repeat " << r << " of dimension " << d
                         << " is not positive";
    if (ShapedType::isDynamic(in[d])) {
      if (r != 1)
        return nodeError() << "repeats the dynamic batch dimension " << d;
      split.push_back(in[d]);
      expand.push_back(1);
      out.push_back(in[d]);
      continue;
    }
    split.append({1, in[d]});
    expand.append({r, 1});
    std::optional<int64_t> size = checkedMul(r, in[d]);
    if (!size)
      return nodeError() << "repeat " << r << " of dimension " << d
                         << " overflows";
    out.push_back(*size);
  }
  if (llvm::all_of(*repeats, [](int64_t r) { return r == 1; })) {
    setOutput(*x);
    return success();
  }
  Value v = ReshapeOp::create(
      b, loc, RankedTensorType::get(split, type.getElementType()), *x);
  FailureOr<Value> e = make<ExpandOp>(v, b.getDenseI64ArrayAttr(expand));
  if (failed(e))
    return failure();
  return convertReshapeTo(*e, out);
}
LogicalResult Importer::convertRange() {
  // Scalars, even float initializers: a range is not trained.
  const Known *start = known(0), *limit = known(1), *delta = known(2);
  for (const Known *k : {start, limit, delta})
    if (!k || k->size() != 1 || !k->complete())
      return nodeError() << "start, limit and delta must be scalars known at "
                            "import time";
  if (start->isFloat() != limit->isFloat() ||
      start->isFloat() != delta->isFloat())
    return nodeError() << "start, limit and delta must have one type";
  double s = start->at(0), l = limit->at(0), d = delta->at(0);
  if (d == 0)
    return nodeError() << "delta is zero";
  double count = std::ceil((l - s) / d);
  if (!(count <= static_cast<double>(kMaxFoldedElements)))
    return nodeError() << "the range has " << count << " elements; at most "
                       << kMaxFoldedElements << " are built at import time";
  Known r;
  r.elementType = start->elementType;
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  r.shape = {n};
  for (int64_t i = 0; i < n; ++i) {
    if (start->isFloat()) {
      push(r, s + i * d);
      continue;
    }
    std::optional<int64_t> step = checkedMul(i, delta->ints[0]);
    std::optional<int64_t> v =
        step ? checkedAdd(start->ints[0], *step) : std::nullopt;
    if (!v)
      return nodeError() << "the range overflows 64-bit integers";
    r.ints.push_back(*v);
  }
  setKnown(r);
  return success();
}
LogicalResult Importer::convertConstant() {
  Known k;
  if (const onnx::AttributeProto *a = attr("value")) {
    FailureOr<Known> t = readTensor(a->t());
    if (failed(t))
      return failure();
    k = std::move(*t);
  } else if (const onnx::AttributeProto *a = attr("value_float")) {
    k.elementType = b.getF32Type();
    k.floats.push_back(a->f());
  } else if (const onnx::AttributeProto *a = attr("value_floats")) {
    k.elementType = b.getF32Type();
    k.floats.assign(a->floats().begin(), a->floats().end());
    k.shape.push_back(a->floats_size());
  } else if (const onnx::AttributeProto *a = attr("value_int")) {
    k.elementType = b.getI64Type();
    k.ints.push_back(a->i());
  } else if (const onnx::AttributeProto *a = attr("value_ints")) {
    k.elementType = b.getI64Type();
    k.ints.assign(a->ints().begin(), a->ints().end());
    k.shape.push_back(a->ints_size());
  } else {
    return nodeError() << "only tensor, float and int constants are supported";
  }
  setKnown(std::move(k));
  return success();
}
