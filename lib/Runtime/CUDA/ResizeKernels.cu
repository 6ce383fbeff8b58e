//===- ResizeKernels.cu - Interpolating resize and its gradient on the GPU ===//
//
// The CPU column's taps (ResizeTaps.h: per resized dimension, each output
// coordinate's input coordinates and weights, as ONNX's reference computes
// them) are computed on the host when the input's shape changes and copied
// to the device once for that shape. The dimensions are applied one at a
// time, the last first, as on the CPU, a thread per element of each pass
// summing its taps in the CPU's order.
//
// The gradient reads the taps transposed (AxisTaps' readBegin, readBy,
// readWeight: for each input coordinate, the outputs that read it, in one
// fixed order, as the CPU sums them), a thread per input element summing
// its gradient without atomics.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"
#include "../CPU/ResizeTaps.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// One pass over dimension `d` of a tensor seen as [outer, in, inner]
/// (forward: to [outer, out, inner]). `begin`, `index`, `weight` list each
/// target coordinate's sources: the forward's taps, or the gradient's
/// transposed taps.
struct Pass {
  int64_t outer, in, out, inner;
  const int64_t *begin, *index;
  const float *weight;
  /// Forward only: the output coordinates tf_crop_and_resize extrapolates.
  const unsigned char *outside;
};

__global__ void resizeForward(const float *x, float *y, Pass p,
                              float extrapolation) {
  int64_t total = p.outer * p.out * p.inner;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = e % p.inner, o = (e / p.inner) % p.out,
            q = e / (p.inner * p.out);
    if (p.outside[o]) {
      y[e] = extrapolation;
      continue;
    }
    float sum = 0.0f;
    for (int64_t t = p.begin[o]; t < p.begin[o + 1]; ++t)
      sum += p.weight[t] * x[(q * p.in + p.index[t]) * p.inner + i];
    y[e] = sum;
  }
}

/// The gradient of one pass: dx of [outer, in, inner] from dy of [outer,
/// out, inner], each input coordinate summing the output coordinates that
/// read it (`index` holds output coordinates here).
__global__ void resizeBackward(const float *dy, float *dx, Pass p) {
  int64_t total = p.outer * p.in * p.inner;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = e % p.inner, c = (e / p.inner) % p.in, q = e / (p.inner * p.in);
    float sum = 0.0f;
    for (int64_t t = p.begin[c]; t < p.begin[c + 1]; ++t)
      sum += p.weight[t] * dy[(q * p.out + p.index[t]) * p.inner + i];
    dx[e] = sum;
  }
}

/// The tables of every pass of one input shape, on the host and the device.
class DeviceTaps {
public:
  /// Lays out the tables of `plan` (forward and transposed) on the host;
  /// `upload` copies them to the device.
  void build(const cpu::ResizeAxes &plan) {
    ints.clear();
    floats.clear();
    bytes.clear();
    layouts.clear();
    for (const auto &[d, t] : plan.axes) {
      Layout l;
      l.d = d;
      l.in = t.in;
      l.out = t.out;
      l.begin = append(ints, t.begin);
      l.index = append(ints, t.index);
      l.weight = floats.size();
      for (double w : t.weight)
        floats.push_back(static_cast<float>(w));
      l.outside = bytes.size();
      bytes.insert(bytes.end(), t.outside.begin(), t.outside.end());
      l.transposedBegin = append(ints, t.readBegin);
      l.transposedIndex = append(ints, t.readBy);
      l.transposedWeight = floats.size();
      for (double w : t.readWeight)
        floats.push_back(static_cast<float>(w));
      layouts.push_back(l);
    }
    uploaded = false;
  }

  /// Copies the tables to the device, once per shape (a synchronous copy:
  /// it happens when the input's shape changes, not at every step).
  void upload() {
    if (uploaded)
      return;
    deviceInts.reserve(static_cast<int64_t>(ints.size()),
                       "allocating a resize's taps");
    deviceFloats.reserve(static_cast<int64_t>(floats.size()),
                         "allocating a resize's weights");
    deviceBytes.reserve(static_cast<int64_t>(bytes.size()),
                        "allocating a resize's extrapolation marks");
    cudaStream_t stream = gpuDevice().stream;
    check(cudaMemcpyAsync(deviceInts.get(), ints.data(),
                          ints.size() * sizeof(int64_t), cudaMemcpyHostToDevice,
                          stream),
          "copying a resize's taps");
    check(cudaMemcpyAsync(deviceFloats.get(), floats.data(),
                          floats.size() * sizeof(float), cudaMemcpyHostToDevice,
                          stream),
          "copying a resize's weights");
    check(cudaMemcpyAsync(deviceBytes.get(), bytes.data(), bytes.size(),
                          cudaMemcpyHostToDevice, stream),
          "copying a resize's extrapolation marks");
    // The host vectors are pageable: wait before they can change.
    check(cudaStreamSynchronize(stream), "copying a resize's tables");
    uploaded = true;
  }

