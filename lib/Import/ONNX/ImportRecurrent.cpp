//===- ImportRecurrent.cpp - ONNX RNN, GRU and LSTM -----------------------===//
//
// The three recurrent layers map onto heterps.rnn, heterps.gru and
// heterps.lstm, which take ONNX's operand layout (sequence first, gates
// stacked in ONNX's order). A batch-first model (layout = 1) gets
// transposes around the layer; an absent bias becomes zeros; sequence
// lengths that a constant shows to be the full length are dropped.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;

namespace {

/// ONNX's default activations of one direction, in its spelling.
ArrayRef<StringRef> defaultActivations(StringRef op) {
  static const StringRef rnn[] = {"Tanh"};
  static const StringRef gru[] = {"Sigmoid", "Tanh"};
  static const StringRef lstm[] = {"Sigmoid", "Tanh", "Tanh"};
  if (op == "GRU")
    return gru;
  if (op == "LSTM")
    return lstm;
  return rnn;
}

std::string shapeString(RankedTensorType type) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    s += (i ? "," : "") +
         (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return s + "]";
}

} // namespace

LogicalResult Importer::convertRecurrent(StringRef op) {
  int64_t gates = op == "GRU" ? 3 : op == "LSTM" ? 4 : 1;
  FailureOr<Value> x = input(0), w = input(1), r = input(2);
  if (failed(x) || failed(w) || failed(r))
    return failure();
  for (Value v : {*x, *w, *r})
    if (!isa<FloatType>(typeOf(v).getElementType()) || typeOf(v).getRank() != 3)
      return nodeError() << "X, W and R must be 3-D float tensors, got "
                         << typeOf(v);
  if (!typeOf(*w).hasStaticShape() || !typeOf(*r).hasStaticShape())
    return nodeError() << "W and R must have static shapes, got "
                       << shapeString(typeOf(*w)) << " and "
                       << shapeString(typeOf(*r));

  std::string direction = stringAttr("direction", "forward");
  int64_t directions = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return nodeError() << "direction '" << direction
                       << "' is not forward, reverse or bidirectional";
  int64_t layout = intAttr("layout", 0);
  if (layout != 0 && layout != 1)
    return nodeError() << "layout " << layout << " is not 0 or 1";
  int64_t hidden = typeOf(*r).getDimSize(2);
  if (attr("hidden_size") && intAttr("hidden_size", 0) != hidden) {
    int64_t h = intAttr("hidden_size", 0);
    return nodeError() << "R is " << shapeString(typeOf(*r)) << ", expected ["
                       << directions << "," << gates * h << "," << h
                       << "] for hidden_size " << h;
  }
  if (typeOf(*w).getDimSize(0) != directions ||
      typeOf(*w).getDimSize(1) != gates * hidden)
    return nodeError() << "W must be [" << directions << "," << gates * hidden
                       << ",input_size] for " << direction << " with " << gates
                       << " gates of " << hidden << ", got "
                       << shapeString(typeOf(*w));

  // What the layers compute is ONNX's default cell; other activations, a
  // clip and LSTM's coupled input/forget gate are refused by name.
  for (StringRef name : {"clip", "activation_alpha", "activation_beta"})
    if (attr(name))
      return nodeError() << "attribute '" << name << "' is not supported";
  if (op == "LSTM" && intAttr("input_forget", 0) != 0)
    return nodeError() << "input_forget = 1 is not supported";
  StringRef activation = "tanh";
  if (const onnx::AttributeProto *a = attr("activations")) {
    ArrayRef<StringRef> defaults = defaultActivations(op);
    if (a->strings_size() != directions * (int64_t)defaults.size())
      return nodeError() << "activations has " << a->strings_size()
                         << " entries, expected "
                         << directions * defaults.size();
    for (int i = 0; i < a->strings_size(); ++i) {
      StringRef got = a->strings(i);
      StringRef want = defaults[i % defaults.size()];
      if (op == "RNN" && got.equals_insensitive("Relu") &&
          (i == 0 || activation == "relu")) {
        activation = "relu";
        continue;
      }
      if (!got.equals_insensitive(want) ||
          (op == "RNN" && activation == "relu"))
        return nodeError() << "activations[" << i << "] is '" << got
                           << "'; supported: " << llvm::join(defaults, ", ")
                           << (op == "RNN" ? " or Relu (the same for every "
                                             "direction)"
                                           : "");
    }
  }

  // Batch-first models get the sequence-first layout the layer takes.
  auto transposed = [&](Value v, ArrayRef<int64_t> perm) -> FailureOr<Value> {
    return make<TransposeOp>(v, b.getDenseI64ArrayAttr(perm));
  };
  Value seq = *x;
  if (layout == 1) {
    FailureOr<Value> t = transposed(seq, {1, 0, 2});
    if (failed(t))
      return failure();
    seq = *t;
  }
  RankedTensorType xType = typeOf(seq);
  Type element = xType.getElementType();

  FailureOr<Value> givenBias = optionalInput(3);
  if (failed(givenBias))
    return failure();
  Value bias = *givenBias;
  if (!bias) {
    auto type =
        RankedTensorType::get({directions, 2 * gates * hidden}, element);
    bias = ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, 0.0)));
  }

  Value lengths;
  if (has(4)) {
    // A constant of the full length for every row (exporters write one)
    // runs every step: nothing to mask.
    const Known *k = foldable(4);
    bool full = k && !k->isFloat() && k->complete() &&
                !ShapedType::isDynamic(xType.getDimSize(0)) &&
                llvm::all_of(k->ints, [&](int64_t len) {
                  return len == xType.getDimSize(0);
                });
    if (!full) {
      FailureOr<Value> v = input(4);
      if (failed(v))
        return failure();
      if (!isa<IntegerType>(typeOf(*v).getElementType()))
        return nodeError() << "sequence_lens must be integers, got "
                           << typeOf(*v);
      lengths = *v;
    }
  }
  auto state = [&](int i) -> FailureOr<Value> {
    if (!has(i))
      return Value();
    // Zeros of the batch's shape (PyTorch's default state) are the
    // layer's own default.
    auto fill = batchShapedFills.find(node->input(i));
    if (fill != batchShapedFills.end() && fill->second == 0.0)
      return Value();
    FailureOr<Value> v = input(i);
    if (failed(v) || layout == 0)
      return v;
    return transposed(*v, {1, 0, 2});
  };
  FailureOr<Value> initialH = state(5);
  FailureOr<Value> initialC = op == "LSTM" ? state(6) : Value();
  FailureOr<Value> peepholes = Value();
  if (op == "LSTM" && has(7))
    peepholes = input(7);
  if (failed(initialH) || failed(initialC) || failed(peepholes))
    return failure();

  int64_t steps = xType.getDimSize(0), batch = xType.getDimSize(1);
  auto yType =
      RankedTensorType::get({steps, directions, batch, hidden}, element);
  auto stateType = RankedTensorType::get({directions, batch, hidden}, element);
  IntegerAttr hiddenAttr = b.getI64IntegerAttr(hidden);
  StringAttr directionAttr = b.getStringAttr(direction);
  Operation *layer;
  if (op == "GRU")
    layer =
        GRUOp::create(b, loc, yType, stateType, seq, *w, *r, bias, lengths,
                      *initialH, hiddenAttr, directionAttr,
                      b.getBoolAttr(intAttr("linear_before_reset", 0) != 0));
  else if (op == "LSTM")
    layer = LSTMOp::create(b, loc, yType, stateType, stateType, seq, *w, *r,
                           bias, lengths, *initialH, hiddenAttr, directionAttr,
                           *initialC, *peepholes);
  else
    layer = RNNOp::create(b, loc, yType, stateType, seq, *w, *r, bias, lengths,
                          *initialH, hiddenAttr, directionAttr,
                          b.getStringAttr(activation));

  // Results back in the model's layout: Y is [T,D,B,H] or [B,T,D,H], the
  // final states [D,B,H] or [B,D,H].
  for (unsigned i = 0; i < layer->getNumResults(); ++i) {
    if (!used(i))
      continue;
    Value v = layer->getResult(i);
    if (layout == 1) {
      FailureOr<Value> t =
          i == 0 ? transposed(v, {2, 0, 1, 3}) : transposed(v, {1, 0, 2});
      if (failed(t))
        return failure();
      v = *t;
    }
    setOutput(v, i);
  }
  return success();
}
