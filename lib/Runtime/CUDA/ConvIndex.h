//===- ConvIndex.h - Where a convolution's patches come from ----*- C++ -*-===//
//
// The index arithmetic of the GPU convolution (im2col and its transpose) as
// functions that nvcc compiles for the device and a host compiler for the
// host, so that the unit tests build a convolution and its gradient from
// them on machines without a GPU and hold it against the CPU column.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H
#define HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H

#include "../CPU/KernelUtil.h"

#include <cstdint>

#ifdef __CUDACC__
#define HETERPS_HD __host__ __device__
#else
#define HETERPS_HD
#endif

namespace heterps::runtime::cuda {

constexpr int kMaxConvSpatial = 3;

/// One image's convolution geometry, passed to the kernels by value.
struct ConvGeometry {
  int spatial = 0;
  int64_t in[kMaxConvSpatial] = {}, out[kMaxConvSpatial] = {},
          kernel[kMaxConvSpatial] = {}, stride[kMaxConvSpatial] = {},
          dilation[kMaxConvSpatial] = {}, pad[kMaxConvSpatial] = {};
  /// Input channels, output channels, groups.
  int64_t channels = 0, features = 0, group = 1;
  /// Kernel taps, output positions and input positions per channel.
  int64_t taps = 1, outputs = 1, inputs = 1;
};

inline ConvGeometry convGeometryOf(const cpu::ConvShape &shape,
                                   const Shape &x) {
  ConvGeometry g;
  g.spatial = static_cast<int>(x.size()) - 2;
  g.channels = x[1];
  g.features = shape.output[1];
  g.group = shape.group;
  for (int d = 0; d < g.spatial; ++d) {
    g.in[d] = x[d + 2];
    g.out[d] = shape.output[d + 2];
    g.kernel[d] = shape.window.kernel[d];
    g.stride[d] = shape.window.strides[d];
    g.dilation[d] = shape.window.dilations[d];
    g.pad[d] = shape.window.padBegin[d];
    g.taps *= g.kernel[d];
    g.outputs *= g.out[d];
    g.inputs *= g.in[d];
  }
  return g;
}

/// Element e of one image's patch matrix, col[(c * taps + t) * outputs +
/// o]: the input element of channel c that output position o reads through
/// tap t, or 0 in the padding. Positions are row-major.
HETERPS_HD inline float patchElement(const float *x, int64_t e,
                                     const ConvGeometry &g) {
  int64_t o = e % g.outputs, t = (e / g.outputs) % g.taps,
          c = e / (g.outputs * g.taps);
  int64_t at = 0, scale = 1;
  for (int d = g.spatial - 1; d >= 0; --d) {
    int64_t od = o % g.out[d], td = t % g.kernel[d];
    o /= g.out[d];
    t /= g.kernel[d];
    int64_t id = od * g.stride[d] - g.pad[d] + td * g.dilation[d];
    if (id < 0 || id >= g.in[d])
      return 0.0f;
    at += id * scale;
    scale *= g.in[d];
  }
  return x[c * g.inputs + at];
}

/// Element e = c * inputs + i of one image's input gradient: the sum of
/// the patch gradient `dcol` over the taps and output positions that read
/// input position i of channel c (patchElement's transpose, as a gather).
HETERPS_HD inline float foldedElement(const float *dcol, int64_t e,
                                      const ConvGeometry &g) {
  int64_t rest = e % g.inputs, c = e / g.inputs;
  int64_t position[kMaxConvSpatial] = {};
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
      int64_t span = position[d] + g.pad[d] - td * g.dilation[d];
      reads =
          span >= 0 && span % g.stride[d] == 0 && span / g.stride[d] < g.out[d];
      o += (span / g.stride[d]) * scale;
      scale *= g.out[d];
    }
    if (reads)
      sum += dcol[(c * g.taps + t) * g.outputs + o];
  }
  return sum;
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H