  /// Pass `k` over a tensor of shape `before`, forward or transposed.
  Pass pass(size_t k, const Shape &before, bool transposed) const {
    const Layout &l = layouts[k];
    Pass p;
    p.outer = numElements(Shape(before.begin(), before.begin() + l.d));
    p.inner = numElements(Shape(before.begin() + l.d + 1, before.end()));
    p.in = l.in;
    p.out = l.out;
    const int64_t *i = deviceInts.get();
    const float *f = deviceFloats.get();
    p.begin = i + (transposed ? l.transposedBegin : l.begin);
    p.index = i + (transposed ? l.transposedIndex : l.index);
    p.weight = f + (transposed ? l.transposedWeight : l.weight);
    p.outside = deviceBytes.get() + l.outside;
    return p;
  }

private:
  struct Layout {
    int64_t d = 0, in = 0, out = 0;
    size_t begin = 0, index = 0, weight = 0, outside = 0;
    size_t transposedBegin = 0, transposedIndex = 0, transposedWeight = 0;
  };
  static size_t append(std::vector<int64_t> &to,
                       const std::vector<int64_t> &from) {
    size_t at = to.size();
    to.insert(to.end(), from.begin(), from.end());
    return at;
  }

  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<unsigned char> bytes;
  std::vector<Layout> layouts;
  bool uploaded = false;
  DeviceScratch<int64_t> deviceInts;
  DeviceScratch<float> deviceFloats;
  DeviceScratch<unsigned char> deviceBytes;
};

/// heterps.resize and (with `backward`) resize_grad: (input, result_grad).
class ResizeKernel : public Kernel {
public:
  ResizeKernel(const OpInfo &op, bool backward)
      : Kernel(op), config(op), backward(backward) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = cpu::resizedShape(
        info, in[0], backward ? info.inputTypes()[1] : info.outputTypes()[0]);
    if (backward && in[1] != out)
      fail(info.describe(), ": result_grad has shape ", shapeString(in[1]),
           ", expected ", shapeString(out));
    if (in[0] != preparedFor || out != preparedOut) {
      plan.prepare(info, config, in[0], out);
      taps.build(plan);
      preparedFor = in[0];
      preparedOut = out;
    }
    return {backward ? in[0] : out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    const Tensor &from = backward ? *in[1] : *in[0];
    if (plan.axes.empty()) {
      check(cudaMemcpyAsync(res[0]->data(), from.data(), from.byteSize(),
                            cudaMemcpyDeviceToDevice, stream),
            "copying a resize that changes nothing");
      return;
    }
    taps.upload();
    buffers[0].reserve(plan.largest, "allocating a resize's passes");
    buffers[1].reserve(plan.largest, "allocating a resize's passes");
    size_t passes = plan.axes.size();
    const float *src = from.as<float>();
    for (size_t step = 0; step < passes; ++step) {
      // The forward applies the passes in order, the gradient in reverse;
      // the last writes the result, the others alternate between buffers.
      size_t k = backward ? passes - 1 - step : step;
      float *dst =
          step + 1 == passes ? res[0]->as<float>() : buffers[step % 2].get();
      Pass p = taps.pass(k, plan.shapes[k], backward);
      int64_t total = p.outer * (backward ? p.in : p.out) * p.inner;
      if (backward)
        resizeBackward<<<blocksFor(total), kBlock, 0, stream>>>(src, dst, p);
      else
        resizeForward<<<blocksFor(total), kBlock, 0, stream>>>(
            src, dst, p, plan.extrapolation);
      checkLaunch(info);
      src = dst;
    }
  }

private:
  cpu::ResizeConfig config;
  bool backward;
  cpu::ResizeAxes plan;
  DeviceTaps taps;
  Shape preparedFor, preparedOut;
  DeviceScratch<float> buffers[2];
};

} // namespace

void cuda::registerResizeKernels(KernelRegistry &r) {
  r.add("heterps.resize", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<ResizeKernel>(op, false);
  });
  r.add("heterps.resize_grad", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<ResizeKernel>(op, true);
  });
}
