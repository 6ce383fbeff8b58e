//===- PoolKernels.cu - Pooling and its gradient on the GPU ---------------===//
//
// One thread per output element reads its window (PoolIndex.h): the first
// largest input, or the average over the taps inside the input (or inside
// it and its explicit padding, count_include_pad). The gradient is a gather
// as well, one thread per input element over the windows that read it, so
// that no two threads add into one element; max pooling's gradient goes to
// each window's first largest input, which the CPU's oneDNN picks too
// (ties, as after a ReLU, may break differently). global_avg_pool is one
// warp per N x C plane.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"
#include "PoolIndex.h"

#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

__global__ void poolForward(const float *x, float *y, int64_t planes,
                            PoolGeometry g, bool max) {
  int64_t total = planes * g.outputs;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t plane = e / g.outputs;
    y[e] = pooledElement(x + plane * g.inputs, e % g.outputs, g, max);
  }
}

__global__ void poolBackward(const float *x, const float *dy, float *dx,
                             int64_t planes, PoolGeometry g, bool max) {
  int64_t total = planes * g.inputs;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t plane = e / g.inputs;
    dx[e] = poolGradElement(x + plane * g.inputs, dy + plane * g.outputs,
                            e % g.inputs, g, max);
  }
}

__global__ void planeMeans(const float *x, float *y, int64_t planes,
                           int64_t positions) {
  int lane = threadIdx.x % kWarp;
  for (int64_t plane =
           blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
       plane < planes; plane += int64_t(gridDim.x) * kRowsPerBlock) {
    float sum = 0;
    for (int64_t i = lane; i < positions; i += kWarp)
      sum += x[plane * positions + i];
    sum = warpSum(sum);
    if (lane == 0)
      y[plane] = sum / static_cast<float>(positions);
  }
}

/// heterps.max_pool, heterps.avg_pool: input -> output.
class PoolKernel : public Kernel {
public:
  PoolKernel(const OpInfo &op, bool max)
      : Kernel(op), max(max),
        includePad(!max && op.getBool("count_include_pad", false)) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() != 1)
      fail(info.describe(), ": takes 1 operand, got ", in.size());
    cpu::PoolShape shape(info, in[0]);
    g = poolGeometryOf(shape, in[0], includePad);
    planes = in[0][0] * in[0][1];
    return {shape.output};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t total = planes * g.outputs;
    if (total == 0)
      return;
    poolForward<<<blocksFor(total), kBlock, 0, gpuDevice().stream>>>(
        in[0]->as<float>(), res[0]->as<float>(), planes, g, max);
    checkLaunch(info);
  }

private:
  bool max, includePad;
  PoolGeometry g;
  int64_t planes = 0;
};

/// heterps.pool_grad: (input, output, dy) -> dinput; attribute `kind` is
/// "max" or "avg", the others are the pool's.
class PoolGradKernel : public Kernel {
public:
  explicit PoolGradKernel(const OpInfo &op)
      : Kernel(op), max(op.getString("kind") == "max") {
    std::string kind = op.getString("kind");
    if (kind != "max" && kind != "avg")
      fail(op.describe(), ": kind is '", kind, "', expected 'max' or 'avg'");
    includePad = !max && op.getBool("count_include_pad", false);
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() != 3)
      fail(info.describe(), ": takes 3 operands, got ", in.size());
    cpu::PoolShape shape(info, in[0]);
    for (size_t i : {1, 2})
      if (in[i] != shape.output)
        fail(info.describe(), ": ", (i == 1 ? "output" : "dy"), " has shape ",
             shapeString(in[i]), ", expected the pooled shape ",
             shapeString(shape.output));
    g = poolGeometryOf(shape, in[0], includePad);
    planes = in[0][0] * in[0][1];
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t total = planes * g.inputs;
    if (total == 0)
      return;
    poolBackward<<<blocksFor(total), kBlock, 0, gpuDevice().stream>>>(
        in[0]->as<float>(), in[2]->as<float>(), res[0]->as<float>(), planes, g,
        max);
    checkLaunch(info);
  }

private:
  bool max, includePad = false;
  PoolGeometry g;
  int64_t planes = 0;
};

/// heterps.global_avg_pool: N x C x spatial... -> N x C x 1 x ....
class GlobalAvgPoolKernel : public Kernel {
public:
  explicit GlobalAvgPoolKernel(const OpInfo &op) : Kernel(op) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    const Shape &x = in.at(0);
    if (x.size() < 3)
      fail(info.describe(), ": input must be N x C x spatial..., got ",
           shapeString(x));
    planes = x[0] * x[1];
    positions = numElements(Shape(x.begin() + 2, x.end()));
    if (positions == 0)
      fail(info.describe(), ": input ", shapeString(x),
           " has no spatial positions to average");
    Shape out(x.size(), 1);
    out[0] = x[0];
    out[1] = x[1];
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (planes == 0)
      return;
    planeMeans<<<blocksForRows(planes), kBlock, 0, gpuDevice().stream>>>(
        in[0]->as<float>(), res[0]->as<float>(), planes, positions);
    checkLaunch(info);
  }

private:
  int64_t planes = 0, positions = 1;
};

} // namespace

void cuda::registerPoolKernels(KernelRegistry &r) {
  r.add("heterps.max_pool", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<PoolKernel>(op, true);
  });
  r.add("heterps.avg_pool", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<PoolKernel>(op, false);
  });
  addKernel<PoolGradKernel>(r, "heterps.pool_grad");
  addKernel<GlobalAvgPoolKernel>(r, "heterps.global_avg_pool");
}
