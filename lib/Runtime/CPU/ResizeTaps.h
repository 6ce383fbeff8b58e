//===- ResizeTaps.h - Resize as per-dimension tables of taps ----*- C++ -*-===//
//
// ONNX's Resize is separable: along each dimension, every output coordinate
// is a weighted sum of a few input coordinates (1 for nearest, 2 linear, 4
// cubic), the input's edges repeated. ResizeAxes turns the attributes into
// one table of (index, weight) taps per resized dimension, computed as
// ONNX's reference does; both columns apply the dimensions one at a time,
// the last first, and the gradient goes back through the same tables in
// the opposite order.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_RESIZETAPS_H
#define HETERPS_LIB_RUNTIME_CPU_RESIZETAPS_H

#include "heterps/Runtime/Kernel.h"

#include <string>
#include <utility>
#include <vector>

namespace heterps::runtime::cpu {

/// The taps of one dimension: output coordinate o reads `index[t]` with
/// `weight[t]` for t in [begin[o], begin[o + 1]); `outside[o]` marks an
/// extrapolated coordinate (tf_crop_and_resize).
///
/// The gradient reads the same taps transposed: input coordinate c gets
/// the gradient of output `readBy[t]` times `readWeight[t]` for t in
/// [readBegin[c], readBegin[c + 1]), in the order of the outputs and then
/// of their taps (an extrapolated output reads nothing), so that each input
/// coordinate's sum is taken in one fixed order, on either column.
struct AxisTaps {
  int64_t in = 0, out = 0;
  std::vector<int64_t> begin, index;
  std::vector<double> weight;
  std::vector<char> outside;
  std::vector<int64_t> readBegin, readBy;
  std::vector<double> readWeight;
  bool identity = false;
};

/// heterps.resize's attributes, checked.
struct ResizeConfig {
  std::string mode, coords, nearestMode;
  double cubicA = -0.75, extrapolation = 0.0;
  bool excludeOutside = false;
  std::vector<double> scales, roi;

  explicit ResizeConfig(const OpInfo &op);
};

/// The resize of one input shape: the dimensions that change, last first,
/// with their taps, and the shapes between the dimensions' passes.
struct ResizeAxes {
  /// (dimension, its taps), in the order the forward applies them.
  std::vector<std::pair<int64_t, AxisTaps>> axes;
  /// shapes[k]: the tensor before the k-th pass.
  std::vector<Shape> shapes;
  /// The most elements of any tensor between passes.
  int64_t largest = 0;
  float extrapolation = 0.0f;

  void prepare(const OpInfo &info, const ResizeConfig &c, const Shape &in,
               const Shape &out);
};

/// The output shape: the plan's static sizes of `type`, a dynamic (batch)
/// dimension the input's.
Shape resizedShape(const OpInfo &info, const Shape &in, const TensorType &type);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_RESIZETAPS_H
