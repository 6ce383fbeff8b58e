//===- ImportNN.cpp - ONNX linear algebra, NN layers and resize -----------===//
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

FailureOr<Ints> Importer::windowAttr(StringRef name, int64_t size, int64_t dflt,
                                     int64_t spatial) {
  Ints values = intsAttr(name).value_or(Ints(size, dflt));
  if (static_cast<int64_t>(values.size()) != size)
    return nodeError() << name << " has " << values.size()
                       << " values; expected " << size << " for " << spatial
                       << " spatial dimension" << (spatial == 1 ? "" : "s");
  // Sizes beyond 2^20 are no model's: they would overflow the shapes they
  // make.
  for (int64_t v : values)
    if (v < 0 || v > (int64_t(1) << 20))
      return nodeError() << name << " has " << v << "; expected 0 to 1048576";
  return values;
}

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
  if (static_cast<int64_t>(kernel.size()) != spatial)
    return nodeError() << "kernel_shape has " << kernel.size()
                       << " values; expected " << spatial << " for " << spatial
                       << " spatial dimension" << (spatial == 1 ? "" : "s");
  FailureOr<Ints> stridesOr = windowAttr("strides", spatial, 1, spatial),
                  dilationsOr = windowAttr("dilations", spatial, 1, spatial),
                  padsOr = windowAttr("pads", 2 * spatial, 0, spatial);
  if (failed(stridesOr) || failed(dilationsOr) || failed(padsOr))
    return failure();
  Ints strides = *stridesOr, dilations = *dilationsOr, pads = *padsOr;
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
    FailureOr<Value> bv = optionalInput(2);
    if (failed(bv))
      return failure();
    Value bias = *bv;
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
  FailureOr<Ints> stridesOr = windowAttr("strides", spatial, 1, spatial),
                  dilationsOr = windowAttr("dilations", spatial, 1, spatial),
                  padsOr = windowAttr("pads", 2 * spatial, 0, spatial),
                  extraOr = windowAttr("output_padding", spatial, 0, spatial);
  if (failed(stridesOr) || failed(dilationsOr) || failed(padsOr) ||
      failed(extraOr))
    return failure();
  Ints strides = *stridesOr, dilations = *dilationsOr, pads = *padsOr,
       extra = *extraOr;
  std::optional<Ints> outputShape = intsAttr("output_shape");
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
  FailureOr<Value> bv = optionalInput(2);
  if (failed(bv))
    return failure();
  Value bias = *bv;
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
  FailureOr<Value> cv = optionalInput(2);
  if (failed(cv))
    return failure();
  Value c = *cv;
  for (const char *flag : {"transA", "transB"})
    if (int64_t v = intAttr(flag, 0); v != 0 && v != 1)
      return nodeError() << flag << " is " << v << "; it must be 0 or 1";
  FailureOr<float> alpha = finiteFloatAttr("alpha", 1.0f),
                   beta = finiteFloatAttr("beta", 1.0f);
  if (failed(alpha) || failed(beta))
    return failure();
  return emit(make<GemmOp>(*a, *bm, c, b.getBoolAttr(intAttr("transA", 0)),
                           b.getBoolAttr(intAttr("transB", 0)),
                           b.getF32FloatAttr(*alpha),
                           b.getF32FloatAttr(*beta)));
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

