//===- ImportNN.cpp - ONNX convolution and pooling ------------------------===//
//
// Gemm, MatMul and Dropout; Conv, ConvTranspose, MaxPool, AveragePool and
// GlobalAveragePool: the
// window attributes (auto_pad resolved to pads against static spatial
// sizes, ConvTranspose's output_shape to pads and output padding) become
// the attributes of heterps.conv, conv_transpose and the pools. Resize's
// scales or sizes, known at import time, become heterps.resize's scales
// and result type.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"
#include "heterps/Support/CheckedMath.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;
using ::heterps::checkedProduct;

LogicalResult Importer::convertConvPool(StringRef op) {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  RankedTensorType type = typeOf(*x);
  int64_t spatial = type.getRank() - 2;
  if (spatial < 1)
    return nodeError() << "input must be N x C x spatial..., got "
                       << formatShape(type.getShape());
  Value filter;
  Ints kernel;
  if (op == "Conv") {
    FailureOr<Value> w = input(1);
    if (failed(w))
      return failure();
    filter = *w;
    auto ws = typeOf(filter).getShape();
    if (ws.size() != type.getShape().size())
      return nodeError() << "the filter " << formatShape(ws)
                         << " must have the input's rank " << type.getRank()
                         << " (input " << formatShape(type.getShape()) << ")";
    kernel.assign(ws.begin() + 2, ws.end());
  } else if (op != "GlobalAveragePool") {
    kernel = intsAttr("kernel_shape").value_or(Ints());
  }
  if (op == "GlobalAveragePool")
    return emit(make<GlobalAvgPoolOp>(*x));
  if (op == "MaxPool" && intAttr("storage_order", 0) != 0)
    return nodeError() << "storage_order = 1 is not supported";
  if (failed(onlyFirstOutput()))
    return failure();
  Ints strides = intsAttr("strides").value_or(Ints(spatial, 1));
  Ints dilations = intsAttr("dilations").value_or(Ints(spatial, 1));
  Ints pads = intsAttr("pads").value_or(Ints(2 * spatial, 0));
  for (auto [name, values, size] :
       {std::tuple<const char *, const Ints *, int64_t>{"kernel_shape", &kernel,
                                                        spatial},
        {"strides", &strides, spatial},
        {"dilations", &dilations, spatial},
        {"pads", &pads, 2 * spatial}})
    if (static_cast<int64_t>(values->size()) != size)
      return nodeError() << name << " has " << values->size()
                         << " values; expected " << size << " for " << spatial
                         << " spatial dimension" << (spatial == 1 ? "" : "s");
  // Sizes beyond 2^20 are no model's: they would overflow the shapes they
  // make.
  for (auto [name, values] :
       {std::pair<const char *, const Ints *>{"strides", &strides},
        {"dilations", &dilations},
        {"pads", &pads}})
    for (int64_t v : *values)
      if (v < 0 || v > (int64_t(1) << 20))
        return nodeError() << name << " has " << v << "; expected 0 to 1048576";
  std::string autoPad = stringAttr("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t in = type.getDimSize(d + 2);
      if (ShapedType::isDynamic(in))
        return nodeError() << "auto_pad needs static spatial dimensions";
      int64_t out = (in + strides[d] - 1) / strides[d];
      int64_t eff = (kernel[d] - 1) * dilations[d] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + eff - in);
      int64_t small = total / 2, big = total - small;
      pads[d] = autoPad == "SAME_UPPER" ? small : big;
      pads[d + spatial] = autoPad == "SAME_UPPER" ? big : small;
    }
  } else if (autoPad != "NOTSET") {
    return nodeError() << "auto_pad '" << autoPad << "' is not supported";
  }
  auto arr = [&](ArrayRef<int64_t> v) { return b.getDenseI64ArrayAttr(v); };
  bool ceil = intAttr("ceil_mode", 0) != 0;
  // Pools spell dilation 1 by leaving the attribute out.
  DenseI64ArrayAttr dilationsAttr;
  if (llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
    dilationsAttr = arr(dilations);
  if (op == "Conv") {
    Value bias;
    if (has(2)) {
      FailureOr<Value> bv = input(2);
      if (failed(bv))
        return failure();
      bias = *bv;
    }
    return emit(make<ConvOp>(*x, filter, bias, arr(strides), arr(pads),
                             arr(dilations),
                             b.getI64IntegerAttr(intAttr("group", 1))));
  }
  if (op == "MaxPool")
    return emit(make<MaxPoolOp>(*x, arr(kernel), arr(strides), arr(pads),
                                dilationsAttr, b.getBoolAttr(ceil)));
  return emit(
      make<AvgPoolOp>(*x, arr(kernel), arr(strides), arr(pads), dilationsAttr,
                      b.getBoolAttr(ceil),
                      b.getBoolAttr(intAttr("count_include_pad", 0) != 0)));
}

