//===- PoolIndex.h - Which inputs a pooling window reads --------*- C++ -*-===//
//
// The GPU pooling (max, averages with and without the padding, and their
// gradient as a gather over the windows that read an input element) as
// host/device functions (HostDevice.h) on the window arithmetic it shares
// with the convolution (WindowIndex.h), so that the unit tests hold them
// against the CPU column on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_POOLINDEX_H
#define HETERPS_LIB_RUNTIME_CUDA_POOLINDEX_H

#include "WindowIndex.h"

#include <cmath>

namespace heterps::runtime::cuda {

/// One plane's pooling geometry, passed to the kernels by value.
struct PoolGeometry : WindowGeometry {
  int64_t padEnd[kMaxWindowSpatial] = {};
  /// Averages divide by the taps inside the input and its explicit padding
  /// (count_include_pad) instead of those inside the input.
  bool includePad = false;
};

inline PoolGeometry poolGeometryOf(const cpu::PoolShape &shape, const Shape &x,
                                   bool includePad) {
  PoolGeometry g;
  setWindow(g, x, shape.output, shape.window);
  for (int d = 0; d < g.spatial; ++d)
    g.padEnd[d] = shape.window.padEnd[d];
  g.includePad = includePad;
  return g;
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
    int64_t source = windowSource(o, t, g);
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
    int64_t source = windowSource(o, t, g);
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
  float sum = 0;
  for (int64_t t = 0; t < g.taps; ++t) {
    int64_t o = windowReader(i, t, g);
    if (o < 0)
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
