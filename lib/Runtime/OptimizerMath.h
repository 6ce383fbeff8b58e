//===- OptimizerMath.h - The optimizers' rule for one element ---*- C++ -*-===//
//
// The update of one parameter element by SGD, momentum, Adagrad and Adam, as
// functions that the CPU's update loop and the GPU column's update kernel
// both call, so that a parameter kept in device memory follows the rule the
// host applies, operation for operation. (nvcc may fuse a multiply and an
// add into one rounding, which the host's x86-64 build does not: the two
// agree within a few units in the last place per step, not bit for bit.)
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_OPTIMIZERMATH_H
#define HETERPS_LIB_RUNTIME_OPTIMIZERMATH_H

#include "HostDevice.h"

#include "heterps/Runtime/Optimizer.h"

#include <cmath>
#include <cstdint>

namespace heterps::runtime {

/// The constants of one update step, in f32 as the element rules use them.
struct UpdateCoefficients {
  OptimizerConfig::Kind kind = OptimizerConfig::Kind::SGD;
  float learningRate = 0, weightDecay = 0, momentum = 0;
  float beta1 = 0, beta2 = 0, epsilon = 0;
  /// Adam: the learning rate over the first moment's bias correction, and
  /// the square root of the second moment's correction.
  float stepSize = 0, sqrtCorrection2 = 1;
  /// Momentum's first step starts the buffer at the gradient.
  bool firstStep = false;
};

/// The coefficients of update number `step` (counted from 1).
inline UpdateCoefficients updateCoefficients(const OptimizerConfig &c,
                                             int64_t step) {
  UpdateCoefficients k;
  k.kind = c.kind;
  k.learningRate = static_cast<float>(c.learningRate);
  k.weightDecay = static_cast<float>(c.weightDecay);
  k.momentum = static_cast<float>(c.momentum);
  k.beta1 = static_cast<float>(c.beta1);
  k.beta2 = static_cast<float>(c.beta2);
  k.epsilon = static_cast<float>(c.epsilon);
  k.firstStep = step == 1;
  if (c.kind == OptimizerConfig::Kind::Adam) {
    // The corrections in double, as PyTorch computes them on the host.
    double bc1 = 1.0 - std::pow(c.beta1, static_cast<double>(step));
    double bc2 = 1.0 - std::pow(c.beta2, static_cast<double>(step));
    k.stepSize = static_cast<float>(c.learningRate / bc1);
    k.sqrtCorrection2 = static_cast<float>(std::sqrt(bc2));
  }
  return k;
}

HETERPS_HD inline void sgdElement(const UpdateCoefficients &k, float &w,
                                  float g) {
  w -= k.learningRate * (g + k.weightDecay * w);
}

/// `buffer` is the element's momentum buffer.
HETERPS_HD inline void momentumElement(const UpdateCoefficients &k, float &w,
                                       float g, float &buffer) {
  float gi = g + k.weightDecay * w;
  buffer = k.firstStep ? gi : k.momentum * buffer + gi;
  w -= k.learningRate * buffer;
}

/// `sum` is the element's sum of squared gradients.
HETERPS_HD inline void adagradElement(const UpdateCoefficients &k, float &w,
                                      float g, float &sum) {
  float gi = g + k.weightDecay * w;
  sum += gi * gi;
  w -= k.learningRate * gi / (sqrtf(sum) + k.epsilon);
}

/// `m` and `v` are the element's first and second moments.
HETERPS_HD inline void adamElement(const UpdateCoefficients &k, float &w,
                                   float g, float &m, float &v) {
  float gi = g + k.weightDecay * w;
  m = k.beta1 * m + (1 - k.beta1) * gi;
  v = k.beta2 * v + (1 - k.beta2) * gi * gi;
  w -= k.stepSize * m / (sqrtf(v) / k.sqrtCorrection2 + k.epsilon);
}

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_OPTIMIZERMATH_H