LogicalResult Importer::convertConvTranspose() {
  FailureOr<Value> x = input(0), w = input(1);
  if (failed(x) || failed(w))
    return failure();
  RankedTensorType type = typeOf(*x), filter = typeOf(*w);
  int64_t spatial = type.getRank() - 2;
  if (spatial < 1 || filter.getRank() != type.getRank())
    return nodeError() << "input must be N x C x spatial... and the filter "
                          "C x M/group x kernel... of the same rank, got "
                       << formatShape(type.getShape()) << " and "
                       << formatShape(filter.getShape());
  if (!filter.hasStaticShape())
    return nodeError() << "the filter must have a static shape, got "
                       << formatShape(filter.getShape());
  Ints kernel(filter.getShape().begin() + 2, filter.getShape().end());
  if (std::optional<Ints> k = intsAttr("kernel_shape"); k && *k != kernel)
    return nodeError() << "kernel_shape " << formatShape(*k)
                       << " differs from the filter's " << formatShape(kernel);
  Ints strides = intsAttr("strides").value_or(Ints(spatial, 1));
  Ints dilations = intsAttr("dilations").value_or(Ints(spatial, 1));
  Ints pads = intsAttr("pads").value_or(Ints(2 * spatial, 0));
  Ints extra = intsAttr("output_padding").value_or(Ints(spatial, 0));
  std::optional<Ints> outputShape = intsAttr("output_shape");
  for (auto [name, values, size] :
       {std::tuple<const char *, const Ints *, int64_t>{"strides", &strides,
                                                        spatial},
        {"dilations", &dilations, spatial},
        {"output_padding", &extra, spatial},
        {"pads", &pads, 2 * spatial}})
    if (static_cast<int64_t>(values->size()) != size)
      return nodeError() << name << " has " << values->size()
                         << " values; expected " << size << " for " << spatial
                         << " spatial dimension" << (spatial == 1 ? "" : "s");
  for (auto [name, values] :
       {std::pair<const char *, const Ints *>{"strides", &strides},
        {"dilations", &dilations},
        {"output_padding", &extra},
        {"pads", &pads}})
    for (int64_t v : *values)
      if (v < 0 || v > (int64_t(1) << 20))
        return nodeError() << name << " has " << v << "; expected 0 to 1048576";
  std::string autoPad = stringAttr("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return nodeError() << "auto_pad '" << autoPad << "' is not supported";
  if (autoPad == "VALID")
    pads.assign(2 * spatial, 0);
  // A requested output size (output_shape, or the input times the stride
  // for SAME) fixes the total padding, split as ONNX defines; a negative
  // total pads the end with output rows (output_padding).
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    if (outputShape && static_cast<int64_t>(outputShape->size()) != spatial)
      return nodeError() << "output_shape has " << outputShape->size()
                         << " values; expected " << spatial;
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t in = type.getDimSize(d + 2);
      if (ShapedType::isDynamic(in))
        return nodeError() << "output_shape and auto_pad need static spatial "
                              "dimensions";
      int64_t out = outputShape ? (*outputShape)[d] : in * strides[d];
      int64_t total = strides[d] * (in - 1) + extra[d] +
                      (kernel[d] - 1) * dilations[d] + 1 - out;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = autoPad == "SAME_UPPER";
      int64_t begin = upper ? half : total - half;
      int64_t end = upper ? total - half : half;
      if (begin < 0)
        return nodeError() << "output size " << out << " in spatial dimension "
                           << d << " needs padding " << begin
                           << " at its beginning (negative)";
      if (end < 0) {
        extra[d] += -end;
        end = 0;
      }
      pads[d] = begin;
      pads[d + spatial] = end;
    }
  }
  Value bias;
  if (has(2)) {
    FailureOr<Value> bv = input(2);
    if (failed(bv))
      return failure();
    bias = *bv;
  }
  auto arr = [&](ArrayRef<int64_t> v) { return b.getDenseI64ArrayAttr(v); };
  DenseI64ArrayAttr extraAttr;
  if (llvm::any_of(extra, [](int64_t e) { return e != 0; }))
    extraAttr = arr(extra);
  return emit(make<ConvTransposeOp>(*x, *w, bias, arr(strides), arr(pads),
                                    arr(dilations), extraAttr,
                                    b.getI64IntegerAttr(intAttr("group", 1))));
}

