//===- HeterPSGradients.cpp - Gradient rules of the differentiable ops ----===//
//
// Each rule builds the gradients of an op's operands from the gradients of
// its results, as GradientOpInterface external models so that the op
// definitions stay about the forward computation. Rules reuse forward ops
// where the algebra allows (a GEMM's gradients are GEMMs, a concat's are
// slices) and the backward ops of HeterPSOps.td where it does not.
// Parameters and embedding tables are not operands: heterps-autodiff turns
// the gradients of heterps.load_param and heterps.embedding_lookup results
// into updates itself.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <limits>
#include <type_traits>

using namespace mlir;
using namespace mlir::heterps;

namespace {

/// Sums a gradient of a broadcast result back to `like`'s shape.
Value sumTo(OpBuilder &b, Location loc, Value grad, Value like) {
  if (grad.getType() == like.getType())
    return grad;
  return SumToShapeOp::create(b, loc, like.getType(), grad, like);
}

Value scalarConstant(OpBuilder &b, Location loc, Type elementType, double v) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elementType, v)));
}

Value scale(OpBuilder &b, Location loc, Value v, double factor) {
  if (factor == 1.0)
    return v;
  Type element = cast<RankedTensorType>(v.getType()).getElementType();
  return MulOp::create(b, loc, v, scalarConstant(b, loc, element, factor));
}

/// Whether `v` is computed from a trainable parameter or an embedding table.
/// Rules ask it about operands that are usually data (a loss's target), so
/// that the ops producing data need no gradient rule.
bool dependsOnTrainable(Value v) {
  SmallVector<Value> worklist{v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (isa<EmbeddingLookupOp>(def))
      return true;
    if (auto load = dyn_cast<LoadParamOp>(def)) {
      auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(
          load, load.getNameAttr());
      if (!param || !param.getFrozen())
        return true;
      continue;
    }
    llvm::append_range(worklist, def->getOperands());
  }
  return false;
}

template <typename ConcreteOp, typename Rule>
struct GradientModel
    : public GradientOpInterface::ExternalModel<GradientModel<ConcreteOp, Rule>,
                                                ConcreteOp> {
  LogicalResult buildGradient(Operation *op, OpBuilder &builder,
                              ValueRange resultGradients,
                              SmallVectorImpl<Value> &operandGradients) const {
    size_t before = operandGradients.size();
    if (failed(Rule::build(cast<ConcreteOp>(op), builder, resultGradients,
                           operandGradients)))
      return failure();
    operandGradients.resize(before + op->getNumOperands(), Value());
    return success();
  }
};

template <typename ConcreteOp, typename Rule>
void attach(MLIRContext *context) {
  ConcreteOp::template attachInterface<GradientModel<ConcreteOp, Rule>>(
      *context);
}

using Grads = SmallVectorImpl<Value>;

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

struct AddRule {
  static LogicalResult build(AddOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    g.push_back(sumTo(b, op.getLoc(), dy[0], op.getLhs()));
    g.push_back(sumTo(b, op.getLoc(), dy[0], op.getRhs()));
    return success();
  }
};

struct SubRule {
  static LogicalResult build(SubOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    Location loc = op.getLoc();
    g.push_back(sumTo(b, loc, dy[0], op.getLhs()));
    Value neg = NegOp::create(b, loc, dy[0].getType(), dy[0]);
    g.push_back(sumTo(b, loc, neg, op.getRhs()));
    return success();
  }
};

struct MulRule {
  static LogicalResult build(MulOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    Location loc = op.getLoc();
    g.push_back(
        sumTo(b, loc, MulOp::create(b, loc, dy[0], op.getRhs()), op.getLhs()));
    g.push_back(
        sumTo(b, loc, MulOp::create(b, loc, dy[0], op.getLhs()), op.getRhs()));
    return success();
  }
};

struct DivRule {
  static LogicalResult build(DivOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    Location loc = op.getLoc();
    // d(x/y)/dx = 1/y, d(x/y)/dy = -(x/y)/y.
    g.push_back(
        sumTo(b, loc, DivOp::create(b, loc, dy[0], op.getRhs()), op.getLhs()));
    Value zOverY = DivOp::create(
        b, loc, MulOp::create(b, loc, dy[0], op.getResult()), op.getRhs());
    g.push_back(sumTo(b, loc, NegOp::create(b, loc, zOverY.getType(), zOverY),
                      op.getRhs()));
    return success();
  }
};

