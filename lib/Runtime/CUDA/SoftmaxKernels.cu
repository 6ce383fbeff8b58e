//===- SoftmaxKernels.cu - Softmax, log-softmax and their gradient --------===//
//
// The operand is seen as [outer, dim, inner] around the axis (AxisSplit, as
// on the CPU). One warp computes one row of `dim` elements: the maximum,
// the sum of exponentials and, for the gradient, the row's dot product are
// warp reductions, so a row of any length takes one pass per quantity and
// no shared memory.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// Row `row` of [outer, dim, inner]: its first element and stride.
struct Row {
  int64_t base, stride;
  __device__ Row(int64_t row, int64_t dim, int64_t inner)
      : base((row / inner) * dim * inner + row % inner), stride(inner) {}
  __device__ int64_t at(int64_t d) const { return base + d * stride; }
};

__global__ void softmaxRows(const float *x, float *y, int64_t rows, int64_t dim,
                            int64_t inner, bool isLog) {
  int lane = threadIdx.x % kWarp;
  for (int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
       row < rows; row += int64_t(gridDim.x) * kRowsPerBlock) {
    Row r(row, dim, inner);
    float m = -INFINITY;
    for (int64_t d = lane; d < dim; d += kWarp)
      m = fmaxf(m, x[r.at(d)]);
    m = warpMax(m);
    float sum = 0;
    for (int64_t d = lane; d < dim; d += kWarp)
      sum += expf(x[r.at(d)] - m);
    sum = warpSum(sum);
    float lse = m + logf(sum);
    for (int64_t d = lane; d < dim; d += kWarp)
      y[r.at(d)] = isLog ? x[r.at(d)] - lse : expf(x[r.at(d)] - m) / sum;
  }
}

/// dx from the forward's result y and its gradient dy: y * (dy - sum(dy *
/// y)) for softmax, dy - exp(y) * sum(dy) for log-softmax.
__global__ void softmaxGradRows(const float *y, const float *dy, float *dx,
                                int64_t rows, int64_t dim, int64_t inner,
                                bool isLog) {
  int lane = threadIdx.x % kWarp;
  for (int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
       row < rows; row += int64_t(gridDim.x) * kRowsPerBlock) {
    Row r(row, dim, inner);
    float acc = 0;
    for (int64_t d = lane; d < dim; d += kWarp)
      acc += isLog ? dy[r.at(d)] : dy[r.at(d)] * y[r.at(d)];
    acc = warpSum(acc);
    for (int64_t d = lane; d < dim; d += kWarp) {
      int64_t k = r.at(d);
      dx[k] = isLog ? dy[k] - expf(y[k]) * acc : y[k] * (dy[k] - acc);
    }
  }
}

/// heterps.softmax and log_softmax (operand x), softmax_grad (operands y,
/// dy; attribute `log`).
class SoftmaxKernel : public Kernel {
public:
  SoftmaxKernel(const OpInfo &op, bool backward)
      : Kernel(op), axisAttr(op.getInt("axis", -1)),
        isLog(backward ? op.getBool("log", false)
                       : op.name() == "heterps.log_softmax"),
        backward(backward) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::requireSameShapes(in, info);
    split.init(in[0], cpu::normalizeAxis(
                          axisAttr, static_cast<int64_t>(in[0].size()), info));
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t rows = split.outer * split.inner;
    if (rows == 0 || split.dim == 0)
      return;
    cudaStream_t stream = gpuDevice().stream;
    if (backward)
      softmaxGradRows<<<blocksForRows(rows), kBlock, 0, stream>>>(
          in[0]->as<float>(), in[1]->as<float>(), res[0]->as<float>(), rows,
          split.dim, split.inner, isLog);
    else
      softmaxRows<<<blocksForRows(rows), kBlock, 0, stream>>>(
          in[0]->as<float>(), res[0]->as<float>(), rows, split.dim, split.inner,
          isLog);
    checkLaunch(info);
  }

private:
  int64_t axisAttr;
  bool isLog, backward;
  cpu::AxisSplit split;
};

} // namespace

void cuda::registerSoftmaxKernels(KernelRegistry &r) {
  for (const char *name : {"heterps.softmax", "heterps.log_softmax"})
    r.add(name, DeviceKind::GPU, [](const OpInfo &op) {
      return std::make_unique<SoftmaxKernel>(op, false);
    });
  r.add("heterps.softmax_grad", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<SoftmaxKernel>(op, true);
  });
}
