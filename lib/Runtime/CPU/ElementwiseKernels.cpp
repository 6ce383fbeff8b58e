//===- ElementwiseKernels.cpp - Elementwise ops and their gradients -------===//
//
// f32 tensors go through oneDNN: the unary ops and their gradients are
// eltwise primitives, add/sub/mul/div binary primitives (which broadcast
// their second operand). The loops stay for what oneDNN 2.6 has no
// primitive for (pow, casts, dropout's counter-based mask), for the forward
// log (oneDNN's is not accurate enough, see eltwiseFor), for the other
// element types, and for broadcasts of the first operand that cannot be
// swapped to the second.
//
//===----------------------------------------------------------------------===//

#include "CastValue.h"
#include "DropoutMask.h"
#include "KernelUtil.h"
#include "PrimitiveCache.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

enum class BinaryKind { Add, Sub, Mul, Div, Pow };

template <typename T> T integerPow(T base, T exp) {
  if constexpr (std::is_signed_v<T>)
    if (exp < 0)
      return base == 1 ? 1 : (base == -1 ? (exp % 2 ? -1 : 1) : 0);
  T result = 1;
  while (exp) {
    if (exp & 1)
      result = static_cast<T>(result * base);
    base = static_cast<T>(base * base);
    exp = static_cast<T>(exp >> 1);
  }
  return result;
}

template <typename T> T applyBinary(BinaryKind kind, T a, T b) {
  switch (kind) {
  case BinaryKind::Add:
    return static_cast<T>(a + b);
  case BinaryKind::Sub:
    return static_cast<T>(a - b);
  case BinaryKind::Mul:
    return static_cast<T>(a * b);
  case BinaryKind::Div:
    if constexpr (std::is_integral_v<T>)
      return b == 0 ? T(0) : static_cast<T>(a / b);
    else
      return a / b;
  case BinaryKind::Pow:
    if constexpr (std::is_integral_v<T>)
      return integerPow(a, b);
    else
      return static_cast<T>(std::pow(a, b));
  }
  return T();
}

class BinaryKernel : public Kernel {
public:
  BinaryKernel(const OpInfo &op, BinaryKind kind) : Kernel(op), kind(kind) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    out = broadcastShapes(in[0], in[1], info);
    sa = broadcastStrides(in[0], out);
    sb = broadcastStrides(in[1], out);
    same = in[0] == in[1];
    prim = kind != BinaryKind::Pow && planIsF32(info)
               ? cache.get(in, [&](BoundPrimitive &p) { return build(in, p); })
               : nullptr;
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (in[0]->dtype() != in[1]->dtype())
      fail(info.describe(), ": operand element types differ (",
           dtypeName(in[0]->dtype()), ", ", dtypeName(in[1]->dtype()), ")");
    if (prim && allF32(in, res)) {
      prim->execute(info, in, res);
      return;
    }
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        fail(info.describe(), ": no arithmetic on booleans");
      } else {
        const T *a = in[0]->as<T>(), *b = in[1]->as<T>();
        T *y = res[0]->as<T>();
        if (same) {
          int64_t n = res[0]->numElements();
          switch (kind) {
          case BinaryKind::Add:
            for (int64_t i = 0; i < n; ++i)
              y[i] = static_cast<T>(a[i] + b[i]);
            return;
          case BinaryKind::Mul:
            for (int64_t i = 0; i < n; ++i)
              y[i] = static_cast<T>(a[i] * b[i]);
            return;
          default:
            for (int64_t i = 0; i < n; ++i)
              y[i] = applyBinary(kind, a[i], b[i]);
            return;
          }
        }
        forEachBroadcast(out, sa, sb, [&](int64_t o, int64_t ia, int64_t ib) {
          y[o] = applyBinary(kind, a[ia], b[ib]);
        });
      }
    });
  }