struct PowRule {
  static LogicalResult build(PowOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    Location loc = op.getLoc();
    Value x = op.getLhs(), y = op.getRhs(), z = op.getResult();
    Type element = getElementTypeOrSelf(x.getType());
    if (!isa<FloatType>(element))
      return success();
    // d(x^y)/dx = y x^(y-1); d(x^y)/dy = x^y ln x (where x > 0).
    Value ym1 = SubOp::create(b, loc, y, scalarConstant(b, loc, element, 1.0));
    Value dx = MulOp::create(b, loc, MulOp::create(b, loc, dy[0], y),
                             PowOp::create(b, loc, x, ym1));
    g.push_back(sumTo(b, loc, dx, x));
    Value logx = LogOp::create(b, loc, x.getType(), x);
    Value dyz = MulOp::create(b, loc, dy[0], z);
    g.push_back(sumTo(b, loc, MulOp::create(b, loc, dyz, logx), y));
    return success();
  }
};

template <typename OpTy> struct UnaryRule {
  static LogicalResult build(OpTy op, OpBuilder &b, ValueRange dy, Grads &g) {
    // The rule is attached to exactly the ops UnaryKind names.
    std::optional<UnaryKind> kind = symbolizeUnaryKind(
        OpTy::getOperationName().drop_front(strlen("heterps.")));
    if (!kind)
      return op.emitOpError() << "has no unary_grad kind";
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("kind", UnaryKindAttr::get(b.getContext(), *kind))};
    if constexpr (std::is_same_v<OpTy, LeakyReluOp>)
      attrs.push_back(b.getNamedAttr("alpha", op.getAlphaAttr()));
    if constexpr (std::is_same_v<OpTy, ClipOp>) {
      if (op.getMinAttr())
        attrs.push_back(b.getNamedAttr("min", op.getMinAttr()));
      if (op.getMaxAttr())
        attrs.push_back(b.getNamedAttr("max", op.getMaxAttr()));
    }
    if constexpr (std::is_same_v<OpTy, DropoutOp>) {
      auto id = op->template getAttrOfType<IntegerAttr>(
          HeterPSDialect::getDropoutIdAttrName());
      if (!id)
        return op.emitOpError()
               << "has no '" << HeterPSDialect::getDropoutIdAttrName()
               << "': heterps-autodiff numbers dropouts before differentiating";
      attrs.push_back(b.getNamedAttr("ratio", op.getRatioAttr()));
      attrs.push_back(b.getNamedAttr("dropout_id", id));
    }
    if (!isa<FloatType>(getElementTypeOrSelf(op.getInput().getType()))) {
      g.push_back(Value());
      return success();
    }
    g.push_back(UnaryGradOp::create(
        b, op.getLoc(), TypeRange{op.getType()},
        ValueRange{op.getInput(), op.getResult(), dy[0]}, attrs));
    return success();
  }
};