LogicalResult Importer::convertResize() {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  RankedTensorType type = typeOf(*x);
  int64_t rank = type.getRank();
  if (!isa<FloatType>(type.getElementType()))
    return nodeError() << "input must be a float tensor, got " << type;
  for (StringRef name : {"axes", "keep_aspect_ratio_policy"})
    if (attr(name))
      return nodeError() << "attribute '" << name << "' is not supported";
  if (intAttr("antialias", 0) != 0)
    return nodeError() << "antialias = 1 is not supported";
  // Opset 10 is Upsample's semantics: asymmetric coordinates, nearest
  // rounds down; its one other input is the scales.
  bool opset10 = opset < 11;
  std::string mode = stringAttr("mode", "nearest");
  std::string coords =
      opset10 ? "asymmetric"
              : stringAttr("coordinate_transformation_mode", "half_pixel");
  std::string nearest =
      opset10 ? "floor" : stringAttr("nearest_mode", "round_prefer_floor");
  int scalesInput = opset10 ? 1 : 2, sizesInput = opset10 ? -1 : 3;

  // Inputs known at import time; an empty tensor is an absent input.
  auto constant = [&](int i, bool wantFloat, const Known *&k) -> LogicalResult {
    k = nullptr;
    if (i < 0 || !has(i))
      return success();
    const Known *v = known(i);
    if (!v || v->isFloat() != wantFloat)
      return nodeError() << "input " << i << " '" << node->input(i)
                         << "' must be a " << (wantFloat ? "float" : "integer")
                         << " tensor known at import time";
    if (v->size() != 0)
      k = v;
    return success();
  };
  const Known *roi, *scales, *sizes;
  if (failed(constant(opset10 ? -1 : 1, true, roi)) ||
      failed(constant(scalesInput, true, scales)) ||
      failed(constant(sizesInput, false, sizes)))
    return failure();
  if (!scales == !sizes)
    return nodeError() << "exactly one of scales and sizes must be given";
  const Known *given = scales ? scales : sizes;
  if (given->size() != rank)
    return nodeError() << (scales ? "scales" : "sizes") << " has "
                       << given->size() << " entries for rank " << rank;
  SmallVector<double> factors;
  Ints shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = type.getDimSize(d);
    bool dynamic = ShapedType::isDynamic(in);
    if (sizes) {
      int64_t size = sizes->ints[d];
      // A dynamic dimension keeps its run-time size (PyTorch computes
      // `sizes` from Shape(x) for the batch).
      if (dynamic) {
        if (size != kDyn)
          return nodeError() << "sizes[" << d << "] is " << size
                             << " for a dynamic (batch) dimension, which "
                                "is not resized";
        factors.push_back(1.0);
        shape.push_back(kDyn);
        continue;
      }
      if (size < 1 || size > (int64_t(1) << 24))
        return nodeError() << "sizes[" << d << "] is " << size
                           << "; expected 1 to 16777216";
      factors.push_back(static_cast<double>(size) / static_cast<double>(in));
      shape.push_back(size);
      continue;
    }
    double scale = scales->at(d);
    if (!std::isfinite(scale) || scale <= 0)
      return nodeError() << "scales[" << d << "] is " << scale
                         << "; expected a positive number";
    if (dynamic) {
      if (scale != 1.0)
        return nodeError() << "scales[" << d << "] is " << scale
                           << " for a dynamic (batch) dimension, which is "
                              "not resized";
      factors.push_back(1.0);
      shape.push_back(kDyn);
      continue;
    }
    double out = std::floor(scale * static_cast<double>(in));
    if (out < 1 || out > double(int64_t(1) << 24))
      return nodeError() << "scales[" << d << "] = " << scale
                         << " resizes dimension " << d << " of " << in << " to "
                         << out << " elements";
    factors.push_back(scale);
    shape.push_back(static_cast<int64_t>(out));
  }
  DenseF64ArrayAttr roiAttr;
  if (coords == "tf_crop_and_resize") {
    if (!roi || roi->size() != 2 * rank)
      return nodeError() << "tf_crop_and_resize needs roi of " << 2 * rank
                         << " entries (starts, then ends)";
    SmallVector<double> r;
    for (int64_t i = 0; i < roi->size(); ++i)
      r.push_back(roi->at(i));
    roiAttr = b.getDenseF64ArrayAttr(r);
  }
  auto result = RankedTensorType::get(shape, type.getElementType());
  setOutput(ResizeOp::create(
      b, loc, result, *x, b.getStringAttr(mode), b.getStringAttr(coords),
      b.getStringAttr(nearest),
      b.getF64FloatAttr(floatAttr("cubic_coeff_a", -0.75f)),
      b.getBoolAttr(intAttr("exclude_outside", 0) != 0),
      b.getF64FloatAttr(floatAttr("extrapolation_value", 0.0f)),
      b.getDenseF64ArrayAttr(factors), roiAttr));
  return success();
}