private:
  /// oneDNN's binary primitive broadcasts src1 only. When the first operand
  /// is the broadcast one, the operands swap: a + b and a * b commute, and
  /// a - b is b - a negated by an eltwise post-op (exact in IEEE
  /// arithmetic). a / b has no exact swapped form, and when both operands
  /// broadcast neither can be src0: those run as loops.
  bool build(const std::vector<Shape> &in, BoundPrimitive &p) {
    size_t rank = out.size();
    Shape a = padRank(in[0], rank), b = padRank(in[1], rank);
    size_t src0 = 0, src1 = 1;
    bool negate = false;
    if (a != out) {
      if (b != out || kind == BinaryKind::Div)
        return false;
      std::swap(a, b);
      std::swap(src0, src1);
      negate = kind == BinaryKind::Sub;
    }
    dnnl::algorithm alg =
        kind == BinaryKind::Add   ? dnnl::algorithm::binary_add
        : kind == BinaryKind::Sub ? dnnl::algorithm::binary_sub
        : kind == BinaryKind::Mul ? dnnl::algorithm::binary_mul
                                  : dnnl::algorithm::binary_div;
    dnnl::primitive_attr attr = scratchpadAttr();
    if (negate) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, -1.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    dnnl::memory::desc da = plainDesc(a), db = plainDesc(b),
                       dy = plainDesc(out);
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(alg, da, db, dy), attr,
                                    cpuDevice().engine);
    p.input(DNNL_ARG_SRC_0, src0, da);
    p.input(DNNL_ARG_SRC_1, src1, db);
    p.output(DNNL_ARG_DST, 0, dy);
    p.set(dnnl::binary(pd), pd);
    return true;
  }

  BinaryKind kind;
  Shape out;
  std::vector<int64_t> sa, sb;
  bool same = false;
  PrimitiveCache cache;
  BoundPrimitive *prim = nullptr;
};

template <BinaryKind K> class BinaryKernelOf : public BinaryKernel {
public:
  explicit BinaryKernelOf(const OpInfo &op) : BinaryKernel(op, K) {}
};

/// The oneDNN eltwise algorithm of a unary op (or of its gradient) with its
/// alpha and beta.
struct Eltwise {
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0, beta = 0;
  /// The gradient reads the forward result (DNNL_ARG_DST) instead of the
  /// input: it is a function of the result (y' = y (1 - y) for logistic,
  /// 1 - y^2 for tanh, y for exp, 1 / 2y for sqrt), and these
  /// *_use_dst_for_bwd algorithms skip recomputing it.
  bool useDst = false;
};

/// Null `alg` for dropout, whose mask is a hash of the element index, for
/// the forward log, relu, exp and clip (below), and for a clip gradient
/// whose bounds cross.
///
/// At the kinks, where any subgradient is right, the f32 gradients are
/// oneDNN's: leaky_relu takes alpha * dy at 0 (as PyTorch does), clip
/// passes dy for min < x <= max (the loop for min <= x <= max).
Eltwise eltwiseFor(const std::string &kind, bool gradient, double alpha,
                   double lo, double hi) {
  using A = dnnl::algorithm;
  auto f = [](double v) { return static_cast<float>(v); };
  // The forward relu, clip and exp stay loops: oneDNN turns NaN into 0,
  // the lower bound and inf; PyTorch and ONNX keep it NaN (a NaN weight
  // behind a relu would otherwise train on unnoticed).
  if (kind == "relu")
    return gradient ? Eltwise{A::eltwise_relu} : Eltwise{};
  if (kind == "leaky_relu")
    return {A::eltwise_relu, f(alpha)};
  if (kind == "sigmoid")
    return gradient ? Eltwise{A::eltwise_logistic_use_dst_for_bwd, 0, 0, true}
                    : Eltwise{A::eltwise_logistic};
  if (kind == "tanh")
    return gradient ? Eltwise{A::eltwise_tanh_use_dst_for_bwd, 0, 0, true}
                    : Eltwise{A::eltwise_tanh};
  if (kind == "exp")
    return gradient ? Eltwise{A::eltwise_exp_use_dst_for_bwd, 0, 0, true}
                    : Eltwise{};
  if (kind == "sqrt")
    return gradient ? Eltwise{A::eltwise_sqrt_use_dst_for_bwd, 0, 0, true}
                    : Eltwise{A::eltwise_sqrt};
  // The forward log stays a loop: oneDNN 2.6's eltwise_log is off by up to
  // 3.7e-6 absolute, which is a 5% error just above 1 and gives
  // log(1) = -1.4e-6 (std::log is within an ulp). Its gradient, dy / x, is
  // accurate.
  if (kind == "log")
    return gradient ? Eltwise{A::eltwise_log} : Eltwise{};
  if (kind == "abs")
    return {A::eltwise_abs};
  if (kind == "neg")
    return {A::eltwise_linear, -1.0f, 0.0f};
  if (kind == "clip" && lo <= hi && gradient)
    return {A::eltwise_clip, f(lo), f(hi)};
  return {};
}