template <typename OpTy, bool isLog> struct SoftmaxRule {
  static LogicalResult build(OpTy op, OpBuilder &b, ValueRange dy, Grads &g) {
    g.push_back(
        SoftmaxGradOp::create(b, op.getLoc(), TypeRange{op.getType()},
                              ValueRange{op.getResult(), dy[0]},
                              {b.getNamedAttr("axis", op.getAxisAttr()),
                               b.getNamedAttr("log", b.getBoolAttr(isLog))}));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

Value gemm(OpBuilder &b, Location loc, Type type, Value x, Value y, bool ta,
           bool tb, float alpha) {
  return GemmOp::create(b, loc, TypeRange{type}, ValueRange{x, y},
                        {b.getNamedAttr("trans_a", b.getBoolAttr(ta)),
                         b.getNamedAttr("trans_b", b.getBoolAttr(tb)),
                         b.getNamedAttr("alpha", b.getF32FloatAttr(alpha))});
}

struct GemmRule {
  static LogicalResult build(GemmOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    Location loc = op.getLoc();
    Value a = op.getA(), w = op.getB(), d = dy[0];
    bool ta = op.getTransA(), tb = op.getTransB();
    float alpha = op.getAlpha().convertToFloat();
    // Y = alpha op(A) op(B) + beta C, so d op(A) = alpha dY op(B)^T and
    // d op(B) = alpha op(A)^T dY; a transposed operand takes the transpose.
    g.push_back(ta ? gemm(b, loc, a.getType(), w, d, tb, true, alpha)
                   : gemm(b, loc, a.getType(), d, w, false, !tb, alpha));
    g.push_back(tb ? gemm(b, loc, w.getType(), d, a, true, ta, alpha)
                   : gemm(b, loc, w.getType(), a, d, !ta, false, alpha));
    if (Value c = op.getC())
      g.push_back(
          scale(b, loc, sumTo(b, loc, d, c), op.getBeta().convertToDouble()));
    return success();
  }
};

/// Swaps the last two dimensions.
Value transposeLast2(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> perm, shape(type.getShape());
  for (int64_t i = 0; i < type.getRank(); ++i)
    perm.push_back(i);
  std::swap(perm[perm.size() - 2], perm.back());
  std::swap(shape[shape.size() - 2], shape.back());
  return TransposeOp::create(
      b, loc, TypeRange{RankedTensorType::get(shape, type.getElementType())},
      ValueRange{v}, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
}

struct MatMulRule {
  static LogicalResult build(MatMulOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    auto lhs = cast<RankedTensorType>(op.getLhs().getType());
    auto rhs = cast<RankedTensorType>(op.getRhs().getType());
    Location loc = op.getLoc();
    if (lhs.getRank() < 2 || rhs.getRank() < 2)
      return op.emitOpError()
             << "gradient is implemented for operands of rank >= 2, got " << lhs
             << " and " << rhs;
    if (lhs.getRank() == 2 && rhs.getRank() == 2) {
      g.push_back(gemm(b, loc, lhs, dy[0], op.getRhs(), false, true, 1.0f));
      g.push_back(gemm(b, loc, rhs, op.getLhs(), dy[0], true, false, 1.0f));
      return success();
    }
    // Batched: dA = dY B^T and dB = A^T dY, each summed over the batch
    // dimensions its operand was broadcast along.
    Value dA =
        MatMulOp::create(b, loc, dy[0], transposeLast2(b, loc, op.getRhs()));
    Value dB =
        MatMulOp::create(b, loc, transposeLast2(b, loc, op.getLhs()), dy[0]);
    g.push_back(sumTo(b, loc, dA, op.getLhs()));
    g.push_back(sumTo(b, loc, dB, op.getRhs()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

struct ConcatRule {
  static LogicalResult build(ConcatOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    int64_t axis = op.getAxisAttr().getInt();
    if (axis < 0)
      axis += rank;
    int64_t offset = 0;
    for (Value input : op.getInputs()) {
      auto inType = cast<RankedTensorType>(input.getType());
      int64_t size = inType.getDimSize(axis);
      if (ShapedType::isDynamic(size))
        return op.emitOpError()
               << "gradient needs static sizes along the concat axis " << axis;
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      SmallVector<int64_t> ends(rank, std::numeric_limits<int64_t>::max());
      for (int64_t d = 0; d < rank; ++d)
        if (!inType.isDynamicDim(d))
          ends[d] = inType.getDimSize(d);
      starts[axis] = offset;
      ends[axis] = offset + size;
      offset += size;
      g.push_back(SliceOp::create(
          b, op.getLoc(), TypeRange{inType}, ValueRange{dy[0]},
          {b.getNamedAttr("starts", b.getDenseI64ArrayAttr(starts)),
           b.getNamedAttr("ends", b.getDenseI64ArrayAttr(ends)),
           b.getNamedAttr("steps", b.getDenseI64ArrayAttr(steps))}));
    }
    return success();
  }
};

struct ReshapeRule {
  static LogicalResult build(ReshapeOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    g.push_back(
        ReshapeOp::create(b, op.getLoc(), op.getInput().getType(), dy[0]));
    return success();
  }
};

struct TransposeRule {
  static LogicalResult build(TransposeOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    ArrayRef<int64_t> perm = op.getPerm();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    g.push_back(TransposeOp::create(
        b, op.getLoc(), TypeRange{op.getInput().getType()}, ValueRange{dy[0]},
        {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(inverse))}));
    return success();
  }
};

struct ExpandRule {
  static LogicalResult build(ExpandOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    g.push_back(sumTo(b, op.getLoc(), dy[0], op.getInput()));
    return success();
  }
};

struct CastRule {
  static LogicalResult build(CastOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getInput().getType())) ||
        !isa<FloatType>(getElementTypeOrSelf(op.getType()))) {
      g.push_back(Value());
      return success();
    }
    g.push_back(CastOp::create(b, op.getLoc(), op.getInput().getType(), dy[0]));
    return success();
  }
};

/// A gather of float data scatters its gradient back (heterps.gather_grad
/// adds the slices of indices named twice); integer data (ids) and the
/// indices have none.
struct GatherRule {
  static LogicalResult build(GatherOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getData().getType()))) {
      g.push_back(Value());
      g.push_back(Value());
      return success();
    }
    g.push_back(
        GatherGradOp::create(b, op.getLoc(), TypeRange{op.getData().getType()},
                             ValueRange{op.getData(), op.getIndices(), dy[0]},
                             {b.getNamedAttr("axis", op.getAxisAttr())}));
    g.push_back(Value());
    return success();
  }
};

