//===- ReduceKernels.cu - Sums and means over axes on the GPU -------------===//
//
// One block per result element: its threads stride over the reduced
// elements and combine their partial sums in shared memory. The same kernel
// serves reduce_sum, reduce_mean and sum_to_shape (the gradient of a
// broadcast), which all reduce an input into a `kept` shape of its rank
// with 1 along the reduced dimensions.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

__global__ void reduceSum(const float *x, float *y, int64_t outputs,
                          int64_t count, Indexing kept, Indexing reduced,
                          float scale) {
  __shared__ float partial[kBlock];
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    int64_t base = offsetOf(o, kept);
    float sum = 0.0f;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x)
      sum += x[base + offsetOf(r, reduced)];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int width = blockDim.x / 2; width > 0; width /= 2) {
      if (threadIdx.x < width)
        partial[threadIdx.x] += partial[threadIdx.x + width];
      __syncthreads();
    }
    if (threadIdx.x == 0)
      y[o] = partial[0] * scale;
    __syncthreads();
  }
}

/// The launch of a reduction of `input` into `kept` (same rank).
struct Reduction {
  int64_t outputs = 0, count = 1;
  Indexing kept, reduced;

  void init(const Shape &input, const Shape &keptShape, const OpInfo &op) {
    std::vector<int64_t> strides = cpu::stridesOf(input);
    Shape reducedShape(input.size(), 1);
    count = 1;
    for (size_t d = 0; d < input.size(); ++d)
      if (keptShape[d] == 1) {
        reducedShape[d] = input[d];
        count *= input[d];
      }
    outputs = numElements(keptShape);
    kept = makeIndexing(keptShape, strides, {}, op);
    reduced = makeIndexing(reducedShape, strides, {}, op);
  }

  void run(const OpInfo &op, const float *x, float *y, float scale) const {
    if (outputs == 0)
      return;
    unsigned grid =
        static_cast<unsigned>(outputs < 65535 ? outputs : int64_t(65535));
    reduceSum<<<grid, kBlock, 0, gpuDevice().stream>>>(x, y, outputs, count,
                                                       kept, reduced, scale);
    checkLaunch(op);
  }
};

/// heterps.reduce_sum and heterps.reduce_mean over `axes` (all when empty).
class ReduceKernel : public Kernel {
public:
  explicit ReduceKernel(const OpInfo &op)
      : Kernel(op), mean(op.name() == "heterps.reduce_mean"),
        axes(op.getInts("axes")), keepdims(op.getBool("keepdims", true)) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::ReducePlan plan;
    plan.init(in[0], axes, keepdims, info);
    reduction.init(in[0], plan.kept, info);
    return {plan.result};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    // A mean over no elements is NaN, as on the CPU (0 / 0).
    float scale = mean ? 1.0f / static_cast<float>(reduction.count) : 1.0f;
    reduction.run(info, in[0]->as<float>(), res[0]->as<float>(), scale);
  }

private:
  bool mean;
  std::vector<int64_t> axes;
  bool keepdims;
  Reduction reduction;
};

/// heterps.sum_to_shape: sums a value over the dimensions along which
/// operand 1's shape broadcasts to it.
class SumToShapeKernel : public Kernel {
public:
  explicit SumToShapeKernel(const OpInfo &op) : Kernel(op) { requireF32(op); }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (cpu::broadcastShapes(in[1], in[0], info) != in[0])
      fail() << info.describe() << ": " << shapeString(in[1])
             << " does not broadcast to " << shapeString(in[0]);
    Shape kept(in[0].size() - in[1].size(), 1);
    kept.insert(kept.end(), in[1].begin(), in[1].end());
    reduction.init(in[0], kept, info);
    return {in[1]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    reduction.run(info, in[0]->as<float>(), res[0]->as<float>(), 1.0f);
  }

private:
  Reduction reduction;
};

} // namespace

void cuda::registerReduceKernels(KernelRegistry &r) {
  addKernel<ReduceKernel>(r, "heterps.reduce_sum");
  addKernel<ReduceKernel>(r, "heterps.reduce_mean");
  addKernel<SumToShapeKernel>(r, "heterps.sum_to_shape");
}