LogicalResult Importer::convertReduce(StringRef op) {
  // ReduceSum takes its axes as an input from opset 13; the other
  // reductions keep the attribute until opset 18.
  bool axesInput = (op == "ReduceSum" && opset >= 13) || opset >= 18;
  FailureOr<std::optional<Ints>> axesOrNone = axesInputOrAttr(axesInput);
  if (failed(axesOrNone))
    return failure();
  std::optional<Ints> axes = *axesOrNone;
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  if ((!axes || axes->empty()) && intAttr("noop_with_empty_axes", 0)) {
    setOutput(*x);
    return success();
  }
  Ints a = axes.value_or(Ints());
  bool keep = intAttr("keepdims", 1) != 0;
  auto arr = b.getDenseI64ArrayAttr(a);
  auto kd = b.getBoolAttr(keep);
  if (op == "ReduceSum")
    return emit(make<ReduceSumOp>(*x, arr, kd));
  if (op == "ReduceMean")
    return emit(make<ReduceMeanOp>(*x, arr, kd));
  if (op == "ReduceMin")
    return emit(make<ReduceMinOp>(*x, arr, kd));
  if (op == "ReduceProd")
    return emit(make<ReduceProdOp>(*x, arr, kd));
  if (op == "ReduceL2")
    return emit(make<ReduceL2Op>(*x, arr, kd));
  return emit(make<ReduceMaxOp>(*x, arr, kd));
}
/// A scalar float constant of `elementType`.
static Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                            double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          type, ArrayRef<Attribute>{b.getFloatAttr(elementType, value)}));
}
/// x - mean and sqrt(mean((x - mean)^2) + epsilon) over `axes` (kept):
/// the statistics instance and layer normalisation spell out with ops that
/// have gradients.
FailureOr<std::pair<Value, Value>>
Importer::centeredAndStddev(Value x, Value mean, DenseI64ArrayAttr axes,
                            double epsilon) {
  FailureOr<Value> d = make<SubOp>(x, mean);
  if (failed(d))
    return failure();
  FailureOr<Value> sq = make<MulOp>(*d, *d);
  if (failed(sq))
    return failure();
  FailureOr<Value> var = make<ReduceMeanOp>(*sq, axes, b.getBoolAttr(true));
  if (failed(var))
    return failure();
  FailureOr<Value> shifted = make<AddOp>(
      *var, scalarConstant(b, loc, typeOf(x).getElementType(), epsilon));
  if (failed(shifted))
    return failure();
  return std::make_pair(
      *d, Value(SqrtOp::create(b, loc, shifted->getType(), *shifted)));
}
LogicalResult Importer::convertInstanceNorm() {
  FailureOr<Value> x = input(0), scale = input(1), bias = input(2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  RankedTensorType type = typeOf(*x);
  int64_t rank = type.getRank();
  if (rank < 3)
    return nodeError() << "input must be N x C x spatial..., got "
                       << formatShape(type.getShape());
  int64_t channels = type.getDimSize(1);
  for (Value v : {*scale, *bias})
    if (typeOf(v).getShape() != ArrayRef<int64_t>{channels})
      return nodeError() << "scale and bias must have shape [" << channels
                         << "] (the channels), got "
                         << formatShape(typeOf(v).getShape());
  // Spelled out with ops that have gradients: each (n, c) is normalised
  // over the spatial axes, then scaled and shifted per channel.
  Type elem = type.getElementType();
  FailureOr<float> epsilonOr = finiteFloatAttr("epsilon", 1e-5f);
  if (failed(epsilonOr))
    return failure();
  double epsilon = *epsilonOr;
  Ints axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  DenseI64ArrayAttr arr = b.getDenseI64ArrayAttr(axes);
  BoolAttr keep = b.getBoolAttr(true);
  FailureOr<Value> mean = make<ReduceMeanOp>(*x, arr, keep);
  if (failed(mean))
    return failure();
  FailureOr<std::pair<Value, Value>> spread =
      centeredAndStddev(*x, *mean, arr, epsilon);
  if (failed(spread))
    return failure();
  auto [d, stddev] = *spread;
  FailureOr<Value> normed = make<DivOp>(d, stddev);
  if (failed(normed))
    return failure();
  // [C] as [C, 1, ...] broadcasts over the spatial axes.
  Ints perChannel(rank - 1, 1);
  perChannel[0] = channels;
  auto column = [&](Value v) {
    return ReshapeOp::create(b, loc, RankedTensorType::get(perChannel, elem), v)
        .getResult();
  };
  FailureOr<Value> scaled = make<MulOp>(*normed, column(*scale));
  if (failed(scaled))
    return failure();
  return emit(make<AddOp>(*scaled, column(*bias)));
}
LogicalResult Importer::convertBatchNorm() {
  if (attr("spatial") && intAttr("spatial", 1) == 0)
    return nodeError() << "spatial = 0 is not supported";
  // Opset 14 adds training_mode; before opset 9 there are (consumed)
  // statistics outputs and `is_test`.
  bool training = intAttr("training_mode", 0) != 0;
  bool stats = false;
  for (int i = 1; i < node->output_size(); ++i)
    stats |= used(i);
  if (stats && (!training || opset < 14))
    return nodeError() << "statistics outputs are only supported with "
                          "training_mode = 1 (opset 14 and later)";
  FailureOr<float> epsilonOr = finiteFloatAttr("epsilon", 1e-5f),
                   momentumOr = finiteFloatAttr("momentum", 0.9f);
  if (failed(epsilonOr) || failed(momentumOr))
    return failure();
  float epsilon = *epsilonOr, momentum = *momentumOr;
  FailureOr<Value> x = input(0), s = input(1), bias = input(2),
                   m = input(3, /*frozen=*/true), v = input(4, /*frozen=*/true);
  if (failed(x) || failed(s) || failed(bias) || failed(m) || failed(v))
    return failure();
  if (!stats) {
    // training_mode = 1 normalises Y with the batch's statistics, whether
    // the plan trains or infers; training updates the running statistics
    // (a PyTorch export for training has them as unused outputs).
    setOutput(BatchNormOp::create(b, loc, x->getType(), *x, *s, *bias, *m, *v,
                                  APFloat(epsilon), APFloat(momentum),
                                  training));
    return success();
  }
  // The statistics outputs are read: spelled out with ops that have
  // gradients.
  // The batch variance is the population variance over every dimension but
  // the channels.
  RankedTensorType type = typeOf(*x);
  if (type.getRank() < 2)
    return nodeError() << "input must be N x C x ..., got "
                       << formatShape(type.getShape());
  Ints axes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != 1)
      axes.push_back(d);
  auto arr = b.getDenseI64ArrayAttr(axes);
  Type elem = type.getElementType();
  FailureOr<Value> meanKept = make<ReduceMeanOp>(*x, arr, b.getBoolAttr(true));
  if (failed(meanKept))
    return failure();
  FailureOr<Value> diff = make<SubOp>(*x, *meanKept);
  if (failed(diff))
    return failure();
  FailureOr<Value> sq = make<MulOp>(*diff, *diff);
  if (failed(sq))
    return failure();
  FailureOr<Value> varKept = make<ReduceMeanOp>(*sq, arr, b.getBoolAttr(true));
  if (failed(varKept))
    return failure();
  FailureOr<Value> shifted =
      make<AddOp>(*varKept, scalarConstant(b, loc, elem, epsilon));
  if (failed(shifted))
    return failure();
  Value stddev = SqrtOp::create(b, loc, shifted->getType(), *shifted);
  FailureOr<Value> normed = make<DivOp>(*diff, stddev);
  if (failed(normed))
    return failure();
  // [C] as [C, 1, ...] broadcasts over the axes after the channels.
  Ints perChannel(type.getRank() - 1, 1);
  perChannel[0] = type.getDimSize(1);
  auto column = [&](Value c) {
    return ReshapeOp::create(b, loc, RankedTensorType::get(perChannel, elem), c)
        .getResult();
  };
  FailureOr<Value> scaled = make<MulOp>(*normed, column(*s));
  if (failed(scaled))
    return failure();
  FailureOr<Value> y = make<AddOp>(*scaled, column(*bias));
  if (failed(y))
    return failure();
  setOutput(*y);
  if (!stats)
    return success();
  // The updated running statistics: statistic * momentum + batch statistic
  // * (1 - momentum).
  FailureOr<Value> mean = make<ReduceMeanOp>(*x, arr, b.getBoolAttr(false));
  FailureOr<Value> var = make<ReduceMeanOp>(*sq, arr, b.getBoolAttr(false));
  if (failed(mean) || failed(var))
    return failure();
  auto blend = [&](Value running, Value batch) -> FailureOr<Value> {
    FailureOr<Value> kept =
        make<MulOp>(running, scalarConstant(b, loc, elem, momentum));
    FailureOr<Value> added =
        make<MulOp>(batch, scalarConstant(b, loc, elem, 1.0 - momentum));
    if (failed(kept) || failed(added))
      return failure();
    return make<AddOp>(*kept, *added);
  };
  for (int i : {1, 2}) {
    if (node->output_size() <= i || node->output(i).empty())
      continue;
    FailureOr<Value> r = i == 1 ? blend(*m, *mean) : blend(*v, *var);
    if (failed(r))
      return failure();
    setOutput(*r, i);
  }
  return success();
}