/// Where's gradient goes to x where the condition holds, to y elsewhere,
/// each summed back to its operand's shape; the condition has none.
struct WhereRule {
  static LogicalResult build(WhereOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    g.push_back(Value());
    Type element = getElementTypeOrSelf(op.getType());
    if (!isa<FloatType>(element)) {
      g.push_back(Value());
      g.push_back(Value());
      return success();
    }
    Location loc = op.getLoc();
    Value zero = scalarConstant(b, loc, element, 0.0);
    Value cond = op.getCondition();
    Value toX = WhereOp::create(b, loc, op.getType(), cond, dy[0], zero);
    Value toY = WhereOp::create(b, loc, op.getType(), cond, zero, dy[0]);
    g.push_back(sumTo(b, loc, toX, op.getX()));
    g.push_back(sumTo(b, loc, toY, op.getY()));
    return success();
  }
};

/// A cumulative sum's gradient is the cumulative sum of the result's
/// gradient the other way.
struct CumSumRule {
  static LogicalResult build(CumSumOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getType()))) {
      g.push_back(Value());
      return success();
    }
    g.push_back(CumSumOp::create(b, op.getLoc(), op.getType(), dy[0],
                                 op.getAxisAttr(), op.getExclusiveAttr(),
                                 b.getBoolAttr(!op.getReverse())));
    return success();
  }
};

/// A pad adds its gradient back where each element came from.
struct PadRule {
  static LogicalResult build(PadOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getInput().getType()))) {
      g.push_back(Value());
      return success();
    }
    g.push_back(PadGradOp::create(b, op.getLoc(),
                                  TypeRange{op.getInput().getType()},
                                  ValueRange{op.getInput(), dy[0]},
                                  {b.getNamedAttr("mode", op.getModeAttr()),
                                   b.getNamedAttr("pads", op.getPadsAttr())}));
    return success();
  }
};

/// gather_elements of float data scatters its gradient back.
struct GatherElementsRule {
  static LogicalResult build(GatherElementsOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getData().getType()))) {
      g.push_back(Value());
      g.push_back(Value());
      return success();
    }
    g.push_back(GatherElementsGradOp::create(
        b, op.getLoc(), TypeRange{op.getData().getType()},
        ValueRange{op.getData(), op.getIndices(), dy[0]},
        {b.getNamedAttr("axis", op.getAxisAttr())}));
    g.push_back(Value());
    return success();
  }
};

