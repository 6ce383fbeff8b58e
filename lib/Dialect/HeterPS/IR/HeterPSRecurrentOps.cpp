//===- HeterPSRecurrentOps.cpp - RNN, GRU and LSTM layers -----------------===//
//
// Verifiers and costs of the recurrent layers and their gradients. One
// description of a layer's shapes (T steps, B rows, I inputs, D directions,
// G gates of H units) checks every operand and result of the six ops.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::heterps;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// The sizes of a recurrent layer, read from its operands and attributes.
struct RecurrentShape {
  int64_t steps = kDyn, batch = kDyn, inputs = kDyn;
  int64_t directions = 1, gates = 1, hidden = 0;
  Type element;

  RankedTensorType type(ArrayRef<int64_t> shape) const {
    return RankedTensorType::get(shape, element);
  }
  /// y: T x D x B x H.
  RankedTensorType sequence() const {
    return type({steps, directions, batch, hidden});
  }
  /// y_h, y_c, initial_h, initial_c: D x B x H.
  RankedTensorType state() const { return type({directions, batch, hidden}); }
};

int64_t gatesOf(Operation *op) {
  if (isa<GRUOp, GRUGradOp>(op))
    return 3;
  if (isa<LSTMOp, LSTMGradOp>(op))
    return 4;
  return 1;
}

/// Merges a static size read from an operand into `size`.
LogicalResult mergeSize(Operation *op, int64_t &size, int64_t found,
                        StringRef what) {
  if (ShapedType::isDynamic(found))
    return success();
  if (!ShapedType::isDynamic(size) && size != found)
    return op->emitOpError()
           << what << " is " << found << " here but " << size << " elsewhere";
  size = found;
  return success();
}

LogicalResult expectType(Operation *op, Value v, RankedTensorType expected,
                         StringRef what) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType() != expected.getElementType() ||
      failed(verifyCompatibleShape(type, expected)))
    return op->emitOpError()
           << what << " has type " << type << ", expected " << expected;
  return success();
}

/// Reads and checks the layer's operands and attributes (the part the
/// forward ops and their gradients share).
template <typename OpTy>
FailureOr<RecurrentShape> verifyLayer(OpTy op, Value initialC,
                                      Value peepholes) {
  Operation *o = op.getOperation();
  RecurrentShape s;
  s.gates = gatesOf(o);
  StringRef direction = op.getDirection();
  if (direction == "bidirectional")
    s.directions = 2;
  else if (direction != "forward" && direction != "reverse")
    return o->emitOpError() << "direction '" << direction
                            << "' is not forward, reverse or bidirectional";
  s.hidden = static_cast<int64_t>(op.getHiddenSize());
  if (s.hidden <= 0)
    return o->emitOpError() << "hidden_size must be positive, got " << s.hidden;

  RankedTensorType x = op.getInput().getType();
  s.element = x.getElementType();
  if (x.getRank() != 3)
    return o->emitOpError() << "input must be T x B x I, got " << x;
  s.steps = x.getDimSize(0);
  s.batch = x.getDimSize(1);
  s.inputs = x.getDimSize(2);
  if (ShapedType::isDynamic(s.inputs))
    return o->emitOpError() << "input size must be static, got " << x;

  int64_t rows = s.gates * s.hidden;
  if (failed(expectType(o, op.getWeights(),
                        s.type({s.directions, rows, s.inputs}), "weights")) ||
      failed(expectType(o, op.getRecurrence(),
                        s.type({s.directions, rows, s.hidden}),
                        "recurrence")) ||
      failed(expectType(o, op.getBias(), s.type({s.directions, 2 * rows}),
                        "bias")))
    return failure();
  for (Value v : {op.getWeights(), op.getRecurrence(), op.getBias()})
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return o->emitOpError() << "weights, recurrence and bias must have "
                                 "static shapes, got "
                              << v.getType();

  if (Value lengths = op.getSequenceLens()) {
    auto type = cast<RankedTensorType>(lengths.getType());
    if (type.getRank() != 1)
      return o->emitOpError() << "sequence_lens must be 1-D, got " << type;
    if (failed(mergeSize(o, s.batch, type.getDimSize(0), "the batch")))
      return failure();
  }
  for (Value state : {Value(op.getInitialH()), initialC}) {
    if (!state)
      continue;
    auto type = cast<RankedTensorType>(state.getType());
    if (type.getRank() == 3 &&
        failed(mergeSize(o, s.batch, type.getDimSize(1), "the batch")))
      return failure();
    if (failed(expectType(o, state, s.state(), "initial state")))
      return failure();
  }
  if (peepholes &&
      failed(expectType(o, peepholes, s.type({s.directions, 3 * s.hidden}),
                        "peepholes")))
    return failure();
  return s;
}

/// Multiply-adds of one forward pass: the input and recurrent GEMMs of every
/// gate and step.
double forwardFlops(const RecurrentShape &s, int64_t batchSize) {
  double t = ShapedType::isDynamic(s.steps) ? 1 : s.steps;
  double b = ShapedType::isDynamic(s.batch) ? batchSize : s.batch;
  double gemm = 2.0 * t * b * s.directions * s.gates * s.hidden *
                double(s.inputs + s.hidden);
  // The activations and the state update, a handful per gate element.
  double pointwise = 8.0 * t * b * s.directions * s.gates * s.hidden;
  return gemm + pointwise;
}

