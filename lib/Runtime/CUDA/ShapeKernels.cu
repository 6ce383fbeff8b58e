//===- ShapeKernels.cu - Constants, concat, slice, transpose, expand, pad -===//
//
// A concat is one 2-D copy per operand (its rows into their columns of the
// result); a slice, a transpose and an expand read their operand through
// the strides the CPU column computes for them (SliceIndex, TransposePlan,
// broadcastStrides), and a slice's gradient writes through the slice's.
// A pad reads each result element's source through padSource (the CPU's
// arithmetic); its gradient adds each result element's gradient to its
// source with atomicAdd (under "reflect" and "edge" several elements share
// a source, so their sum's order, and last bits, may differ from the
// CPU's; under "constant" each source has one).
// Constants are copied to the device once, at their first run, and their
// results are views of that copy.
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
      copied.reset(p, releaseDeviceMemory);
      // On the thread's stream, so that the kernels that read the constant
      // wait for it (the stream does not wait for the legacy one).
      check(cudaMemcpyAsync(p, value.data(), value.byteSize(),
                            cudaMemcpyHostToDevice, gpuDevice().stream),
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
    cudaStream_t stream = gpuDevice().stream;
    // CUDA refuses pitches above 2^31 - 1 bytes (cudaDevAttrMaxPitch on
    // every GPU so far): rows that wide, few by the device's memory, and a
    // single row go as plain copies.
    constexpr size_t kMaxPitch = (size_t(1) << 31) - 1;
    bool byRow = outer == 1 || size_t(total) * es > kMaxPitch;
    int64_t column = 0;
    for (size_t i = 0; i < in.size(); column += inner[i++]) {
      const char *x = static_cast<const char *>(in[i]->data());
      size_t width = inner[i] * es;
      if (outer == 0 || width == 0)
        continue;
      if (byRow) {
        for (int64_t r = 0; r < outer; ++r)
          check(cudaMemcpyAsync(y + (r * total + column) * es, x + r * width,
                                width, cudaMemcpyDeviceToDevice, stream),
                "copying a concat's operand");
      } else {
        check(cudaMemcpy2DAsync(y + column * es, total * es, x, width, width,
                                outer, cudaMemcpyDeviceToDevice, stream),
              "copying a concat's operand");
      }
    }
  }

private:
  int64_t axisAttr, outer = 1, total = 0;
  std::vector<int64_t> inner;
};

/// y[i] = x[at(i)] (a gather) or y[at(i)] = x[i] (a scatter), where at(i)
/// reads the index i of shape ix.dims through the strides ix.a.
template <bool Scatter, typename T>
__global__ void copyStrided(const T *x, T *y, int64_t n, Indexing ix) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t at = offsetOf(i, ix);
    if (Scatter)
      y[at] = x[i];
    else
      y[i] = x[at];
  }
}

/// Copies the `n` elements of `ix` between x and y as copyStrided does, for
/// elements of 4 or 8 bytes (every type the plans move this way).
template <bool Scatter>
void launchCopyStrided(const void *x, void *y, size_t elementSize, int64_t n,
                       const Indexing &ix, const OpInfo &info) {
  if (n == 0)
    return;
  cudaStream_t stream = gpuDevice().stream;
  if (elementSize == 4)
    copyStrided<Scatter><<<blocksFor(n), kBlock, 0, stream>>>(
        static_cast<const uint32_t *>(x), static_cast<uint32_t *>(y), n, ix);
  else if (elementSize == 8)
    copyStrided<Scatter><<<blocksFor(n), kBlock, 0, stream>>>(
        static_cast<const uint64_t *>(x), static_cast<uint64_t *>(y), n, ix);
  else
    fail(info.describe(), ": the GPU column moves 4- and 8-byte ",
         "elements, got ", elementSize, "-byte ones");
  checkLaunch(info);
}

/// An op whose result is its operand read through strides from an offset:
/// slice, transpose, expand. `plan` computes them for the operand's shape.
class StridedReadKernel : public Kernel {
public:
  explicit StridedReadKernel(const OpInfo &op) : Kernel(op) {
    requireWordElements(op, op.inputTypes().at(0).dtype);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = plan(in[0]);
    ix = makeIndexing(out, strides, {}, info);
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    size_t es = dtypeSize(in[0]->dtype());
    launchCopyStrided<false>(
        static_cast<const char *>(in[0]->data()) + offset * es, res[0]->data(),
        es, res[0]->numElements(), ix, info);
  }

protected:
  virtual Shape plan(const Shape &in) = 0;

  int64_t offset = 0;
  std::vector<int64_t> strides;

private:
  Indexing ix;
};

class SliceKernel : public StridedReadKernel {
public:
  explicit SliceKernel(const OpInfo &op)
      : StridedReadKernel(op), starts(op.getInts("starts")),
        ends(op.getInts("ends")), steps(op.getInts("steps")) {}

private:
  Shape plan(const Shape &in) override {
    cpu::SliceIndex index;
    index.compute(in, starts, ends, steps, info);
    offset = index.offset;
    strides = index.strides;
    return index.out;
  }