/// scatter_elements and scatter_nd of float data: the data keeps the
/// gradient where nothing was stored over it, each update gets it where it
/// went. The gradient op takes the forward op's attributes (axis,
/// reduction); a product (scatter_nd's "mul") has none.
template <typename OpTy, typename GradOpTy> struct ScatterRule {
  static LogicalResult build(OpTy op, OpBuilder &b, ValueRange dy, Grads &g) {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getData().getType()))) {
      g.append({Value(), Value(), Value()});
      return success();
    }
    if (op.getReduction() == "mul")
      return op.emitOpError()
             << "has no gradient with reduction 'mul' (only none and add)";
    auto grads = GradOpTy::create(
        b, op.getLoc(),
        TypeRange{op.getData().getType(), op.getUpdates().getType()},
        ValueRange{op.getIndices(), dy[0]}, op->getAttrs());
    g.append({grads.getDataGrad(), Value(), grads.getUpdatesGrad()});
    return success();
  }
};

/// A recurrent layer: one gradient op with the layer's operands and
/// attributes, its result gradients appended (those off the loss path left
/// out, as the segment sizes record).
template <typename OpTy, typename GradOpTy> struct RecurrentRule {
  static LogicalResult build(OpTy op, OpBuilder &b, ValueRange dy, Grads &g) {
    Location loc = op.getLoc();
    auto segments = dyn_cast_or_null<DenseI32ArrayAttr>(
        op->getInherentAttr("operandSegmentSizes").value_or(Attribute()));
    if (!segments)
      return op.emitOpError() << "has no operandSegmentSizes";
    SmallVector<Value> operands(op->getOperands());
    SmallVector<int32_t> sizes(segments.asArrayRef());
    for (Value grad : dy) {
      sizes.push_back(grad ? 1 : 0);
      if (grad)
        operands.push_back(grad);
    }
    SmallVector<NamedAttribute> attrs;
    for (NamedAttribute attr : op->getAttrs())
      if (attr.getName() != "operandSegmentSizes")
        attrs.push_back(attr);
    attrs.push_back(
        b.getNamedAttr("operandSegmentSizes", b.getDenseI32ArrayAttr(sizes)));
    Type state = op.getYH().getType();
    SmallVector<Type> types{op.getInput().getType(), op.getWeights().getType(),
                            op.getRecurrence().getType(),
                            op.getBias().getType(), state};
    if constexpr (std::is_same_v<OpTy, LSTMOp>) {
      auto weights = cast<RankedTensorType>(op.getWeights().getType());
      types.push_back(state);
      types.push_back(RankedTensorType::get(
          {weights.getDimSize(0), 3 * static_cast<int64_t>(op.getHiddenSize())},
          weights.getElementType()));
    }
    Operation *grad = GradOpTy::create(b, loc, types, operands, attrs);
    // Gradients in the layer's operand order; sequence_lens has none.
    g.append({grad->getResult(0), grad->getResult(1), grad->getResult(2),
              grad->getResult(3)});
    if (op.getSequenceLens())
      g.push_back(Value());
    if (op.getInitialH())
      g.push_back(grad->getResult(4));
    if constexpr (std::is_same_v<OpTy, LSTMOp>) {
      if (op.getInitialC())
        g.push_back(grad->getResult(5));
      if (op.getPeepholes())
        g.push_back(grad->getResult(6));
    }
    return success();
  }
};

/// A resize: its gradient scatters back with the interpolation weights.
struct ResizeRule {
  static LogicalResult build(ResizeOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    g.push_back(
        ResizeGradOp::create(b, op.getLoc(), TypeRange{op.getInput().getType()},
                             ValueRange{op.getInput(), dy[0]}, op->getAttrs()));
    return success();
  }
};

/// A run's result row goes back to the rows of the run (see
/// segment_reduce_grad); the offsets have none.
struct SegmentReduceRule {
  static LogicalResult build(SegmentReduceOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    auto grad = SegmentReduceGradOp::create(
        b, op.getLoc(), op.getData().getType(), op.getKindAttr(), op.getData(),
        op.getOffsets(), dy[0]);
    g.append({grad.getDataGrad(), Value()});
    return success();
  }
};