/// Builds the eltwise primitive of `e` over a tensor of `shape`: the forward
/// (input 0 to output 0) or, for the gradient, the backward primitive over
/// the operands (input, result, result_grad) of heterps.unary_grad.
bool buildEltwise(const Eltwise &e, bool gradient, const Shape &shape,
                  BoundPrimitive &p) {
  if (e.alg == dnnl::algorithm::undef)
    return false;
  const dnnl::engine &engine = cpuDevice().engine;
  dnnl::memory::desc desc = plainDesc(shape);
  if (!gradient) {
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, e.alg,
                                    desc, e.alpha, e.beta),
        scratchpadAttr(), engine);
    p.input(DNNL_ARG_SRC, 0, desc);
    p.output(DNNL_ARG_DST, 0, desc);
    p.set(dnnl::eltwise_forward(pd), pd);
    return true;
  }
  // The backward primitive descriptor wants its forward as a hint.
  dnnl::eltwise_forward::primitive_desc forward(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, e.alg,
                                  desc, e.alpha, e.beta),
      engine);
  dnnl::eltwise_backward::primitive_desc pd(
      dnnl::eltwise_backward::desc(e.alg, desc, desc, e.alpha, e.beta),
      scratchpadAttr(), engine, forward);
  p.input(e.useDst ? DNNL_ARG_DST : DNNL_ARG_SRC, e.useDst ? 1 : 0, desc);
  p.input(DNNL_ARG_DIFF_DST, 2, desc);
  p.output(DNNL_ARG_DIFF_SRC, 0, desc);
  p.set(dnnl::eltwise_backward(pd), pd);
  return true;
}

/// The attributes an elementwise op and its gradient share, and the
/// eltwise primitive that computes the f32 case.
class UnaryKernelBase : public Kernel {
public:
  UnaryKernelBase(const OpInfo &op, std::string kind, bool backward)
      : Kernel(op), kind(std::move(kind)), backward(backward),
        alpha(op.getFloat("alpha", 0.01)),
        lo(op.getFloat("min", -std::numeric_limits<double>::infinity())),
        hi(op.getFloat("max", std::numeric_limits<double>::infinity())),
        ratio(op.getFloat("ratio", 0.5)), dropoutId(op.getInt("dropout_id", 0)),
        eltwise(eltwiseFor(this->kind, backward, alpha, lo, hi)) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    requireSameShapes(in, info);
    prim = planIsF32(info)
               ? cache.get(in,
                           [&](BoundPrimitive &p) {
                             return buildEltwise(eltwise, backward, in[0], p);
                           })
               : nullptr;
    return {in[0]};
  }

protected:
  std::string kind;
  bool backward;
  double alpha, lo, hi, ratio;
  int64_t dropoutId;
  Eltwise eltwise;
  PrimitiveCache cache;
  BoundPrimitive *prim = nullptr;
};

