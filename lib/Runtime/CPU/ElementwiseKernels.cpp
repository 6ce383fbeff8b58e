//===- ElementwiseKernels.cpp - Elementwise ops and their gradients -------===//
//
// Plain loops over contiguous buffers: the compiler vectorises them, and a
// oneDNN eltwise primitive would add a dispatch per op for the small
// tensors of a CTR model's head without being faster.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

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
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (in[0]->dtype() != in[1]->dtype())
      fail() << info.describe() << ": operand element types differ ("
             << dtypeName(in[0]->dtype()) << ", " << dtypeName(in[1]->dtype())
             << ")";
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        fail() << info.describe() << ": no arithmetic on booleans";
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
  BinaryKind kind;
  Shape out;
  std::vector<int64_t> sa, sb;
  bool same = false;
};

template <BinaryKind K> class BinaryKernelOf : public BinaryKernel {
public:
  explicit BinaryKernelOf(const OpInfo &op) : BinaryKernel(op, K) {}
};

/// Dropout masks are a hash of (seed, step, dropout id, element), so the
/// gradient redraws the forward's mask without storing it.
inline bool dropoutKeeps(uint64_t seed, int64_t step, int64_t id, int64_t i,
                         double ratio) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(step) << 20) ^
               (static_cast<uint64_t>(id) << 52) ^ static_cast<uint64_t>(i);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  double u = static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
  return u >= ratio;
}

class UnaryKernel : public Kernel {
public:
  explicit UnaryKernel(const OpInfo &op)
      : Kernel(op), kind(op.name().substr(strlen("heterps."))) {
    alpha = op.getFloat("alpha", 0.01);
    lo = op.getFloat("min", -std::numeric_limits<double>::infinity());
    hi = op.getFloat("max", std::numeric_limits<double>::infinity());
    ratio = op.getFloat("ratio", 0.5);
    dropoutId = op.getInt("dropout_id", 0);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
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
        for (int64_t i = 0; i < n; ++i)
          y[i] = x[i] > T(0) ? x[i] : T(0);
      } else if (kind == "sigmoid") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = T(1) / (T(1) + std::exp(-x[i]));
      } else if (kind == "tanh") {
        for (int64_t i = 0; i < n; ++i)
          y[i] = std::tanh(x[i]);
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
        fail() << info.describe() << ": no CPU kernel";
      }
    });
  }

private:
  std::string kind;
  double alpha, lo, hi, ratio;
  int64_t dropoutId;
};

/// heterps.unary_grad: operands (input, result, result_grad).
class UnaryGradKernel : public Kernel {
public:
  explicit UnaryGradKernel(const OpInfo &op)
      : Kernel(op), kind(op.getString("kind")) {
    alpha = op.getFloat("alpha", 0.01);
    lo = op.getFloat("min", -std::numeric_limits<double>::infinity());
    hi = op.getFloat("max", std::numeric_limits<double>::infinity());
    ratio = op.getFloat("ratio", 0.5);
    dropoutId = op.getInt("dropout_id", 0);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    int64_t n = in[0]->numElements();
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>(), *y = in[1]->as<T>(), *dy = in[2]->as<T>();
      T *dx = res[0]->as<T>();
      if (kind == "relu") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = x[i] > T(0) ? dy[i] : T(0);
      } else if (kind == "sigmoid") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dy[i] * y[i] * (T(1) - y[i]);
      } else if (kind == "tanh") {
        for (int64_t i = 0; i < n; ++i)
          dx[i] = dy[i] * (T(1) - y[i] * y[i]);
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
        fail() << info.describe() << ": unknown kind '" << kind << "'";
      }
    });
  }

private:
  std::string kind;
  double alpha, lo, hi, ratio;
  int64_t dropoutId;
};

/// IEEE half and bfloat16 bit patterns to and from float; both round to
/// nearest even, as NumPy's astype does.
float halfToFloat(uint16_t h, bool bf16) {
  uint32_t bits;
  if (bf16) {
    bits = uint32_t(h) << 16;
  } else {
    uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f,
             mant = h & 0x3ff;
    if (exp == 0x1f) {
      bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp) {
      bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant) {
      exp = 113;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    } else {
      bits = sign;
    }
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t floatToHalf(float f, bool bf16) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if (bf16) {
    if (std::isnan(f))
      return uint16_t((bits >> 16) | 0x40);
    return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) // inf or NaN
    return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
  if (abs >= 0x477ff000u) // rounds to beyond 65504
    return sign | 0x7c00;
  if (abs < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    if (abs < 0x33000000u)
      return sign;
    uint32_t exp = abs >> 23, mant = (abs & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - exp; // 14..24
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1),
             mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1)))
      ++half;
    return sign | uint16_t(half);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return sign | uint16_t((rounded - 0x38000000u) >> 13);
}

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
        for (int64_t i = 0; i < n; ++i) {
          if constexpr (std::is_integral_v<T> && !std::is_integral_v<F>)
            y[i] = std::isfinite(static_cast<double>(x[i]))
                       ? static_cast<T>(static_cast<double>(x[i]))
                       : T(0);
          else
            y[i] = static_cast<T>(x[i]);
        }
      });
    });
  }

private:
  /// A cast from or to f16/bf16 goes through float.
  void castHalf(const Tensor &x, Tensor &y, int64_t n) {
    std::vector<double> v(n);
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
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<T>)
          y.as<T>()[i] = std::isfinite(v[i]) ? static_cast<T>(v[i]) : T(0);
        else
          y.as<T>()[i] = static_cast<T>(v[i]);
      }
    });
  }
};

} // namespace

void cpu::registerElementwiseKernels(KernelRegistry &r) {
  addKernel<BinaryKernelOf<BinaryKind::Add>>(r, "heterps.add");
  addKernel<BinaryKernelOf<BinaryKind::Sub>>(r, "heterps.sub");
  addKernel<BinaryKernelOf<BinaryKind::Mul>>(r, "heterps.mul");
  addKernel<BinaryKernelOf<BinaryKind::Div>>(r, "heterps.div");
  addKernel<BinaryKernelOf<BinaryKind::Pow>>(r, "heterps.pow");
  for (const char *name :
       {"heterps.relu", "heterps.sigmoid", "heterps.tanh", "heterps.exp",
        "heterps.log", "heterps.sqrt", "heterps.neg", "heterps.abs",
        "heterps.leaky_relu", "heterps.clip", "heterps.dropout"})
    addKernel<UnaryKernel>(r, name);
  addKernel<UnaryGradKernel>(r, "heterps.unary_grad");
  addKernel<CastKernel>(r, "heterps.cast");
}
