//===- ResizeKernels.cpp - Interpolating resize and its gradient ----------===//
//
// The taps of each dimension (ResizeTaps.h) applied one dimension at a time;
// the gradient scatters back through the same tables in the opposite order.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "ResizeTaps.h"

#include <algorithm>
#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

ResizeConfig::ResizeConfig(const OpInfo &op) {
  ResizeConfig &c = *this;
  c.mode = op.getString("mode", "nearest");
  c.coords = op.getString("coordinate_transformation_mode", "half_pixel");
  c.nearestMode = op.getString("nearest_mode", "round_prefer_floor");
  c.cubicA = op.getFloat("cubic_coeff_a", -0.75);
  c.extrapolation = op.getFloat("extrapolation_value", 0.0);
  c.excludeOutside = op.getBool("exclude_outside", false);
  c.scales = op.getFloats("scales");
  c.roi = op.getFloats("roi");
  auto oneOf = [&](const std::string &v, std::initializer_list<const char *> ok,
                   const char *what) {
    for (const char *o : ok)
      if (v == o)
        return;
    fail(op.describe(), ": ", what, " '", v, "' is not supported");
  };
  oneOf(c.mode, {"nearest", "linear", "cubic"}, "mode");
  oneOf(c.coords,
        {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_half_pixel_for_nn", "tf_crop_and_resize"},
        "coordinate_transformation_mode");
  oneOf(c.nearestMode,
        {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
        "nearest_mode");
}

namespace {

/// The input coordinate of output coordinate `x` (ONNX's formulas, with
/// the reference's output width `scale * in`); sets `outside` for a
/// coordinate tf_crop_and_resize extrapolates.
double sourceCoordinate(const ResizeConfig &c, int64_t axis, int64_t rank,
                        double x, int64_t in, double scale, bool &outside) {
  double width = scale * static_cast<double>(in);
  outside = false;
  if (c.coords == "align_corners")
    return width == 1 ? 0.0 : x * (in - 1) / (width - 1);
  if (c.coords == "asymmetric")
    return x / scale;
  if (c.coords == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  if (c.coords == "pytorch_half_pixel")
    return width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (c.coords == "tf_crop_and_resize") {
    double start = c.roi[axis], end = c.roi[axis + rank];
    double v = width == 1 ? (end - start) * (in - 1) / 2
                          : x * (end - start) * (in - 1) / (width - 1);
    v += start * (in - 1);
    outside = v < 0 || v > in - 1;
    return v;
  }
  return (x + 0.5) / scale - 0.5;
}

AxisTaps axisTaps(const ResizeConfig &c, int64_t axis, int64_t rank, int64_t in,
                  int64_t out) {
  AxisTaps taps;
  taps.in = in;
  taps.out = out;
  taps.begin.push_back(0);
  double scale = c.scales[axis];
  bool identity = in == out;
  for (int64_t o = 0; o < out; ++o) {
    bool outside;
    double x = sourceCoordinate(c, axis, rank, static_cast<double>(o), in,
                                scale, outside);
    // The neighbours: i0 and i0 + 1 around x (for an integer x, x - 1 and
    // x with all the weight on x), two more on each side for cubic.
    double floorX = std::floor(x);
    bool integral = floorX == x;
    double ratio = integral ? 1.0 : x - floorX;
    int64_t i0 = static_cast<int64_t>(floorX) - (integral ? 1 : 0);
    std::vector<std::pair<int64_t, double>> local;
    if (c.mode == "nearest") {
      bool upper;
      if (integral)
        upper = true;
      else if (c.nearestMode == "round_prefer_floor")
        upper = ratio > 0.5;
      else if (c.nearestMode == "round_prefer_ceil")
        upper = ratio >= 0.5;
      else
        upper = c.nearestMode == "ceil";
      local.push_back({upper ? i0 + 1 : i0, 1.0});
    } else if (c.mode == "linear") {
      local = {{i0, 1.0 - ratio}, {i0 + 1, ratio}};
    } else {
      double a = c.cubicA, r = ratio, s = 1.0 - ratio;
      local = {
          {i0 - 1, ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a},
          {i0, ((a + 2) * r - (a + 3)) * r * r + 1},
          {i0 + 1, ((a + 2) * s - (a + 3)) * s * s + 1},
          {i0 + 2,
           ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a}};
    }
    if (c.excludeOutside) {
      double sum = 0;
      for (auto &[i, w] : local) {
        if (i < 0 || i >= in)
          w = 0;
        sum += w;
      }
      for (auto &[i, w] : local)
        w = sum != 0 ? w / sum : 0;
    }
    for (auto [i, w] : local) {
      if (w == 0)
        continue;
      int64_t clamped = std::clamp<int64_t>(i, 0, in - 1);
      taps.index.push_back(clamped);
      taps.weight.push_back(w);
    }
    taps.begin.push_back(static_cast<int64_t>(taps.index.size()));
    taps.outside.push_back(outside);
    identity = identity && !outside && taps.begin[o + 1] - taps.begin[o] == 1 &&
               taps.index.back() == o && taps.weight.back() == 1.0;
  }
  taps.identity = identity;
  taps.readBegin.assign(in + 1, 0);
  for (int64_t o = 0; o < out; ++o)
    if (!taps.outside[o])
      for (int64_t k = taps.begin[o]; k < taps.begin[o + 1]; ++k)
        ++taps.readBegin[taps.index[k] + 1];
  for (int64_t c = 0; c < in; ++c)
    taps.readBegin[c + 1] += taps.readBegin[c];
  std::vector<int64_t> next(taps.readBegin.begin(), taps.readBegin.end() - 1);
  taps.readBy.resize(taps.readBegin.back());
  taps.readWeight.resize(taps.readBegin.back());
  for (int64_t o = 0; o < out; ++o)
    if (!taps.outside[o])
      for (int64_t k = taps.begin[o]; k < taps.begin[o + 1]; ++k) {
        int64_t slot = next[taps.index[k]]++;
        taps.readBy[slot] = o;
        taps.readWeight[slot] = taps.weight[k];
      }
  return taps;
}

} // namespace

void ResizeAxes::prepare(const OpInfo &info, const ResizeConfig &c,
                         const Shape &in, const Shape &out) {
  int64_t rank = static_cast<int64_t>(in.size());
  if (static_cast<int64_t>(c.scales.size()) != rank ||
      static_cast<int64_t>(out.size()) != rank)
    fail(info.describe(), ": scales has ", c.scales.size(),
         " entries and the output rank ", out.size(), " for input ",
         shapeString(in));
  if (c.coords == "tf_crop_and_resize" &&
      static_cast<int64_t>(c.roi.size()) != 2 * rank)
    fail(info.describe(), ": tf_crop_and_resize needs roi of ", 2 * rank,
         " entries, got ", c.roi.size());
  for (double s : c.scales)
    if (!std::isfinite(s) || s <= 0)
      fail(info.describe(), ": scales must be positive, got ", s);
  axes.clear();
  shapes = {in};
  Shape current = in;
  largest = numElements(in);
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (in[d] < 1 || out[d] < 1)
      fail(info.describe(), ": cannot resize dimension ", d, " from ", in[d],
           " to ", out[d]);
    AxisTaps taps = axisTaps(c, d, rank, in[d], out[d]);
    if (taps.identity)
      continue;
    current[d] = out[d];
    axes.push_back({d, std::move(taps)});
    shapes.push_back(current);
    largest = std::max(largest, numElements(current));
  }
  extrapolation = static_cast<float>(c.extrapolation);
}

Shape cpu::resizedShape(const OpInfo &info, const Shape &in,
                        const TensorType &type) {
  if (type.dims.size() != in.size())
    fail(info.describe(), ": the result has rank ", type.dims.size(),
         ", the input ", shapeString(in));
  Shape out = type.dims;
  for (size_t d = 0; d < out.size(); ++d)
    if (out[d] < 0)
      out[d] = in[d];
  return out;
}

namespace {

/// ResizeAxes applied on the host, with its two buffers between passes.
class ResizePlan {
public:
  void prepare(const OpInfo &info, const ResizeConfig &c, const Shape &in,
               const Shape &out) {
    plan.prepare(info, c, in, out);
    bufferA.assign(plan.largest, 0.0f);
    bufferB.assign(plan.largest, 0.0f);
  }

  void forward(const float *x, float *y) {
    const auto &axes = plan.axes;
    const auto &shapes = plan.shapes;
    if (axes.empty()) {
      std::copy(x, x + numElements(shapes[0]), y);
      return;
    }
    const float *src = x;
    for (size_t k = 0; k < axes.size(); ++k) {
      float *dst =
          k + 1 == axes.size() ? y : (k % 2 ? bufferB : bufferA).data();
      pass(axes[k].first, axes[k].second, shapes[k], src, dst, false);
      src = dst;
    }
  }

  void backward(const float *dy, float *dx) {
    const auto &axes = plan.axes;
    const auto &shapes = plan.shapes;
    if (axes.empty()) {
      std::copy(dy, dy + numElements(shapes[0]), dx);
      return;
    }
    const float *src = dy;
    for (size_t k = axes.size(); k-- > 0;) {
      float *dst = k == 0 ? dx : (k % 2 ? bufferB : bufferA).data();
      pass(axes[k].first, axes[k].second, shapes[k], src, dst, true);
      src = dst;
    }
  }

private:
  /// One dimension: forward from `in` (of shape `before`) to the resized
  /// dimension, or (transposed) from the resized gradient back to `before`,
  /// each result element a sum over its taps in the tables' order.
  void pass(int64_t d, const AxisTaps &t, const Shape &before, const float *src,
            float *dst, bool transposed) const {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i)
      outer *= before[i];
    for (size_t i = d + 1; i < before.size(); ++i)
      inner *= before[i];
    for (int64_t p = 0; p < outer; ++p) {
      if (transposed) {
        // Each input coordinate sums the gradients of the outputs that
        // read it (AxisTaps' transposed lists).
        for (int64_t c = 0; c < t.in; ++c) {
          float *to = dst + (p * t.in + c) * inner;
          std::fill(to, to + inner, 0.0f);
          for (int64_t k = t.readBegin[c]; k < t.readBegin[c + 1]; ++k) {
            float w = static_cast<float>(t.readWeight[k]);
            const float *g = src + (p * t.out + t.readBy[k]) * inner;
            for (int64_t i = 0; i < inner; ++i)
              to[i] += w * g[i];
          }
        }
        continue;
      }
      for (int64_t o = 0; o < t.out; ++o) {
        float *to = dst + (p * t.out + o) * inner;
        if (t.outside[o]) {
          std::fill(to, to + inner, plan.extrapolation);
          continue;
        }
        std::fill(to, to + inner, 0.0f);
        for (int64_t k = t.begin[o]; k < t.begin[o + 1]; ++k) {
          float w = static_cast<float>(t.weight[k]);
          const float *from = src + (p * t.in + t.index[k]) * inner;
          for (int64_t i = 0; i < inner; ++i)
            to[i] += w * from[i];
        }
      }
    }
  }

  ResizeAxes plan;
  std::vector<float> bufferA, bufferB;
};

const float *f32(const OpInfo &info, const Tensor &t) {
  if (t.dtype() != DType::F32)
    fail(info.describe(), ": the CPU resize takes f32, got ",
         dtypeName(t.dtype()));
  return t.as<float>();
}

/// heterps.resize.
class ResizeKernel : public Kernel {
public:
  explicit ResizeKernel(const OpInfo &op) : Kernel(op), config(op) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = resizedShape(info, in[0], info.outputTypes()[0]);
    plan.prepare(info, config, in[0], out);
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    plan.forward(f32(info, *in[0]), res[0]->as<float>());
  }

private:
  ResizeConfig config;
  ResizePlan plan;
};

/// heterps.resize_grad: (input, result_grad) -> input_grad.
class ResizeGradKernel : public Kernel {
public:
  explicit ResizeGradKernel(const OpInfo &op) : Kernel(op), config(op) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = resizedShape(info, in[0], info.inputTypes()[1]);
    if (in[1] != out)
      fail(info.describe(), ": result_grad has shape ", shapeString(in[1]),
           ", expected ", shapeString(out));
    plan.prepare(info, config, in[0], out);
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    plan.backward(f32(info, *in[1]), res[0]->as<float>());
  }

private:
  ResizeConfig config;
  ResizePlan plan;
};

} // namespace

void cpu::registerResizeKernels(KernelRegistry &r) {
  addKernel<ResizeKernel>(r, "heterps.resize");
  addKernel<ResizeGradKernel>(r, "heterps.resize_grad");
}