class UnaryKernel : public UnaryKernelBase {
public:
  explicit UnaryKernel(const OpInfo &op)
      : UnaryKernelBase(op, op.name().substr(strlen("heterps.")), false) {}

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    if (prim && allF32(in, res)) {
      prim->execute(info, in, res);
      return;
    }
    int64_t n = in[0]->numElements();
    if (kind == "clip") {
      dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
        using T = decltype(tag);
        const T *x = in[0]->as<T>();
        T *y = res[0]->as<T>();
        double l = lo, h = hi;
        for (int64_t i = 0; i < n; ++i) {
          double v = static_cast<double>(x[i]);
          y[i] = v < l ? static_cast<T>(l) : v > h ? static_cast<T>(h) : x[i];
        }
      });
      return;
    }
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>();
      T *y = res[0]->as<T>();
      if (kind == "relu") {
        // NaN is not <= 0: it stays NaN.
        for (int64_t i = 0; i < n; ++i)
          y[i] = x[i] <= T(0) ? T(0) : x[i];
      } else if (kind == "sigmoid") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = T(1) / (T(1) + std::exp(-x[i]));
      } else if (kind == "tanh") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = std::tanh(x[i]);
      } else if (kind == "erf") {
        // oneDNN 2.6 has erf only inside gelu_erf.
        for (int64_t i = 0; i < n; ++i)
          y[i] = std::erf(x[i]);
      } else if (kind == "exp") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = std::exp(x[i]);
      } else if (kind == "log") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = std::log(x[i]);
      } else if (kind == "sqrt") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = std::sqrt(x[i]);
      } else if (kind == "neg") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = -x[i];
      } else if (kind == "abs") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = std::abs(x[i]);
      } else if (kind == "leaky_relu") {
        T a = static_cast<T>(alpha);
        for (int64_t i = 0; i < n; ++i)
          y[i] = x[i] >= T(0) ? x[i] : a * x[i];
      } else if (kind == "dropout") {
        if (!ctx.training || ratio == 0) {
          std::memcpy(y, x, n * sizeof(T));
          return;
        }
        T scale = static_cast<T>(1.0 / (1.0 - ratio));
        for (int64_t i = 0; i < n; ++i)
          y[i] = dropoutKeeps(ctx.seed, ctx.step, dropoutId, i, ratio)
                     ? x[i] * scale
                     : T(0);
      } else {
        fail(info.describe(), ": no CPU kernel");
      }
    });
  }
};

/// heterps.unary_grad: operands (input, result, result_grad).
class UnaryGradKernel : public UnaryKernelBase {
public:
  explicit UnaryGradKernel(const OpInfo &op)
      : UnaryKernelBase(op, op.getString("kind"), true) {}

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    if (prim && allF32(in, res)) {
      prim->execute(info, in, res);
      return;
    }
    int64_t n = in[0]->numElements();
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>(), *y = in[1]->as<T>(), *dy = in[2]->as<T>();
      T *dx = res[0]->as<T>();
      if (kind == "relu") {
        // As oneDNN and PyTorch: dy passes where x is NaN.
        for (int64_t i = 0; i < n; ++i)
          dx[i] = x[i] <= T(0) ? T(0) : dy[i];
      } else if (kind == "sigmoid") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dy[i] * y[i] * (T(1) - y[i]);
      } else if (kind == "tanh") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dy[i] * (T(1) - y[i] * y[i]);
      } else if (kind == "erf") {
        // d/dx erf(x) = 2 / sqrt(pi) exp(-x^2).
        const T c = static_cast<T>(1.1283791670955126);
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dy[i] * c * std::exp(-x[i] * x[i]);
      } else if (kind == "exp") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dy[i] * y[i];
      } else if (kind == "log") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dy[i] / x[i];
      } else if (kind == "sqrt") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dy[i] / (T(2) * y[i]);
      } else if (kind == "neg") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = -dy[i];
      } else if (kind == "abs") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = x[i] > T(0) ? dy[i] : (x[i] < T(0) ? -dy[i] : T(0));
      } else if (kind == "leaky_relu") {
        T a = static_cast<T>(alpha);
        for (int64_t i = 0; i < n; ++i)
          dx[i] = x[i] >= T(0) ? dy[i] : a * dy[i];
      } else if (kind == "clip") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = x[i] >= lo && x[i] <= hi ? dy[i] : T(0);
      } else if (kind == "dropout") {
        T scale = static_cast<T>(1.0 / (1.0 - ratio));
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dropoutKeeps(ctx.seed, ctx.step, dropoutId, i, ratio)
                      ? dy[i] * scale
                      : T(0);
      } else {
        fail(info.describe(), ": unknown kind '", kind, "'");
      }
    });
  }
};

