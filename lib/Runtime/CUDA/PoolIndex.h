//===- PoolIndex.h - Which inputs a pooling window reads --------*- C++ -*-===//
//
// The window arithmetic of the GPU pooling (max, averages with and without
// the padding, and their gradient as a gather over the windows that read
// an input element) as functions that nvcc compiles for the device and a
// host compiler for the host, so that the unit tests hold them against the
// CPU column on machines without a GPU. Positions are row-major within one
// N x C plane.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_POOLINDEX_H
#define HETERPS_LIB_RUNTIME_CUDA_POOLINDEX_H

#include "../CPU/KernelUtil.h"

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define HETERPS_HD __host__ __device__
#else
#define HETERPS_HD
#endif

namespace heterps::runtime::cuda {

constexpr int kMaxPoolSpatial = 3;

/// One plane's pooling geometry, passed to the kernels by value.
struct PoolGeometry {
  int spatial = 0;
  int64_t in[kMaxPoolSpatial] = {}, out[kMaxPoolSpatial] = {},
          kernel[kMaxPoolSpatial] = {}, stride[kMaxPoolSpatial] = {},
          dilation[kMaxPoolSpatial] = {}, padBegin[kMaxPoolSpatial] = {},
          padEnd[kMaxPoolSpatial] = {};
  /// Input and output positions per plane, taps per window.
  int64_t inputs = 1, outputs = 1, taps = 1;
  /// Averages divide by the taps inside the input and its explicit padding
  /// (count_include_pad) instead of those inside the input.
  bool includePad = false;
};

inline PoolGeometry poolGeometryOf(const cpu::PoolShape &shape, const Shape &x,
                                   bool includePad) {
  PoolGeometry g;
  g.spatial = static_cast<int>(x.size()) - 2;
  g.includePad = includePad;
  for (int d = 0; d < g.spatial; ++d) {
    g.in[d] = x[d + 2];
    g.out[d] = shape.output[d + 2];
    g.kernel[d] = shape.window.kernel[d];
    g.stride[d] = shape.window.strides[d];
    g.dilation[d] = shape.window.dilations[d];
    g.padBegin[d] = shape.window.padBegin[d];
    g.padEnd[d] = shape.window.padEnd[d];
    g.inputs *= g.in[d];
    g.outputs *= g.out[d];
    g.taps *= g.kernel[d];
  }
  return g;
}

/// The plane offset that tap t of output position o reads, or -1 when the
/// tap falls in the padding.
HETERPS_HD inline int64_t poolTapSource(int64_t o, int64_t t,
                                        const PoolGeometry &g) {
  int64_t at = 0, scale = 1;
  for (int d = g.spatial - 1; d >= 0; --d) {
    int64_t od = o % g.out[d], td = t % g.kernel[d];
    o /= g.out[d];
    t /= g.kernel[d];
    int64_t position = od * g.stride[d] - g.padBegin[d] + td * g.dilation[d];
    if (position < 0 || position >= g.in[d])
      return -1;
    at += position * scale;
    scale *= g.in[d];
  }
  return at;
}

/// What an average at output position o divides by: per dimension, the
/// taps inside the input, or inside the input and its explicit padding.
HETERPS_HD inline float poolDivisor(int64_t o, const PoolGeometry &g) {
  float divisor = 1;
  for (int d = g.spatial - 1; d >= 0; --d) {
    int64_t od = o % g.out[d];
    o /= g.out[d];
    int64_t start = od * g.stride[d] - g.padBegin[d], count = 0;
    for (int64_t t = 0; t < g.kernel[d]; ++t) {
      int64_t position = start + t * g.dilation[d];
      count += g.includePad ? position < g.in[d] + g.padEnd[d]
                            : position >= 0 && position < g.in[d];
    }
    divisor *= static_cast<float>(count);
  }
  return divisor;
}

/// The plane offset of the first largest input that window o reads (-1
/// when every tap is padding): the input that max pooling's gradient goes
/// to.
HETERPS_HD inline int64_t poolArgmax(const float *plane, int64_t o,
                                     const PoolGeometry &g) {
  int64_t best = -1;
  for (int64_t t = 0; t < g.taps; ++t) {
    int64_t source = poolTapSource(o, t, g);
    if (source >= 0 && (best < 0 || plane[source] > plane[best]))
      best = source;
  }
  return best;
}

/// Output position o of one plane: the largest input its window reads, or
/// their average.
HETERPS_HD inline float pooledElement(const float *plane, int64_t o,
                                      const PoolGeometry &g, bool max) {
  if (max) {
    int64_t best = poolArgmax(plane, o, g);
    return best < 0 ? -INFINITY : plane[best];
  }
  float sum = 0;
  for (int64_t t = 0; t < g.taps; ++t) {
    int64_t source = poolTapSource(o, t, g);
    if (source >= 0)
      sum += plane[source];
  }
  return sum / poolDivisor(o, g);
}

/// Input position i of one plane's gradient: the sum, over the windows
/// that read it, of their dy (max: where i is the window's argmax) or of
/// dy / divisor (averages).
HETERPS_HD inline float poolGradElement(const float *plane, const float *dy,
                                        int64_t i, const PoolGeometry &g,
                                        bool max) {
  int64_t position[kMaxPoolSpatial] = {};
  int64_t rest = i;
  for (int d = g.spatial - 1; d >= 0; --d) {
    position[d] = rest % g.in[d];
    rest /= g.in[d];
  }
  float sum = 0;
  for (int64_t t = 0; t < g.taps; ++t) {
    int64_t restT = t, o = 0, scale = 1;
    bool reads = true;
    for (int d = g.spatial - 1; d >= 0 && reads; --d) {
      int64_t td = restT % g.kernel[d];
      restT /= g.kernel[d];
      int64_t span = position[d] + g.padBegin[d] - td * g.dilation[d];
      reads =
          span >= 0 && span % g.stride[d] == 0 && span / g.stride[d] < g.out[d];
      o += (span / g.stride[d]) * scale;
      scale *= g.out[d];
    }
    if (!reads)
      continue;
    if (max)
      sum += poolArgmax(plane, o, g) == i ? dy[o] : 0.0f;
    else
      sum += dy[o] / poolDivisor(o, g);
  }
  return sum;
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_POOLINDEX_H
