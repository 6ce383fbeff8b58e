//===- ConvIndex.h - Where a convolution's patches come from ----*- C++ -*-===//
//
// The index arithmetic of the GPU convolution (im2col and its transpose) as
// host/device functions (HostDevice.h), so that the unit tests build a
// convolution and its gradient from them on machines without a GPU and
// hold it against the CPU column.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H
#define HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H

#include "WindowIndex.h"

namespace heterps::runtime::cuda {

/// One image's convolution geometry, passed to the kernels by value.
struct ConvGeometry : WindowGeometry {
  /// Input channels, output channels, groups.
  int64_t channels = 0, features = 0, group = 1;
};

inline ConvGeometry convGeometryOf(const cpu::ConvShape &shape,
                                   const Shape &x) {
  ConvGeometry g;
  setWindow(g, x, shape.output, shape.window);
  g.channels = x[1];
  g.features = shape.output[1];
  g.group = shape.group;
  return g;
}

/// Element e of one image's patch matrix, col[(c * taps + t) * outputs +
/// o]: the input element of channel c that output position o reads through
/// tap t, or 0 in the padding.
HETERPS_HD inline float patchElement(const float *x, int64_t e,
                                     const ConvGeometry &g) {
  int64_t o = e % g.outputs, t = (e / g.outputs) % g.taps,
          c = e / (g.outputs * g.taps);
  int64_t source = windowSource(o, t, g);
  return source < 0 ? 0.0f : x[c * g.inputs + source];
}

/// Element e = c * inputs + i of one image's input gradient: the sum of
/// the patch gradient `dcol` over the taps and output positions that read
/// input position i of channel c (patchElement's transpose, as a gather).
HETERPS_HD inline float foldedElement(const float *dcol, int64_t e,
                                      const ConvGeometry &g) {
  int64_t i = e % g.inputs, c = e / g.inputs;
  float sum = 0;
  for (int64_t t = 0; t < g.taps; ++t) {
    int64_t o = windowReader(i, t, g);
    if (o >= 0)
      sum += dcol[(c * g.taps + t) * g.outputs + o];
  }
  return sum;
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H
