//===- ShapeKernels.cu - Constants, concat and slice on the GPU -----------===//
//
// A concat is one 2-D copy per operand (its rows into their columns of the
// result); a slice gathers through the strides the CPU column computes for
// it (SliceIndex). Constants are copied to the device once, at their first
// run, and their results are views of that copy.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

class ConstantKernel : public Kernel {
public:
  explicit ConstantKernel(const OpInfo &op)
      : Kernel(op), value(op.getTensor("value")) {}

  std::vector<Shape> prepare(const std::vector<Shape> &) override {
    return {value.shape()};
  }

  void run(const std::vector<const Tensor *> &,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (!copied) {
      void *p = nullptr;
      size_t bytes = std::max<size_t>(value.byteSize(), 1);
      check(cudaMalloc(&p, bytes), "allocating a constant on the device");
      copied.reset(p, cudaFree);
      check(
          cudaMemcpy(p, value.data(), value.byteSize(), cudaMemcpyHostToDevice),
          "copying a constant to the device");
    }
    res[0]->reset(value.dtype(), value.shape(), copied.get());
  }
  bool outputsAreViews() const override { return true; }

private:
  Tensor value;
  std::shared_ptr<void> copied;
};

class ConcatKernel : public Kernel {
public:
  explicit ConcatKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis")) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::ConcatShape shape(in, axisAttr, info);
    outer = shape.outer;
    inner = shape.inner;
    total = 0;
    for (int64_t n : inner)
      total += n;
    return {shape.out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    size_t es = dtypeSize(res[0]->dtype());
    char *y = static_cast<char *>(res[0]->data());
    int64_t column = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (outer && inner[i])
        check(cudaMemcpy2DAsync(y + column * es, total * es, in[i]->data(),
                                inner[i] * es, inner[i] * es, outer,
                                cudaMemcpyDeviceToDevice, gpuDevice().stream),
              "copying a concat's operand");
      column += inner[i];
    }
  }

private:
  int64_t axisAttr, outer = 1, total = 0;
  std::vector<int64_t> inner;
};

template <typename T>
__global__ void gatherStrided(const T *x, T *y, int64_t n, Indexing ix) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, at = 0;
    for (int d = ix.rank - 1; d >= 0; --d) {
      at += (rest % ix.dims[d]) * ix.a[d];
      rest /= ix.dims[d];
    }
    y[i] = x[at];
  }
}

class SliceKernel : public Kernel {
public:
  explicit SliceKernel(const OpInfo &op)
      : Kernel(op), starts(op.getInts("starts")), ends(op.getInts("ends")),
        steps(op.getInts("steps")) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.compute(in[0], starts, ends, steps, info);
    ix = makeIndexing(index.out, index.strides, {}, info);
    return {index.out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = res[0]->numElements();
    if (n == 0)
      return;
    size_t es = dtypeSize(in[0]->dtype());
    const char *x =
        static_cast<const char *>(in[0]->data()) + index.offset * es;
    cudaStream_t stream = gpuDevice().stream;
    if (es == 4)
      gatherStrided<<<blocksFor(n), kBlock, 0, stream>>>(
          reinterpret_cast<const uint32_t *>(x), res[0]->as<uint32_t>(), n, ix);
    else if (es == 8)
      gatherStrided<<<blocksFor(n), kBlock, 0, stream>>>(
          reinterpret_cast<const uint64_t *>(x), res[0]->as<uint64_t>(), n, ix);
    else
      fail() << info.describe() << ": the GPU slice takes 4- and 8-byte "
             << "elements, got " << dtypeName(in[0]->dtype());
    checkLaunch(info);
  }

private:
  std::vector<int64_t> starts, ends, steps;
  cpu::SliceIndex index;
  Indexing ix;
};

} // namespace

void cuda::registerShapeKernels(KernelRegistry &r) {
  addKernel<ConstantKernel>(r, "heterps.constant");
  addKernel<ConcatKernel>(r, "heterps.concat");
  addKernel<SliceKernel>(r, "heterps.slice");
  // A reshape is a view of its operand wherever that lives.
  r.add("heterps.reshape", DeviceKind::GPU, cpu::makeReshapeKernel);
}