/// A slice of float data puts its gradient back in place, zeros around it.
struct SliceRule {
  static LogicalResult build(SliceOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    if (!isa<FloatType>(getElementTypeOrSelf(op.getInput().getType()))) {
      g.push_back(Value());
      return success();
    }
    g.push_back(
        SliceGradOp::create(b, op.getLoc(), TypeRange{op.getInput().getType()},
                            ValueRange{op.getInput(), dy[0]},
                            {b.getNamedAttr("starts", op.getStartsAttr()),
                             b.getNamedAttr("ends", op.getEndsAttr()),
                             b.getNamedAttr("steps", op.getStepsAttr())}));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions, pooling, normalisation, convolution
//===----------------------------------------------------------------------===//

template <typename OpTy> struct ReduceRule {
  static LogicalResult build(OpTy op, OpBuilder &b, ValueRange dy, Grads &g) {
    std::optional<ReduceKind> kind = symbolizeReduceKind(
        OpTy::getOperationName().drop_front(strlen("heterps.reduce_")));
    if (!kind)
      return op.emitOpError() << "has no reduce_grad kind";
    g.push_back(ReduceGradOp::create(
        b, op.getLoc(), TypeRange{op.getInput().getType()},
        ValueRange{op.getInput(), op.getResult(), dy[0]},
        {b.getNamedAttr("kind", ReduceKindAttr::get(b.getContext(), *kind)),
         b.getNamedAttr("axes", op.getAxesAttr()),
         b.getNamedAttr("keepdims", op.getKeepdimsAttr())}));
    return success();
  }
};

struct GlobalAvgPoolRule {
  static LogicalResult build(GlobalAvgPoolOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    int64_t rank = cast<RankedTensorType>(op.getInput().getType()).getRank();
    SmallVector<int64_t> axes;
    for (int64_t d = 2; d < rank; ++d)
      axes.push_back(d);
    g.push_back(ReduceGradOp::create(
        b, op.getLoc(), TypeRange{op.getInput().getType()},
        ValueRange{op.getInput(), op.getResult(), dy[0]},
        {b.getNamedAttr("kind",
                        ReduceKindAttr::get(b.getContext(), ReduceKind::mean)),
         b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
         b.getNamedAttr("keepdims", b.getBoolAttr(true))}));
    return success();
  }
};

template <typename OpTy> struct PoolRule {
  static LogicalResult build(OpTy op, OpBuilder &b, ValueRange dy, Grads &g) {
    bool isMax = std::is_same_v<OpTy, MaxPoolOp>;
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr(
            "kind", PoolKindAttr::get(b.getContext(),
                                      isMax ? PoolKind::max : PoolKind::avg)),
        b.getNamedAttr("kernel_shape", op.getKernelShapeAttr()),
        b.getNamedAttr("ceil_mode", op.getCeilModeAttr())};
    if (op.getStridesAttr())
      attrs.push_back(b.getNamedAttr("strides", op.getStridesAttr()));
    if (op.getPadsAttr())
      attrs.push_back(b.getNamedAttr("pads", op.getPadsAttr()));
    if (op.getDilationsAttr())
      attrs.push_back(b.getNamedAttr("dilations", op.getDilationsAttr()));
    if constexpr (std::is_same_v<OpTy, AvgPoolOp>)
      attrs.push_back(
          b.getNamedAttr("count_include_pad", op.getCountIncludePadAttr()));
    g.push_back(PoolGradOp::create(
        b, op.getLoc(), TypeRange{op.getInput().getType()},
        ValueRange{op.getInput(), op.getResult(), dy[0]}, attrs));
    return success();
  }
};

struct ConvRule {
  static LogicalResult build(ConvOp op, OpBuilder &b, ValueRange dy, Grads &g) {
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("group", op.getGroupAttr())};
    if (op.getStridesAttr())
      attrs.push_back(b.getNamedAttr("strides", op.getStridesAttr()));
    if (op.getPadsAttr())
      attrs.push_back(b.getNamedAttr("pads", op.getPadsAttr()));
    if (op.getDilationsAttr())
      attrs.push_back(b.getNamedAttr("dilations", op.getDilationsAttr()));
    auto filter = cast<RankedTensorType>(op.getFilter().getType());
    auto biasType =
        RankedTensorType::get({filter.getDimSize(0)}, filter.getElementType());
    auto grad = ConvGradOp::create(
        b, op.getLoc(), TypeRange{op.getInput().getType(), filter, biasType},
        ValueRange{op.getInput(), op.getFilter(), dy[0]}, attrs);
    g.push_back(grad.getInputGrad());
    g.push_back(grad.getFilterGrad());
    if (op.getBias())
      g.push_back(grad.getBiasGrad());
    return success();
  }
};

