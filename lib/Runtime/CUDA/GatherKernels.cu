//===- GatherKernels.cu - Gather and its scatter-add gradient on the GPU --===//
//
// heterps.gather copies slices of its data along an axis where the indices
// point; heterps.gather_grad adds the result gradient's slices back where
// they came from (an index named twice gets both, through atomicAdd, so
// the order of the additions, and the last bits of a sum, may differ from
// the CPU's). Indices are i32 or i64, negative ones count from the end, and
// one out of range fails the op naming it, as on the CPU: the kernels
// record the first bad position and the op reads it after the launch.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// The data position of element `e` of the gather's result, or -1 (and `j`
/// recorded in `bad`) when its index is out of range.
template <typename I>
__device__ int64_t gatherSource(int64_t e, const I *idx, int64_t n,
                                int64_t dimSize, int64_t inner,
                                unsigned long long *bad) {
  int64_t k = e % inner, j = (e / inner) % n, o = e / (inner * n);
  int64_t i = static_cast<int64_t>(idx[j]);
  if (i < 0)
    i += dimSize;
  if (i < 0 || i >= dimSize) {
    atomicMin(bad, static_cast<unsigned long long>(j));
    return -1;
  }
  return (o * dimSize + i) * inner + k;
}

/// Records the first index out of range, for a gather whose result is
/// empty (no slice to copy, but its indices are checked as on the CPU).
template <typename I>
__global__ void checkIndices(const I *idx, int64_t n, int64_t dimSize,
                             unsigned long long *bad) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = static_cast<int64_t>(idx[j]);
    if (i < -dimSize || i >= dimSize)
      atomicMin(bad, static_cast<unsigned long long>(j));
  }
}

template <typename T, typename I>
__global__ void gatherSlices(const T *x, const I *idx, T *y, int64_t total,
                             int64_t n, int64_t dimSize, int64_t inner,
                             unsigned long long *bad) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t from = gatherSource(e, idx, n, dimSize, inner, bad);
    if (from >= 0)
      y[e] = x[from];
  }
}

template <typename I>
__global__ void scatterAddSlices(const float *dy, const I *idx, float *dx,
                                 int64_t total, int64_t n, int64_t dimSize,
                                 int64_t inner, unsigned long long *bad) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t to = gatherSource(e, idx, n, dimSize, inner, bad);
    if (to >= 0)
      atomicAdd(dx + to, dy[e]);
  }
}

/// What gather and gather_grad share: the shape, the index type, and the
/// check of the indices.
class GatherKernelBase : public Kernel {
public:
  explicit GatherKernelBase(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis", 0)),
        wideIndices(wideIndexOperand(op, 1)) {}

protected:
  /// Launches `launch(indices)` with the indices typed, then fails naming
  /// the first index out of range.
  template <typename F> void withIndices(const Tensor &indices, F &&launch) {
    int64_t value = 0;
    int64_t j = bad.launchChecked(info, indices, wideIndices, launch, value);
    if (j >= 0)
      fail(info.describe(), ": index ", value, " at position ", j,
           " is out of range [0, ", shape.dimSize, ")");
  }

  /// The indices of a gather with an empty result, checked all the same.
  void checkEmpty(const Tensor &indices, int64_t n) {
    if (n == 0)
      return;
    withIndices(indices, [&](auto *idx) {
      checkIndices<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(
          idx, n, shape.dimSize, bad.word());
    });
  }

  int64_t axisAttr;
  bool wideIndices;
  cpu::GatherShape shape;
  BadIndexFlag bad;
};

class GatherKernel : public GatherKernelBase {
public:
  explicit GatherKernel(const OpInfo &op) : GatherKernelBase(op) {
    requireWordElements(op, op.inputTypes().at(0).dtype);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    shape.compute(in[0], in[1], axisAttr, info);
    return {shape.out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t total = res[0]->numElements(), n = in[1]->numElements();
    if (total == 0) {
      checkEmpty(*in[1], n);
      return;
    }
    size_t es = dtypeSize(in[0]->dtype());
    if (es != 4 && es != 8)
      fail(info.describe(), ": the GPU gather moves 4- and 8-byte ",
           "elements, got ", dtypeName(in[0]->dtype()));
    cudaStream_t stream = gpuDevice().stream;
    withIndices(*in[1], [&](auto *idx) {
      if (es == 4)
        gatherSlices<<<blocksFor(total), kBlock, 0, stream>>>(
            in[0]->as<uint32_t>(), idx, res[0]->as<uint32_t>(), total, n,
            shape.dimSize, shape.inner, bad.word());
      else
        gatherSlices<<<blocksFor(total), kBlock, 0, stream>>>(
            in[0]->as<uint64_t>(), idx, res[0]->as<uint64_t>(), total, n,
            shape.dimSize, shape.inner, bad.word());
    });
  }
};

/// heterps.gather_grad: operands (data, indices, result gradient).
class GatherGradKernel : public GatherKernelBase {
public:
  explicit GatherGradKernel(const OpInfo &op) : GatherKernelBase(op) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    shape.compute(in[0], in[1], axisAttr, info);
    shape.checkGradient(in[2], info);
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    check(cudaMemsetAsync(res[0]->data(), 0, res[0]->byteSize(), stream),
          "clearing a gather's gradient");
    int64_t total = in[2]->numElements(), n = in[1]->numElements();
    if (total == 0) {
      checkEmpty(*in[1], n);
      return;
    }
    withIndices(*in[1], [&](auto *idx) {
      scatterAddSlices<<<blocksFor(total), kBlock, 0, stream>>>(
          in[2]->as<float>(), idx, res[0]->as<float>(), total, n, shape.dimSize,
          shape.inner, bad.word());
    });
  }
};

} // namespace

void cuda::registerGatherKernels(KernelRegistry &r) {
  addKernel<GatherKernel>(r, "heterps.gather");
  addKernel<GatherGradKernel>(r, "heterps.gather_grad");
}