namespace {
/// An Einsum operand while it is lowered: a value and one label per
/// dimension.
struct Labeled {
  Value value;
  std::string labels;
};
} // namespace
/// Einsum, lowered to ops that have gradients: a repeated label within an
/// operand takes the diagonal (a multiply by an identity mask, then a
/// reduce_sum), labels needed nowhere else are summed out, and each pair of
/// operands is contracted by one batched matmul between transposes and
/// reshapes ("bij,bjk->bik", "bhqd,bhkd->bhqk", "ij->ji", "...ii->...i",
/// "i,i"). The labels an operand keeps to itself stay dimensions of their
/// own (leading matmul dimensions), so the dynamic batch is never merged
/// with another dimension.
LogicalResult Importer::convertEinsum() {
  std::string equation;
  for (char c : stringAttr("equation", ""))
    if (c != ' ')
      equation += c;
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::optional<std::string> rhs;
  if (arrow != std::string::npos)
    rhs = equation.substr(arrow + 2);
  SmallVector<std::string> terms;
  for (size_t at = 0;;) {
    size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  if (static_cast<int>(terms.size()) != node->input_size())
    return nodeError() << "the equation '" << equation << "' has "
                       << terms.size() << " operands, the node "
                       << node->input_size() << " inputs";
  auto validTerm = [](const std::string &term) {
    size_t dots = term.find("...");
    if (dots != std::string::npos &&
        term.find("...", dots + 1) != std::string::npos)
      return false;
    for (size_t i = 0; i < term.size(); ++i) {
      if (dots != std::string::npos && i >= dots && i < dots + 3)
        continue;
      if (!std::isalpha(static_cast<unsigned char>(term[i])))
        return false;
    }
    return true;
  };
  for (const std::string &t : terms)
    if (!validTerm(t))
      return nodeError() << "the equation '" << equation
                         << "' is not an einsum equation (letters, at most "
                            "one '...' per operand)";
  if (rhs && !validTerm(*rhs))
    return nodeError() << "the equation '" << equation
                       << "' is not an einsum equation";

  // The operands, their ellipses expanded to labels of their own (the
  // characters no operand uses).
  SmallVector<Labeled> operands;
  std::string unused;
  for (char c = '0'; c <= '9'; ++c)
    if (equation.find(c) == std::string::npos)
      unused += c;
  int64_t ellipsisRank = -1;
  Type elem;
  for (auto [i, term] : llvm::enumerate(terms)) {
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    RankedTensorType type = typeOf(*v);
    if (!isa<FloatType>(type.getElementType()))
      return nodeError() << "operand " << i << " must be a float tensor, got "
                         << type;
    if (!elem)
      elem = type.getElementType();
    else if (elem != type.getElementType())
      return nodeError() << "the operands have different element types: "
                         << elem << " and " << type.getElementType();
    size_t dots = term.find("...");
    int64_t explicitLabels = term.size() - (dots == std::string::npos ? 0 : 3);
    int64_t extra = type.getRank() - explicitLabels;
    if (extra < 0 || (dots == std::string::npos && extra != 0))
      return nodeError() << "operand " << i << " has rank " << type.getRank()
                         << ", its term '" << term << "' names "
                         << explicitLabels << " dimensions";
    std::string labels = term;
    if (dots != std::string::npos) {
      if (extra > static_cast<int64_t>(unused.size()))
        return nodeError() << "the '...' of operand " << i << " stands for "
                           << extra << " dimensions; at most " << unused.size()
                           << " are supported";
      if (ellipsisRank >= 0 && ellipsisRank != extra)
        return nodeError() << "the '...' of the operands stand for different "
                              "numbers of dimensions ("
                           << ellipsisRank << " and " << extra
                           << "); broadcasting them is not supported";
      ellipsisRank = extra;
      labels = term.substr(0, dots) + unused.substr(0, extra) +
               term.substr(dots + 3);
    }
    operands.push_back({*v, labels});
  }
  std::string ellipsisLabels =
      unused.substr(0, std::max<int64_t>(ellipsisRank, 0));

  // The output labels: given, or every label used once, in alphabetical
  // order after the ellipsis.
  std::string output;
  if (rhs) {
    size_t dots = rhs->find("...");
    output = dots == std::string::npos ? *rhs
                                       : rhs->substr(0, dots) + ellipsisLabels +
                                             rhs->substr(dots + 3);
  } else {
    std::map<char, int> count;
    for (const Labeled &o : operands)
      for (char c : o.labels)
        ++count[c];
    output = ellipsisLabels;
    for (auto [c, n] : count)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(c)))
        output += c;
  }

  // One size per label.
  std::map<char, int64_t> sizes;
  for (const Labeled &o : operands)
    for (auto [d, c] : llvm::enumerate(o.labels)) {
      int64_t size = typeOf(o.value).getDimSize(d);
      auto [it, inserted] = sizes.try_emplace(c, size);
      if (!inserted && it->second != size)
        return nodeError() << "label '" << c << "' stands for dimensions of "
                           << "sizes " << formatShape({it->second}) << " and "
                           << formatShape({size});
    }
  for (char c : output) {
    if (!sizes.count(c))
      return nodeError() << "output label '" << c << "' is in no operand of '"
                         << equation << "'";
    if (llvm::count(output, c) > 1)
      return nodeError() << "output label '" << c << "' is repeated in '"
                         << equation << "'";
  }

  auto shapeOf = [&](StringRef labels) {
    Ints shape;
    for (char c : labels)
      shape.push_back(sizes[c]);
    return shape;
  };
  auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
    if (typeOf(v).getShape() == shape)
      return v;
    return ReshapeOp::create(b, loc, RankedTensorType::get(shape, elem), v);
  };
  auto transpose = [&](Labeled &o, StringRef order) -> LogicalResult {
    if (o.labels == order)
      return success();
    Ints perm;
    for (char c : order)
      perm.push_back(o.labels.find(c));
    FailureOr<Value> t =
        make<TransposeOp>(o.value, b.getDenseI64ArrayAttr(perm));
    if (failed(t))
      return failure();
    o = {*t, order.str()};
    return success();
  };
  // Sums out the labels of `o` that are not in `keep`.
  auto sumOut = [&](Labeled &o, StringRef keep) -> LogicalResult {
    Ints axes;
    std::string left;
    for (auto [d, c] : llvm::enumerate(o.labels)) {
      if (keep.contains(c))
        left += c;
      else
        axes.push_back(d);
    }
    if (axes.empty())
      return success();
    FailureOr<Value> r = make<ReduceSumOp>(
        o.value, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false));
    if (failed(r))
      return failure();
    o = {*r, left};
    return success();
  };
  // The diagonal of every label repeated within `o`.
  auto diagonals = [&](Labeled &o) -> LogicalResult {
    // A label that repeats several times takes several diagonals, at the
    // same position p.
    for (size_t p = 0; p < o.labels.size();) {
      size_t q = o.labels.find(o.labels[p], p + 1);
      if (q == std::string::npos) {
        ++p;
        continue;
      }
      int64_t n = sizes[o.labels[p]];
      if (ShapedType::isDynamic(n) || n > (1 << 12))
        return nodeError() << "the diagonal over label '" << o.labels[p]
                           << "' needs a known size up to 4096, got "
                           << formatShape({n});
      Ints maskShape(o.labels.size(), 1);
      maskShape[p] = maskShape[q] = n;
      SmallVector<Attribute> ones;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          ones.push_back(b.getFloatAttr(elem, i == j ? 1.0 : 0.0));
      Value mask = ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(RankedTensorType::get(maskShape, elem), ones));
      FailureOr<Value> masked = make<MulOp>(o.value, mask);
      if (failed(masked))
        return failure();
      FailureOr<Value> r = make<ReduceSumOp>(
          *masked, b.getDenseI64ArrayAttr({int64_t(q)}), b.getBoolAttr(false));
      if (failed(r))
        return failure();
      o.value = *r;
      o.labels.erase(q, 1);
    }
    return success();
  };
  // A x B as one batched matmul: A as [batch, A's own but its last, 1 for
  // each of B's own but its last, M, K], B as [batch, 1..., B's own but its
  // last, K, N].
  auto contract = [&](Labeled &a, Labeled &o,
                      StringRef later) -> FailureOr<Labeled> {
    std::string batch, contracted, aOwn, bOwn;
    for (char c : a.labels) {
      if (o.labels.find(c) == std::string::npos)
        aOwn += c;
      else if (later.contains(c))
        batch += c;
      else
        contracted += c;
    }
    for (char c : o.labels)
      if (a.labels.find(c) == std::string::npos)
        bOwn += c;
    int64_t k = 1;
    for (char c : contracted) {
      if (ShapedType::isDynamic(sizes[c]) && contracted.size() > 1)
        return nodeError() << "contracting the dynamic (batch) label '" << c
                           << "' with others is not supported";
      k = ShapedType::isDynamic(sizes[c]) ? sizes[c] : k * sizes[c];
    }
    std::string aLead = aOwn.empty() ? "" : aOwn.substr(0, aOwn.size() - 1);
    std::string bLead = bOwn.empty() ? "" : bOwn.substr(0, bOwn.size() - 1);
    std::string aLast = aOwn.empty() ? "" : aOwn.substr(aOwn.size() - 1);
    std::string bLast = bOwn.empty() ? "" : bOwn.substr(bOwn.size() - 1);
    if (failed(transpose(a, batch + aLead + aLast + contracted)) ||
        failed(transpose(o, batch + bLead + contracted + bLast)))
      return failure();
    Ints aShape = shapeOf(batch + aLead), bShape = shapeOf(batch);
    aShape.append(bLead.size(), 1);
    aShape.push_back(aLast.empty() ? 1 : sizes[aLast[0]]);
    aShape.push_back(k);
    bShape.append(aLead.size(), 1);
    llvm::append_range(bShape, shapeOf(bLead));
    bShape.push_back(k);
    bShape.push_back(bLast.empty() ? 1 : sizes[bLast[0]]);
    FailureOr<Value> product =
        make<MatMulOp>(reshape(a.value, aShape), reshape(o.value, bShape));
    if (failed(product))
      return failure();
    std::string labels = batch + aLead + bLead + aLast + bLast;
    return Labeled{reshape(*product, shapeOf(labels)), labels};
  };

  for (Labeled &o : operands)
    if (failed(diagonals(o)))
      return failure();
  Labeled result = operands.front();
  for (size_t i = 1; i < operands.size(); ++i) {
    // The labels the operands after this pair, or the output, still need.
    std::string later = output;
    for (size_t j = i + 1; j < operands.size(); ++j)
      later += operands[j].labels;
    Labeled &next = operands[i];
    if (failed(sumOut(result, later + next.labels)) ||
        failed(sumOut(next, later + result.labels)))
      return failure();
    FailureOr<Labeled> r = contract(result, next, later);
    if (failed(r))
      return failure();
    result = *r;
  }
  if (failed(sumOut(result, output)) || failed(transpose(result, output)))
    return failure();
  setOutput(result.value);
  return success();
}
LogicalResult Importer::convertLayerNorm() {
  FailureOr<Value> x = input(0), s = input(1);
  if (failed(x) || failed(s))
    return failure();
  FailureOr<Value> bv = optionalInput(2);
  if (failed(bv))
    return failure();
  Value bias = *bv;
  int64_t axis = intAttr("axis", -1);
  FailureOr<float> epsilon = finiteFloatAttr("epsilon", 1e-5f);
  if (failed(epsilon))
    return failure();
  setOutput(LayerNormOp::create(b, loc, x->getType(), *x, *s, bias, axis,
                                APFloat(*epsilon)));
  bool mean = used(1), invStd = used(2);
  if (!mean && !invStd)
    return success();
  // The optional statistics outputs, spelled out: Mean and 1/sqrt(Var + eps)
  // over dimensions axis.. with the reduced dimensions kept.
  RankedTensorType type = typeOf(*x);
  std::optional<int64_t> a = normalizeAxis(axis, type.getRank());
  if (!a)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << type.getRank();
  Ints axes;
  for (int64_t d = *a; d < type.getRank(); ++d)
    axes.push_back(d);
  auto arr = b.getDenseI64ArrayAttr(axes);
  auto keep = b.getBoolAttr(true);
  FailureOr<Value> m = make<ReduceMeanOp>(*x, arr, keep);
  if (failed(m))
    return failure();
  if (mean)
    setOutput(*m, 1);
  if (!invStd)
    return success();
  Type elem = type.getElementType();
  FailureOr<std::pair<Value, Value>> spread =
      centeredAndStddev(*x, *m, arr, *epsilon);
  if (failed(spread))
    return failure();
  FailureOr<Value> inv =
      make<DivOp>(scalarConstant(b, loc, elem, 1.0), spread->second);
  if (failed(inv))
    return failure();
  setOutput(*inv, 2);
  return success();
}