/// A transposed convolution: the input's gradient is the convolution of
/// the result's gradient (conv_transpose_grad computes all three).
struct ConvTransposeRule {
  static LogicalResult build(ConvTransposeOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("group", op.getGroupAttr())};
    for (StringRef name : {"strides", "pads", "dilations", "output_padding"})
      if (Attribute attr = op->getAttr(name))
        attrs.push_back(b.getNamedAttr(name, attr));
    auto result = cast<RankedTensorType>(op.getResult().getType());
    auto biasType =
        RankedTensorType::get({result.getDimSize(1)}, result.getElementType());
    auto grad = ConvTransposeGradOp::create(
        b, op.getLoc(),
        TypeRange{op.getInput().getType(), op.getFilter().getType(), biasType},
        ValueRange{op.getInput(), op.getFilter(), dy[0]}, attrs);
    g.push_back(grad.getInputGrad());
    g.push_back(grad.getFilterGrad());
    if (op.getBias())
      g.push_back(grad.getBiasGrad());
    return success();
  }
};

struct BatchNormRule {
  static LogicalResult build(BatchNormOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    auto grad = BatchNormGradOp::create(
        b, op.getLoc(),
        TypeRange{op.getInput().getType(), op.getScale().getType(),
                  op.getBias().getType()},
        ValueRange{op.getInput(), op.getScale(), dy[0]},
        {b.getNamedAttr("epsilon", op.getEpsilonAttr())});
    g.append({grad.getInputGrad(), grad.getScaleGrad(), grad.getBiasGrad()});
    return success();
  }
};

struct LayerNormRule {
  static LogicalResult build(LayerNormOp op, OpBuilder &b, ValueRange dy,
                             Grads &g) {
    Type scaleType = op.getScale().getType();
    auto grad = LayerNormGradOp::create(
        b, op.getLoc(),
        TypeRange{op.getInput().getType(), scaleType, scaleType},
        ValueRange{op.getInput(), op.getScale(), dy[0]},
        {b.getNamedAttr("axis", op.getAxisAttr()),
         b.getNamedAttr("epsilon", op.getEpsilonAttr())});
    g.append({grad.getInputGrad(), grad.getScaleGrad()});
    if (op.getBias())
      g.push_back(grad.getBiasGrad());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

template <typename OpTy> struct LossRule {
  static LogicalResult build(OpTy op, OpBuilder &b, ValueRange dy, Grads &g) {
    LossKind kind;
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("reduction", op.getReductionAttr())};
    SmallVector<Value> operands{op->getOperand(0), op->getOperand(1), dy[0]};
    if constexpr (std::is_same_v<OpTy, BCELossOp>) {
      kind = LossKind::bce;
      attrs.push_back(b.getNamedAttr("from_logits", op.getFromLogitsAttr()));
    } else if constexpr (std::is_same_v<OpTy, MSELossOp>) {
      kind = LossKind::mse;
    } else if constexpr (std::is_same_v<OpTy, SoftmaxCELossOp>) {
      kind = LossKind::softmax_ce;
    } else if constexpr (std::is_same_v<OpTy, NLLLossOp>) {
      kind = LossKind::nll;
    } else {
      kind = LossKind::weighted_nll;
      if (op.getWeight())
        operands.push_back(op.getWeight());
      if (op.getIgnoreIndexAttr())
        attrs.push_back(
            b.getNamedAttr("ignore_index", op.getIgnoreIndexAttr()));
    }
    attrs.push_back(
        b.getNamedAttr("kind", LossKindAttr::get(b.getContext(), kind)));
    Value grad = LossGradOp::create(b, op.getLoc(),
                                    TypeRange{op->getOperand(0).getType()},
                                    operands, attrs);
    g.push_back(grad);
    // The squared error is symmetric in (prediction - target): a trained
    // target gets the negated gradient.
    if constexpr (std::is_same_v<OpTy, MSELossOp>)
      if (dependsOnTrainable(op.getTarget()))
        g.push_back(NegOp::create(b, op.getLoc(), grad.getType(), grad));
    return success();
  }
};

} // namespace