bool isHalf(DType t) { return t == DType::F16 || t == DType::BF16; }

class CastKernel : public Kernel {
public:
  using Kernel::Kernel;
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = in[0]->numElements();
    DType fromType = in[0]->dtype(), toType = res[0]->dtype();
    if (isHalf(fromType) || isHalf(toType)) {
      castHalf(*in[0], *res[0], n);
      return;
    }
    dispatchNumeric(in[0]->dtype(), info, [&](auto from) {
      using F = decltype(from);
      dispatchNumeric(res[0]->dtype(), info, [&](auto to) {
        using T = decltype(to);
        const F *x = in[0]->as<F>();
        T *y = res[0]->as<T>();
        for (int64_t i = 0; i < n; ++i)
          y[i] = castValue<T>(x[i]);
      });
    });
  }

private:
  /// A cast from or to f16/bf16 goes through float.
  void castHalf(const Tensor &x, Tensor &y, int64_t n) {
    std::vector<double> &v = scratch;
    v.resize(n);
    if (isHalf(x.dtype())) {
      for (int64_t i = 0; i < n; ++i)
        v[i] = halfToFloat(x.as<uint16_t>()[i], x.dtype() == DType::BF16);
    } else {
      dispatchNumeric(x.dtype(), info, [&](auto from) {
        using F = decltype(from);
        for (int64_t i = 0; i < n; ++i)
          v[i] = static_cast<double>(x.as<F>()[i]);
      });
    }
    if (isHalf(y.dtype())) {
      for (int64_t i = 0; i < n; ++i)
        y.as<uint16_t>()[i] =
            floatToHalf(static_cast<float>(v[i]), y.dtype() == DType::BF16);
      return;
    }
    dispatchNumeric(y.dtype(), info, [&](auto to) {
      using T = decltype(to);
      for (int64_t i = 0; i < n; ++i)
        y.as<T>()[i] = castValue<T>(v[i]);
    });
  }

  std::vector<double> scratch; // capacity kept between steps
};

} // namespace

void cpu::registerElementwiseKernels(KernelRegistry &r) {
  addKernel<BinaryKernelOf<BinaryKind::Add>>(r, "heterps.add");
  addKernel<BinaryKernelOf<BinaryKind::Sub>>(r, "heterps.sub");
  addKernel<BinaryKernelOf<BinaryKind::Mul>>(r, "heterps.mul");
  addKernel<BinaryKernelOf<BinaryKind::Div>>(r, "heterps.div");
  addKernel<BinaryKernelOf<BinaryKind::Pow>>(r, "heterps.pow");
  for (const char *name :
       {"heterps.relu", "heterps.sigmoid", "heterps.tanh", "heterps.erf",
        "heterps.exp", "heterps.log", "heterps.sqrt", "heterps.neg",
        "heterps.abs", "heterps.leaky_relu", "heterps.clip", "heterps.dropout"})
    addKernel<UnaryKernel>(r, name);
  addKernel<UnaryGradKernel>(r, "heterps.unary_grad");
  addKernel<CastKernel>(r, "heterps.cast");
}