  std::vector<int64_t> starts, ends, steps;
};

class TransposeKernel : public StridedReadKernel {
public:
  explicit TransposeKernel(const OpInfo &op)
      : StridedReadKernel(op), perm(op.getInts("perm")) {}

private:
  Shape plan(const Shape &in) override {
    cpu::TransposePlan p;
    p.compute(in, perm, info);
    strides = p.strides;
    return p.out;
  }

  std::vector<int64_t> perm;
};

class ExpandKernel : public StridedReadKernel {
public:
  explicit ExpandKernel(const OpInfo &op)
      : StridedReadKernel(op), target(op.getInts("shape")) {}

private:
  Shape plan(const Shape &in) override {
    Shape out = cpu::broadcastShapes(in, target, info);
    strides = cpu::broadcastStrides(in, out);
    return out;
  }

  Shape target;
};

/// heterps.slice_grad: operands (input, result gradient); zeros with the
/// result gradient written where the slice read.
class SliceGradKernel : public Kernel {
public:
  explicit SliceGradKernel(const OpInfo &op)
      : Kernel(op), starts(op.getInts("starts")), ends(op.getInts("ends")),
        steps(op.getInts("steps")) {
    requireWordElements(op, op.outputTypes().at(0).dtype);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.compute(in[0], starts, ends, steps, info);
    index.checkGradient(in[1], info);
    ix = makeIndexing(index.out, index.strides, {}, info);
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    size_t es = dtypeSize(res[0]->dtype());
    check(cudaMemsetAsync(res[0]->data(), 0, res[0]->byteSize(),
                          gpuDevice().stream),
          "clearing a slice's gradient");
    launchCopyStrided<true>(
        in[1]->data(), static_cast<char *>(res[0]->data()) + index.offset * es,
        es, in[1]->numElements(), ix, info);
  }

private:
  std::vector<int64_t> starts, ends, steps;
  cpu::SliceIndex index;
  Indexing ix;
};

template <typename T>
__global__ void padElements(const T *x, T *y, int64_t total, PadAddressing a,
                            T fill) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t from = padInputOffset(e, a);
    y[e] = from < 0 ? fill : x[from];
  }
}

__global__ void padGradients(const float *dy, float *dx, int64_t total,
                             PadAddressing a) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t to = padInputOffset(e, a);
    if (to >= 0)
      atomicAdd(dx + to, dy[e]);
  }
}

/// heterps.pad and (with `backward`) pad_grad (operands input, result_grad).
class PadKernel : public Kernel {
public:
  PadKernel(const OpInfo &op, bool backward)
      : Kernel(op), mode(op.getString("mode", "constant")),
        pads(op.getInts("pads")), value(op.getFloat("value", 0.0)),
        backward(backward) {
    if (backward)
      requireF32(op);
    else
      requireF32OrInteger(op, 0);
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::PadShape shape;
    shape.compute(in[0], mode, pads, info);
    addressing = makePadAddressing(in[0], shape, info);
    if (backward && in[1] != shape.out)
      fail(info.describe(), ": the result gradient has shape ",
           shapeString(in[1]), ", the pad's result ", shapeString(shape.out));
    return {backward ? in[0] : shape.out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    if (backward) {
      check(cudaMemsetAsync(res[0]->data(), 0, res[0]->byteSize(), stream),
            "clearing a pad's gradient");
      int64_t total = in[1]->numElements();
      if (total)
        padGradients<<<blocksFor(total), kBlock, 0, stream>>>(
            in[1]->as<float>(), res[0]->as<float>(), total, addressing);
      checkLaunch(info);
      return;
    }
    int64_t total = res[0]->numElements();
    if (total == 0)
      return;
    auto launch = [&](auto tag) {
      using T = decltype(tag);
      padElements<<<blocksFor(total), kBlock, 0, stream>>>(
          in[0]->as<T>(), res[0]->as<T>(), total, addressing,
          static_cast<T>(value));
    };
    dispatchF32OrInteger(in[0]->dtype(), launch);
    checkLaunch(info);
  }

private:
  std::string mode;
  std::vector<int64_t> pads;
  double value;
  bool backward;
  PadAddressing addressing;
};

} // namespace

void cuda::registerShapeKernels(KernelRegistry &r) {
  addKernel<ConstantKernel>(r, "heterps.constant");
  addKernel<ConcatKernel>(r, "heterps.concat");
  addKernel<SliceKernel>(r, "heterps.slice");
  addKernel<SliceGradKernel>(r, "heterps.slice_grad");
  addKernel<TransposeKernel>(r, "heterps.transpose");
  addKernel<ExpandKernel>(r, "heterps.expand");
  r.add("heterps.pad", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<PadKernel>(op, false);
  });
  r.add("heterps.pad_grad", DeviceKind::GPU,
        [](const OpInfo &op) { return std::make_unique<PadKernel>(op, true); });
  // A reshape is a view of its operand wherever that lives.
  r.add("heterps.reshape", DeviceKind::GPU, cpu::makeReshapeKernel);
}
