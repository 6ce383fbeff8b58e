//===- ImportElementwise.cpp - ONNX elementwise ops -----------------------===//
//
// Add, Sub, Mul, Div, Pow, the unary activations, Softmax, Cast, Clip, the
// comparisons, the logical ops and Where. On values known at import time
// (shape arithmetic) they fold with NumPy broadcasting instead of building
// ops.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"
#include "heterps/Support/CheckedMath.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;
using ::heterps::checkedAdd;
using ::heterps::checkedMul;
using ::heterps::checkedProduct;

/// Folds an elementwise binary op over known tensors with broadcasting.
/// Folds Add, Sub, Mul, Div (and Pow of floats) of known values; nullopt
/// when it cannot, with `overflow` set when integers would overflow.
std::optional<Known> onnx_import::foldBinary(StringRef op, const Known &x,
                                             const Known &y, bool *overflow) {
  if (x.isFloat() != y.isFloat())
    return std::nullopt;
  size_t rank = std::max(x.shape.size(), y.shape.size());
  Ints xs(rank - x.shape.size(), 1), ys(rank - y.shape.size(), 1), out;
  llvm::append_range(xs, x.shape);
  llvm::append_range(ys, y.shape);
  for (size_t d = 0; d < rank; ++d) {
    if (xs[d] != ys[d] && xs[d] != 1 && ys[d] != 1)
      return std::nullopt;
    out.push_back(std::max(xs[d], ys[d]));
  }
  // Folding is for shape arithmetic; a broadcast that would build a large
  // constant stays an op.
  std::optional<int64_t> n = checkedProduct(out);
  if (!n || *n > kMaxFoldedElements)
    return std::nullopt;
  Known r;
  r.shape = out;
  r.elementType = x.elementType;
  Ints os = stridesOf(out), xst = stridesOf(xs), yst = stridesOf(ys);
  for (int64_t e = 0; e < *n; ++e) {
    int64_t xi = 0, yi = 0, rem = e;
    for (size_t d = 0; d < rank; ++d) {
      int64_t c = rem / os[d];
      rem %= os[d];
      xi += (xs[d] == 1 ? 0 : c) * xst[d];
      yi += (ys[d] == 1 ? 0 : c) * yst[d];
    }
    if (!x.isFloat()) {
      int64_t p = x.ints[xi], q = y.ints[yi];
      if (p == kDyn || q == kDyn) {
        // B * H, H * B and (B * H) / H stay multiples of the batch.
        BatchMultiple m;
        if (op == "Mul" && p == kDyn && q != kDyn)
          m = x.batchAt(xi).scaled(q, 1);
        else if (op == "Mul" && q == kDyn && p != kDyn)
          m = y.batchAt(yi).scaled(p, 1);
        else if (op == "Div" && p == kDyn && q != kDyn)
          m = x.batchAt(xi).scaled(1, q);
        r.pushDynamic(m);
        continue;
      }
      // Exact 64-bit arithmetic; an overflow is reported, not wrapped.
      std::optional<int64_t> v;
      if (op == "Add")
        v = checkedAdd(p, q);
      else if (op == "Sub")
        v = q == std::numeric_limits<int64_t>::min() ? std::nullopt
                                                     : checkedAdd(p, -q);
      else if (op == "Mul")
        v = checkedMul(p, q);
      else if (op == "Div") {
        if (q == 0)
          return std::nullopt;
        if (!(p == std::numeric_limits<int64_t>::min() && q == -1))
          v = p / q;
      } else {
        return std::nullopt;
      }
      if (!v) {
        if (overflow)
          *overflow = true;
        return std::nullopt;
      }
      r.ints.push_back(*v);
      continue;
    }
    double a = x.at(xi), c = y.at(yi);
    double v;
    if (op == "Add")
      v = a + c;
    else if (op == "Sub")
      v = a - c;
    else if (op == "Mul")
      v = a * c;
    else if (op == "Div") {
      v = a / c;
    } else
      v = std::pow(a, c);
    push(r, v);
  }
  return r;
}
/// Folds an elementwise op of known values with NumPy broadcasting:
/// `f(elements)` gives each result element, nullopt when it cannot be known
/// (an element known only at run time). Results beyond kMaxFoldedElements
/// are not folded.
std::optional<Known> onnx_import::foldBroadcast(
    ArrayRef<const Known *> in, Type resultType,
    llvm::function_ref<std::optional<double>(ArrayRef<int64_t>)> f) {
  size_t rank = 0;
  for (const Known *k : in)
    rank = std::max(rank, k->shape.size());
  SmallVector<Ints> shapes;
  Ints out(rank, 1);
  for (const Known *k : in) {
    Ints s(rank - k->shape.size(), 1);
    llvm::append_range(s, k->shape);
    for (size_t d = 0; d < rank; ++d) {
      if (s[d] != out[d] && s[d] != 1 && out[d] != 1)
        return std::nullopt;
      out[d] = std::max(out[d], s[d]);
    }
    shapes.push_back(s);
  }
  std::optional<int64_t> n = checkedProduct(out);
  if (!n || *n > kMaxFoldedElements)
    return std::nullopt;
  Known r;
  r.shape = out;
  r.elementType = resultType;
  Ints os = stridesOf(out);
  SmallVector<Ints> strides;
  for (const Ints &s : shapes)
    strides.push_back(stridesOf(s));
  Ints at(in.size());
  for (int64_t e = 0; e < *n; ++e) {
    std::fill(at.begin(), at.end(), 0);
    int64_t rem = e;
    for (size_t d = 0; d < rank; ++d) {
      int64_t c = rem / os[d];
      rem %= os[d];
      for (size_t i = 0; i < in.size(); ++i)
        at[i] += (shapes[i][d] == 1 ? 0 : c) * strides[i][d];
    }
    std::optional<double> v = f(at);
    if (!v)
      return std::nullopt;
    push(r, *v);
  }
  return r;
}
LogicalResult Importer::convertCompare(StringRef op) {
  const Known *x = foldable(0), *y = foldable(1);
  if (x && y) {
    std::optional<Known> r =
        foldBroadcast({x, y}, b.getI1Type(),
                      [&](ArrayRef<int64_t> at) -> std::optional<double> {
                        if ((!x->isFloat() && x->ints[at[0]] == kDyn) ||
                            (!y->isFloat() && y->ints[at[1]] == kDyn))
                          return std::nullopt;
                        if (!x->isFloat() && !y->isFloat()) {
                          int64_t a = x->ints[at[0]], c = y->ints[at[1]];
                          bool v = op == "Equal"         ? a == c
                                   : op == "Less"        ? a < c
                                   : op == "Greater"     ? a > c
                                   : op == "LessOrEqual" ? a <= c
                                                         : a >= c;
                          return v ? 1.0 : 0.0;
                        }
                        double a = x->at(at[0]), c = y->at(at[1]);
                        bool v = op == "Equal"         ? a == c
                                 : op == "Less"        ? a < c
                                 : op == "Greater"     ? a > c
                                 : op == "LessOrEqual" ? a <= c
                                                       : a >= c;
                        return v ? 1.0 : 0.0;
                      });
    if (r) {
      setKnown(*r);
      return success();
    }
  }
  FailureOr<Value> lhs = input(0), rhs = input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  CompareKind kind = llvm::StringSwitch<CompareKind>(op)
                         .Case("Equal", CompareKind::eq)
                         .Case("Less", CompareKind::lt)
                         .Case("Greater", CompareKind::gt)
                         .Case("LessOrEqual", CompareKind::le)
                         .Default(CompareKind::ge);
  return emit(
      make<CompareOp>(CompareKindAttr::get(b.getContext(), kind), *lhs, *rhs));
}
LogicalResult Importer::convertLogical(StringRef op) {
  if (op == "Not") {
    if (const Known *k = foldable(0); k && !k->isFloat()) {
      Known r = *k;
      for (int64_t &v : r.ints)
        v = v == 0;
      setKnown(r);
      return success();
    }
    FailureOr<Value> x = input(0);
    if (failed(x))
      return failure();
    setOutput(NotOp::create(b, loc, x->getType(), *x));
    return success();
  }
  // Booleans are known as integers; other types are left to the op's
  // verifier, which names them.
  const Known *x = foldable(0), *y = foldable(1);
  if (x && y && !x->isFloat() && !y->isFloat()) {
    std::optional<Known> r =
        foldBroadcast({x, y}, b.getI1Type(), [&](ArrayRef<int64_t> at) {
          bool a = x->ints[at[0]] != 0, c = y->ints[at[1]] != 0;
          bool v = op == "And" ? a && c : op == "Or" ? a || c : a != c;
          return std::optional<double>(v ? 1.0 : 0.0);
        });
    if (r) {
      setKnown(*r);
      return success();
    }
  }
  FailureOr<Value> lhs = input(0), rhs = input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  LogicKind kind = op == "And"  ? LogicKind::and_
                   : op == "Or" ? LogicKind::or_
                                : LogicKind::xor_;
  return emit(
      make<LogicalOp>(LogicKindAttr::get(b.getContext(), kind), *lhs, *rhs));
}
LogicalResult Importer::convertWhere() {
  const Known *c = foldable(0), *x = foldable(1), *y = foldable(2);
  if (c && x && y && !c->isFloat() && x->isFloat() == y->isFloat()) {
    std::optional<Known> r = foldBroadcast(
        {c, x, y}, x->elementType,
        [&](ArrayRef<int64_t> at) -> std::optional<double> {
          const Known *from = c->ints[at[0]] ? x : y;
          int64_t i = c->ints[at[0]] ? at[1] : at[2];
          if (!from->isFloat() && from->ints[i] == kDyn)
            return static_cast<double>(kDyn);
          // Integers beyond 2^53 would round through double:
          // the op computes them instead.
          if (!from->isFloat() && (from->ints[i] > (int64_t(1) << 53) ||
                                   from->ints[i] < -(int64_t(1) << 53)))
            return std::nullopt;
          return from->at(i);
        });
    if (r) {
      setKnown(*r);
      return success();
    }
  }
  FailureOr<Value> cond = input(0), lhs = input(1), rhs = input(2);
  if (failed(cond) || failed(lhs) || failed(rhs))
    return failure();
  return emit(make<WhereOp>(*cond, *lhs, *rhs));
}
LogicalResult Importer::convertBinary(StringRef op) {
  // Before opset 7 these ops broadcast only with `broadcast = 1` and an
  // optional `axis`; NumPy alignment (trailing) is what `axis` absent means.
  if (attr("axis"))
    return nodeError() << "legacy broadcasting with an explicit 'axis' is not "
                          "supported";
  const Known *x = foldable(0), *y = foldable(1);
  if (x && y && !x->isFloat() && op != "Pow") {
    bool overflow = false;
    if (std::optional<Known> r = foldBinary(op, *x, *y, &overflow)) {
      setKnown(*r);
      return success();
    }
    if (overflow)
      return nodeError() << "the integer arithmetic overflows 64 bits";
  }
  FailureOr<Value> lhs = input(0), rhs = input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  // Pow may take an exponent of another type (opset 12); the dialect's
  // binary ops take one element type.
  if (op == "Pow" &&
      typeOf(*lhs).getElementType() != typeOf(*rhs).getElementType())
    rhs = CastOp::create(
              b, loc, typeOf(*rhs).clone(typeOf(*lhs).getElementType()), *rhs)
              .getResult();
  if (op == "Add")
    return emit(make<AddOp>(*lhs, *rhs));
  if (op == "Sub")
    return emit(make<SubOp>(*lhs, *rhs));
  if (op == "Mul")
    return emit(make<MulOp>(*lhs, *rhs));
  if (op == "Div")
    return emit(make<DivOp>(*lhs, *rhs));
  return emit(make<PowOp>(*lhs, *rhs));
}
LogicalResult Importer::convertUnary(StringRef op) {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  Type t = x->getType();
  Value r;
  if (op == "Neg")
    r = NegOp::create(b, loc, t, *x);
  else if (op == "Abs")
    r = AbsOp::create(b, loc, t, *x);
  else if (op == "Exp")
    r = ExpOp::create(b, loc, t, *x);
  else if (op == "Log")
    r = LogOp::create(b, loc, t, *x);
  else if (op == "Sqrt")
    r = SqrtOp::create(b, loc, t, *x);
  else if (op == "Relu")
    r = ReluOp::create(b, loc, t, *x);
  else if (op == "Sigmoid")
    r = SigmoidOp::create(b, loc, t, *x);
  else if (op == "Tanh")
    r = TanhOp::create(b, loc, t, *x);
  else if (op == "Erf")
    r = ErfOp::create(b, loc, t, *x);
  else if (op == "LeakyRelu") {
    FailureOr<float> alpha = finiteFloatAttr("alpha", 0.01f);
    if (failed(alpha))
      return failure();
    r = LeakyReluOp::create(b, loc, t, *x, APFloat(*alpha));
  }
  setOutput(r);
  return success();
}
LogicalResult Importer::convertSoftmax(bool log) {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  RankedTensorType type = typeOf(*x);
  int64_t rank = type.getRank();
  int64_t axis = intAttr("axis", opset >= 13 ? -1 : 1);
  std::optional<int64_t> norm = normalizeAxis(axis, rank);
  if (!norm)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  auto build = [&](Value v, int64_t a) -> Value {
    if (log)
      return LogSoftmaxOp::create(b, loc, v.getType(), v,
                                  b.getI64IntegerAttr(a));
    return SoftmaxOp::create(b, loc, v.getType(), v, b.getI64IntegerAttr(a));
  };
  // Before opset 13 the input is coerced to 2-D at `axis` and normalised over
  // the whole trailing block; that is one axis when `axis` is the last.
  if (opset >= 13 || *norm == rank - 1) {
    setOutput(build(*x, *norm));
    return success();
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t s = type.getDimSize(d);
    int64_t &p = d < *norm ? outer : inner;
    p = ShapedType::isDynamic(s) || ShapedType::isDynamic(p) ? kDyn : p * s;
  }
  if (ShapedType::isDynamic(inner))
    return nodeError() << "cannot coerce " << formatShape(type.getShape())
                       << " to 2-D at axis " << axis
                       << ": the trailing block is dynamic";
  auto flat = RankedTensorType::get({outer, inner}, type.getElementType());
  Value f = ReshapeOp::create(b, loc, flat, *x);
  Value s = build(f, 1);
  setOutput(ReshapeOp::create(b, loc, type, s));
  return success();
}
LogicalResult Importer::convertCast() {
  FailureOr<Type> to =
      elementType(intAttr("to", 0), "the target type of the Cast");
  if (failed(to))
    return failure();
  if (const Known *k = foldable(0)) {
    Known r;
    r.shape = k->shape;
    r.elementType = *to;
    for (int64_t i = 0, n = k->size(); i < n; ++i) {
      if (!k->isFloat() && k->ints[i] == kDyn && !r.isFloat()) {
        r.pushDynamic(k->batchAt(i));
        continue;
      }
      // A float that no 64-bit integer holds has no integer value.
      if (k->isFloat() && !r.isFloat() &&
          !(k->at(i) >= -9.2233720368547758e18 &&
            k->at(i) < 9.2233720368547758e18))
        return nodeError() << "casts " << k->at(i)
                           << " to an integer type, which cannot hold it";
      pushFrom(r, *k, i);
    }
    setKnown(r);
    return success();
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  if (typeOf(*x).getElementType() == *to) {
    setOutput(*x);
    return success();
  }
  setOutput(CastOp::create(b, loc, typeOf(*x).clone(*to), *x));
  return success();
}
LogicalResult Importer::convertClip() {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  FloatAttr lo, hi;
  if (opset < 11) {
    if (attr("min"))
      lo = b.getF32FloatAttr(floatAttr("min", 0));
    if (attr("max"))
      hi = b.getF32FloatAttr(floatAttr("max", 0));
  } else {
    for (int i : {1, 2}) {
      if (!has(i))
        continue;
      const Known *k = known(i);
      if (!k || k->size() != 1)
        return nodeError() << (i == 1 ? "min" : "max")
                           << " must be a scalar known at import time";
      (i == 1 ? lo : hi) = b.getF32FloatAttr(k->at(0));
    }
  }
  setOutput(ClipOp::create(b, loc, x->getType(), *x, lo, hi));
  return success();
}