void mlir::heterps::attachGradientModels(MLIRContext *context) {
  attach<AddOp, AddRule>(context);
  attach<SubOp, SubRule>(context);
  attach<MulOp, MulRule>(context);
  attach<DivOp, DivRule>(context);
  attach<PowOp, PowRule>(context);
  attach<NegOp, UnaryRule<NegOp>>(context);
  attach<AbsOp, UnaryRule<AbsOp>>(context);
  attach<ExpOp, UnaryRule<ExpOp>>(context);
  attach<LogOp, UnaryRule<LogOp>>(context);
  attach<SqrtOp, UnaryRule<SqrtOp>>(context);
  attach<ReluOp, UnaryRule<ReluOp>>(context);
  attach<SigmoidOp, UnaryRule<SigmoidOp>>(context);
  attach<TanhOp, UnaryRule<TanhOp>>(context);
  attach<ErfOp, UnaryRule<ErfOp>>(context);
  attach<LeakyReluOp, UnaryRule<LeakyReluOp>>(context);
  attach<ClipOp, UnaryRule<ClipOp>>(context);
  attach<DropoutOp, UnaryRule<DropoutOp>>(context);
  attach<SoftmaxOp, SoftmaxRule<SoftmaxOp, false>>(context);
  attach<LogSoftmaxOp, SoftmaxRule<LogSoftmaxOp, true>>(context);
  attach<GemmOp, GemmRule>(context);
  attach<MatMulOp, MatMulRule>(context);
  attach<ConcatOp, ConcatRule>(context);
  attach<ReshapeOp, ReshapeRule>(context);
  attach<TransposeOp, TransposeRule>(context);
  attach<ExpandOp, ExpandRule>(context);
  attach<CastOp, CastRule>(context);
  attach<GatherOp, GatherRule>(context);
  attach<SliceOp, SliceRule>(context);
  attach<PadOp, PadRule>(context);
  attach<ResizeOp, ResizeRule>(context);
  attach<WhereOp, WhereRule>(context);
  attach<CumSumOp, CumSumRule>(context);
  attach<GatherElementsOp, GatherElementsRule>(context);
  attach<ScatterElementsOp,
         ScatterRule<ScatterElementsOp, ScatterElementsGradOp>>(context);
  attach<ScatterNDOp, ScatterRule<ScatterNDOp, ScatterNDGradOp>>(context);
  attach<SegmentReduceOp, SegmentReduceRule>(context);
  attach<ReduceSumOp, ReduceRule<ReduceSumOp>>(context);
  attach<ReduceMeanOp, ReduceRule<ReduceMeanOp>>(context);
  attach<ReduceMaxOp, ReduceRule<ReduceMaxOp>>(context);
  attach<ReduceMinOp, ReduceRule<ReduceMinOp>>(context);
  attach<ReduceProdOp, ReduceRule<ReduceProdOp>>(context);
  attach<ReduceL2Op, ReduceRule<ReduceL2Op>>(context);
  attach<GlobalAvgPoolOp, GlobalAvgPoolRule>(context);
  attach<MaxPoolOp, PoolRule<MaxPoolOp>>(context);
  attach<AvgPoolOp, PoolRule<AvgPoolOp>>(context);
  attach<ConvOp, ConvRule>(context);
  attach<ConvTransposeOp, ConvTransposeRule>(context);
  attach<RNNOp, RecurrentRule<RNNOp, RNNGradOp>>(context);
  attach<GRUOp, RecurrentRule<GRUOp, GRUGradOp>>(context);
  attach<LSTMOp, RecurrentRule<LSTMOp, LSTMGradOp>>(context);
  attach<BatchNormOp, BatchNormRule>(context);
  attach<LayerNormOp, LayerNormRule>(context);
  attach<BCELossOp, LossRule<BCELossOp>>(context);
  attach<MSELossOp, LossRule<MSELossOp>>(context);
  attach<SoftmaxCELossOp, LossRule<SoftmaxCELossOp>>(context);
  attach<NLLLossOp, LossRule<NLLLossOp>>(context);
  attach<WeightedNLLLossOp, LossRule<WeightedNLLLossOp>>(context);
}
