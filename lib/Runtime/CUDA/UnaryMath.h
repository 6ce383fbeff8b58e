//===- UnaryMath.h - Elementwise formulas of the GPU column -----*- C++ -*-===//
//
// The formulas of the unary ops and their gradients as functions that nvcc
// compiles for the device and a host compiler for the host, so that the
// unit tests hold them against the CPU column on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_UNARYMATH_H
#define HETERPS_LIB_RUNTIME_CUDA_UNARYMATH_H

#include "../HostDevice.h"

#include <cmath>
#include <string>

namespace heterps::runtime::cuda {

enum class UnaryKind {
  Relu,
  Sigmoid,
  Tanh,
  Erf,
  Exp,
  Log,
  Sqrt,
  Neg,
  Abs,
  LeakyRelu,
  Clip,
  Invalid
};

/// The kind named `name` ("relu", ...), or Invalid.
inline UnaryKind unaryKindOf(const std::string &name) {
  static const char *const names[] = {"relu", "sigmoid",    "tanh", "erf",
                                      "exp",  "log",        "sqrt", "neg",
                                      "abs",  "leaky_relu", "clip"};
  for (int k = 0; k < static_cast<int>(UnaryKind::Invalid); ++k)
    if (name == names[k])
      return static_cast<UnaryKind>(k);
  return UnaryKind::Invalid;
}

/// The attributes the kinds read: leaky_relu's slope, clip's bounds.
struct UnaryParams {
  float alpha = 0.01f;
  float lo = -INFINITY;
  float hi = INFINITY;
};

HETERPS_HD inline float unaryForward(UnaryKind kind, float x,
                                     const UnaryParams &p) {
  switch (kind) {
  case UnaryKind::Relu:
    return x <= 0.0f ? 0.0f : x; // NaN stays NaN
  case UnaryKind::Sigmoid:
    return 1.0f / (1.0f + expf(-x));
  case UnaryKind::Tanh:
    return tanhf(x);
  case UnaryKind::Erf:
    return erff(x);
  case UnaryKind::Exp:
    return expf(x);
  case UnaryKind::Log:
    return logf(x);
  case UnaryKind::Sqrt:
    return sqrtf(x);
  case UnaryKind::Neg:
    return -x;
  case UnaryKind::Abs:
    return fabsf(x);
  case UnaryKind::LeakyRelu:
    return x >= 0.0f ? x : p.alpha * x;
  case UnaryKind::Clip:
    return x < p.lo ? p.lo : x > p.hi ? p.hi : x;
  default:
    return NAN;
  }
}

/// d(input) from the op's input `x`, its result `y` and d(result) `dy`.
HETERPS_HD inline float unaryBackward(UnaryKind kind, float x, float y,
                                      float dy, const UnaryParams &p) {
  switch (kind) {
  case UnaryKind::Relu:
    return x <= 0.0f ? 0.0f : dy;
  case UnaryKind::Sigmoid:
    return dy * y * (1.0f - y);
  case UnaryKind::Tanh:
    return dy * (1.0f - y * y);
  case UnaryKind::Erf:
    // d/dx erf(x) = 2 / sqrt(pi) exp(-x^2).
    return dy * 1.1283791670955126f * expf(-x * x);
  case UnaryKind::Exp:
    return dy * y;
  case UnaryKind::Log:
    return dy / x;
  case UnaryKind::Sqrt:
    return dy / (2.0f * y);
  case UnaryKind::Neg:
    return -dy;
  case UnaryKind::Abs:
    return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f);
  // At the kinks, the CPU column's f32 gradients (oneDNN's): leaky_relu
  // takes alpha * dy at 0, clip passes dy for lo < x <= hi.
  case UnaryKind::LeakyRelu:
    return x > 0.0f ? dy : p.alpha * dy;
  case UnaryKind::Clip:
    return x > p.lo && x <= p.hi ? dy : 0.0f;
  default:
    return NAN;
  }
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_UNARYMATH_H
