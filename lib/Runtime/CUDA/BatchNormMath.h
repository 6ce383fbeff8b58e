//===- BatchNormMath.h - Batch normalisation's arithmetic -------*- C++ -*-===//
//
// Where a channel's values lie in an N x C x ... input and what batch
// normalisation and its gradient compute for one element, as functions that
// nvcc compiles for the GPU kernels and a host compiler for the unit tests,
// which hold them against the CPU column's batch norm on machines without a
// GPU.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_BATCHNORMMATH_H
#define HETERPS_LIB_RUNTIME_CUDA_BATCHNORMMATH_H

#include "../HostDevice.h"

#include <cmath>
#include <cstdint>

namespace heterps::runtime::cuda {

/// The offset of value `i` (of batch x inner) of channel `c`.
HETERPS_HD inline int64_t channelOffset(int64_t i, int64_t c, int64_t channels,
                                        int64_t inner) {
  return ((i / inner) * channels + c) * inner + i % inner;
}

/// The channel of the element at offset `i`.
HETERPS_HD inline int64_t channelAt(int64_t i, int64_t channels,
                                    int64_t inner) {
  return (i / inner) % channels;
}

HETERPS_HD inline float batchNormalized(float x, float mean, float variance,
                                        float epsilon, float scale,
                                        float bias) {
  return (x - mean) / sqrtf(variance + epsilon) * scale + bias;
}

/// running = momentum * running + (1 - momentum) * batch.
HETERPS_HD inline float runningStatistic(float running, float batch,
                                         float momentum) {
  return momentum * running + (1 - momentum) * batch;
}

/// dx = scale * rstd * (dy - dbias / count - xhat * dscale / count), where
/// dscale = sum(dy * xhat) and dbias = sum(dy) over the channel and
/// `perValue` is 1 / count.
HETERPS_HD inline float batchNormInputGrad(float x, float dy, float scale,
                                           float mean, float rstd, float dscale,
                                           float dbias, float perValue) {
  float xhat = (x - mean) * rstd;
  return scale * rstd * (dy - dbias * perValue - xhat * dscale * perValue);
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_BATCHNORMMATH_H
