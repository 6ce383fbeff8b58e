//===- WindowIndex.h - Which inputs a sliding window reads ------*- C++ -*-===//
//
// The window arithmetic that convolution and pooling share: for an output
// position and a tap of the window, the input position it reads, and the
// other way round, the output position that reads an input through a tap
// (which their gradients gather over). Positions are row-major within one
// channel; host/device functions (HostDevice.h).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_WINDOWINDEX_H
#define HETERPS_LIB_RUNTIME_CUDA_WINDOWINDEX_H

#include "../CPU/KernelUtil.h"
#include "../HostDevice.h"

#include <cstdint>

namespace heterps::runtime::cuda {

constexpr int kMaxWindowSpatial = 3;

/// A window sliding over one channel, passed to the kernels by value.
struct WindowGeometry {
  int spatial = 0;
  int64_t in[kMaxWindowSpatial] = {}, out[kMaxWindowSpatial] = {},
          kernel[kMaxWindowSpatial] = {}, stride[kMaxWindowSpatial] = {},
          dilation[kMaxWindowSpatial] = {}, padBegin[kMaxWindowSpatial] = {};
  /// Input and output positions per channel, taps per window.
  int64_t inputs = 1, outputs = 1, taps = 1;
};

/// The window of `window` over input `x` (N x C x spatial...) giving
/// output `output` (N x C' x spatial...).
inline void setWindow(WindowGeometry &g, const Shape &x, const Shape &output,
                      const cpu::Window &window) {
  g.spatial = static_cast<int>(x.size()) - 2;
  for (int d = 0; d < g.spatial; ++d) {
    g.in[d] = x[d + 2];
    g.out[d] = output[d + 2];
    g.kernel[d] = window.kernel[d];
    g.stride[d] = window.strides[d];
    g.dilation[d] = window.dilations[d];
    g.padBegin[d] = window.padBegin[d];
    g.inputs *= g.in[d];
    g.outputs *= g.out[d];
    g.taps *= g.kernel[d];
  }
}

/// The input position that tap t of output position o reads, or -1 when
/// the tap falls in the padding.
HETERPS_HD inline int64_t windowSource(int64_t o, int64_t t,
                                       const WindowGeometry &g) {
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

/// The output position whose tap t reads input position i, or -1 when no
/// window reads i through that tap.
HETERPS_HD inline int64_t windowReader(int64_t i, int64_t t,
                                       const WindowGeometry &g) {
  int64_t o = 0, scale = 1;
  for (int d = g.spatial - 1; d >= 0; --d) {
    int64_t id = i % g.in[d], td = t % g.kernel[d];
    i /= g.in[d];
    t /= g.kernel[d];
    int64_t span = id + g.padBegin[d] - td * g.dilation[d];
    if (span < 0 || span % g.stride[d] != 0 || span / g.stride[d] >= g.out[d])
      return -1;
    o += (span / g.stride[d]) * scale;
    scale *= g.out[d];
  }
  return o;
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_WINDOWINDEX_H