template <typename OpTy>
LogicalResult verifyForward(OpTy op, Value initialC, Value peepholes,
                            ValueRange states) {
  FailureOr<RecurrentShape> s = verifyLayer(op, initialC, peepholes);
  if (failed(s))
    return failure();
  if (failed(expectType(op, op.getY(), s->sequence(), "result y")))
    return failure();
  for (Value state : states)
    if (failed(expectType(op, state, s->state(), "final state")))
      return failure();
  return success();
}

template <typename OpTy>
LogicalResult verifyGradient(OpTy op, Value initialC, Value peepholes,
                             ValueRange stateGrads) {
  FailureOr<RecurrentShape> s = verifyLayer(op, initialC, peepholes);
  if (failed(s))
    return failure();
  Operation *o = op.getOperation();
  if (Value dy = op.getYGrad())
    if (failed(expectType(o, dy, s->sequence(), "y_grad")))
      return failure();
  for (Value dy : stateGrads)
    if (dy && failed(expectType(o, dy, s->state(), "final state gradient")))
      return failure();
  if (failed(expectType(o, op.getInputGrad(), op.getInput().getType(),
                        "input_grad")) ||
      failed(expectType(o, op.getWeightsGrad(),
                        cast<RankedTensorType>(op.getWeights().getType()),
                        "weights_grad")) ||
      failed(expectType(o, op.getRecurrenceGrad(),
                        cast<RankedTensorType>(op.getRecurrence().getType()),
                        "recurrence_grad")) ||
      failed(expectType(o, op.getBiasGrad(),
                        cast<RankedTensorType>(op.getBias().getType()),
                        "bias_grad")) ||
      failed(expectType(o, op.getInitialHGrad(), s->state(), "initial_h_grad")))
    return failure();
  return success();
}

template <typename OpTy>
OpCost forwardCost(OpTy op, Value initialC, Value peepholes,
                   int64_t batchSize) {
  // The verifier has run: the shapes are consistent.
  FailureOr<RecurrentShape> s = verifyLayer(op, initialC, peepholes);
  OpCost cost;
  if (failed(s))
    return cost;
  cost.forwardFlops = forwardFlops(*s, batchSize);
  // The gradient reruns the forward pass, then the input and recurrent
  // GEMMs twice (the data and the weight gradients).
  cost.backwardFlops = 3 * cost.forwardFlops;
  cost.forwardBytes = getOperandAndResultBytes(op, batchSize);
  // The weights' bytes are the parameters' (heterps.load_param counts
  // them).
  cost.backwardBytes = 3 * cost.forwardBytes;
  return cost;
}

template <typename OpTy>
OpCost gradientCost(OpTy op, Value initialC, Value peepholes,
                    int64_t batchSize) {
  FailureOr<RecurrentShape> s = verifyLayer(op, initialC, peepholes);
  OpCost cost;
  if (failed(s))
    return cost;
  // Written as a forward cost: a backward op runs in the backward pass.
  cost.forwardFlops = 3 * forwardFlops(*s, batchSize);
  cost.forwardBytes = getOperandAndResultBytes(op, batchSize);
  return cost;
}

} // namespace

//===----------------------------------------------------------------------===//
// Forward layers
//===----------------------------------------------------------------------===//

LogicalResult RNNOp::verify() {
  if (getActivation() != "tanh" && getActivation() != "relu")
    return emitOpError() << "activation '" << getActivation()
                         << "' is not tanh or relu";
  return verifyForward(*this, Value(), Value(), getYH());
}
OpCost RNNOp::getCost(int64_t batchSize) {
  return forwardCost(*this, Value(), Value(), batchSize);
}

LogicalResult GRUOp::verify() {
  return verifyForward(*this, Value(), Value(), getYH());
}
OpCost GRUOp::getCost(int64_t batchSize) {
  return forwardCost(*this, Value(), Value(), batchSize);
}

LogicalResult LSTMOp::verify() {
  return verifyForward(*this, getInitialC(), getPeepholes(),
                       ValueRange{getYH(), getYC()});
}
OpCost LSTMOp::getCost(int64_t batchSize) {
  return forwardCost(*this, getInitialC(), getPeepholes(), batchSize);
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

LogicalResult RNNGradOp::verify() {
  if (getActivation() != "tanh" && getActivation() != "relu")
    return emitOpError() << "activation '" << getActivation()
                         << "' is not tanh or relu";
  return verifyGradient(*this, Value(), Value(), ValueRange{getYHGrad()});
}
OpCost RNNGradOp::getCost(int64_t batchSize) {
  return gradientCost(*this, Value(), Value(), batchSize);
}

LogicalResult GRUGradOp::verify() {
  return verifyGradient(*this, Value(), Value(), ValueRange{getYHGrad()});
}
OpCost GRUGradOp::getCost(int64_t batchSize) {
  return gradientCost(*this, Value(), Value(), batchSize);
}

LogicalResult LSTMGradOp::verify() {
  FailureOr<RecurrentShape> s = verifyLayer(*this, getInitialC(), nullptr);
  if (failed(s))
    return failure();
  if (failed(
          expectType(*this, getInitialCGrad(), s->state(), "initial_c_grad")) ||
      failed(expectType(*this, getPeepholesGrad(),
                        s->type({s->directions, 3 * s->hidden}),
                        "peepholes_grad")))
    return failure();
  return verifyGradient(*this, getInitialC(), getPeepholes(),
                        ValueRange{getYHGrad(), getYCGrad()});
}
OpCost LSTMGradOp::getCost(int64_t batchSize) {
  return gradientCost(*this, getInitialC(), getPeepholes(), batchSize);
}