LogicalResult Importer::convertGemm() {
  if (attr("broadcast") && intAttr("broadcast", 0) == 0 && opset < 7)
    return nodeError() << "Gemm without broadcast of C is not supported";
  FailureOr<Value> a = input(0), bm = input(1);
  if (failed(a) || failed(bm))
    return failure();
  Value c;
  if (has(2)) {
    FailureOr<Value> cv = input(2);
    if (failed(cv))
      return failure();
    c = *cv;
  }
  for (const char *flag : {"transA", "transB"})
    if (int64_t v = intAttr(flag, 0); v != 0 && v != 1)
      return nodeError() << flag << " is " << v << "; it must be 0 or 1";
  return emit(make<GemmOp>(*a, *bm, c, b.getBoolAttr(intAttr("transA", 0)),
                           b.getBoolAttr(intAttr("transB", 0)),
                           b.getF32FloatAttr(floatAttr("alpha", 1.0f)),
                           b.getF32FloatAttr(floatAttr("beta", 1.0f))));
}

LogicalResult Importer::convertMatMul() {
  FailureOr<Value> x = input(0), y = input(1);
  if (failed(x) || failed(y))
    return failure();
  return emit(make<MatMulOp>(*x, *y));
}

LogicalResult Importer::convertDropout() {
  bool training = false;
  if (opset >= 12 && has(2)) {
    const Known *k = known(2);
    if (!k || k->size() != 1)
      return nodeError()
             << "training_mode must be a scalar known at import time";
    training = k->at(0) != 0;
  }
  float ratio = floatAttr("ratio", 0.5f);
  if (opset >= 12 && has(1)) {
    const Known *k = known(1);
    if (!k || k->size() != 1)
      return nodeError() << "ratio must be a scalar known at import time";
    ratio = k->at(0);
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  setOutput(DropoutOp::create(b, loc, x->getType(), *x, APFloat(ratio)));
  if (used(1)) {
    // In inference the mask keeps everything; in training it is the
    // random draw, which the dropout op does not expose.
    if (training)
      return nodeError() << "the mask output of a training-mode Dropout "
                            "is not supported";
    RankedTensorType type = typeOf(*x);
    if (!type.hasStaticShape())
      return nodeError() << "the mask output needs a static shape";
    std::optional<int64_t> elements = checkedProduct(type.getShape());
    if (!elements || *elements > kMaxFoldedElements)
      return nodeError() << "the mask output of Dropout has more than "
                         << kMaxFoldedElements << " elements";
    Known mask;
    mask.elementType = b.getI1Type();
    mask.shape.assign(type.getShape().begin(), type.getShape().end());
    mask.ints.assign(*elements, 1);
    setKnown(mask, 1);
  }
  return success();
}
