//===- ScatterKernels.cu - Element and slice gathers and scatters ---------===//
//
// heterps.gather_elements, scatter_elements and scatter_nd, and their
// gradients. Each op first turns its indices into data offsets on the
// device (Indexing.h's elementOffset and tupleOffset, the arithmetic the
// unit tests hold against the CPU column), recording the first index out
// of range; the op reads that check back and fails naming the index as the
// CPU does, before anything is written. The second launch moves the
// values:
//
// - stores ("none") keep the CPU's order, the last index naming an element
//   (a slice) winning: a pass records the largest position per target
//   (atomicMax), and only that position stores;
// - additions use atomicAdd, so for floats the order of the additions to
//   one element, and its last bits, may differ from the CPU's; products
//   (scatter_nd's "mul") multiply through compare-and-swap, likewise;
// - gradients copy and clear through the same offsets.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

#include <type_traits>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

template <typename I>
__global__ void elementOffsets(const I *idx, int64_t n, ElementAddressing a,
                               int64_t *offsets, unsigned long long *bad) {
  HETERPS_GRID_STRIDE(p, n) {
    int64_t offset = elementOffset(p, static_cast<int64_t>(idx[p]), a);
    if (offset < 0)
      atomicMin(bad, static_cast<unsigned long long>(p));
    offsets[p] = offset;
  }
}

template <typename I>
__global__ void tupleOffsets(const I *idx, int64_t tuples, TupleAddressing a,
                             int64_t *offsets, unsigned long long *bad) {
  HETERPS_GRID_STRIDE(p, tuples) {
    int entry = 0;
    int64_t offset = tupleOffset(idx + p * a.k, a, entry);
    if (offset < 0)
      atomicMin(bad, static_cast<unsigned long long>(p * a.k + entry));
    offsets[p] = offset;
  }
}

/// Element `e` of `count` positions of `width` elements each: position
/// e / width, element e % width of the slice at its offset.
__device__ inline int64_t target(const int64_t *offsets, int64_t e,
                                 int64_t width) {
  return offsets[e / width] + e % width;
}

template <typename T>
__global__ void gatherAt(const T *x, const int64_t *offsets, T *y,
                         int64_t total, int64_t width) {
  HETERPS_GRID_STRIDE(e, total) { y[e] = x[target(offsets, e, width)]; }
}

__global__ void addAt(const float *dy, const int64_t *offsets, float *dx,
                      int64_t total, int64_t width) {
  HETERPS_GRID_STRIDE(e, total) {
    atomicAdd(dx + target(offsets, e, width), dy[e]);
  }
}

/// The last position naming each target (targets counted in slices).
__global__ void claimTargets(const int64_t *offsets, int64_t positions,
                             int64_t width, long long *winner) {
  HETERPS_GRID_STRIDE(p, positions) {
    atomicMax(winner + offsets[p] / width, static_cast<long long>(p));
  }
}

template <typename T> __device__ void atomicAddValue(T *at, T v);
template <> __device__ void atomicAddValue(float *at, float v) {
  atomicAdd(at, v);
}
template <> __device__ void atomicAddValue(int32_t *at, int32_t v) {
  atomicAdd(at, v);
}
template <> __device__ void atomicAddValue(int64_t *at, int64_t v) {
  // Two's complement: an unsigned addition is the signed one.
  atomicAdd(reinterpret_cast<unsigned long long *>(at),
            static_cast<unsigned long long>(v));
}

/// *at *= v, atomically (compare and swap on the value's bits).
template <typename T> __device__ void atomicMulValue(T *at, T v) {
  using Bits =
      std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
  Bits *word = reinterpret_cast<Bits *>(at);
  Bits seen = *word, assumed;
  do {
    assumed = seen;
    T current;
    memcpy(&current, &assumed, sizeof(T));
    T product = current * v;
    Bits next;
    memcpy(&next, &product, sizeof(T));
    seen = atomicCAS(word, assumed, next);
  } while (seen != assumed);
}

enum class Reduction { None, Add, Mul };

Reduction parseReduction(const std::string &name) {
  return name == "add"   ? Reduction::Add
         : name == "mul" ? Reduction::Mul
                         : Reduction::None;
}

template <typename T>
__global__ void scatterAt(const T *u, const int64_t *offsets, T *y,
                          int64_t total, int64_t width, Reduction reduction,
                          const long long *winner) {
  HETERPS_GRID_STRIDE(e, total) {
    int64_t p = e / width, to = offsets[p] + e % width;
    switch (reduction) {
    case Reduction::None:
      if (winner[offsets[p] / width] == p)
        y[to] = u[e];
      break;
    case Reduction::Add:
      atomicAddValue(y + to, u[e]);
      break;
    case Reduction::Mul:
      atomicMulValue(y + to, u[e]);
      break;
    }
  }
}

/// The updates' gradient: the result's gradient read where they went.
__global__ void gatherGradAt(const float *dy, const int64_t *offsets, float *du,
                             int64_t total, int64_t width) {
  HETERPS_GRID_STRIDE(e, total) { du[e] = dy[target(offsets, e, width)]; }
}

/// The data's gradient (a copy of the result's) cleared where a store
/// replaced the data.
__global__ void clearAt(const int64_t *offsets, float *dx, int64_t total,
                        int64_t width) {
  HETERPS_GRID_STRIDE(e, total) { dx[target(offsets, e, width)] = 0.0f; }
}

/// What the ops share: the index type, the offsets on the device and their
/// check, named as the CPU names a bad index.
class IndexedKernel : public Kernel {
public:
  IndexedKernel(const OpInfo &op, size_t indexOperand)
      : Kernel(op), wideIndices(wideIndexOperand(op, indexOperand)) {}

protected:
  /// The data offsets of the indices (one per element, or per tuple of
  /// `tuple.k`); fails naming the first index out of range.
  const int64_t *elementOffsetsOf(const Tensor &indices) {
    int64_t n = indices.numElements();
    offsets.reserve(n, "allocating a scatter's offsets");
    launchChecked(indices, [&](auto *idx) {
      elementOffsets<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(
          idx, n, elements, offsets.get(), bad.word());
    });
    return offsets.get();
  }
  const int64_t *tupleOffsetsOf(const Tensor &indices) {
    int64_t n = indices.numElements() / tuple.k;
    offsets.reserve(n, "allocating a scatter's offsets");
    launchChecked(indices, [&](auto *idx) {
      tupleOffsets<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(
          idx, n, tuple, offsets.get(), bad.word());
    });
    return offsets.get();
  }

  /// For stores: the last of `positions` naming each of the data's
  /// `targets` targets.
  const long long *claim(const int64_t *at, int64_t positions, int64_t targets,
                         int64_t width) {
    cudaStream_t stream = gpuDevice().stream;
    winners.reserve(targets, "allocating a scatter's winners");
    check(cudaMemsetAsync(winners.get(), 0xff, targets * sizeof(long long),
                          stream),
          "clearing a scatter's winners");
    claimTargets<<<blocksFor(positions), kBlock, 0, stream>>>(
        at, positions, width, winners.get());
    checkLaunch(info);
    return winners.get();
  }

  bool wideIndices;
  ElementAddressing elements;
  TupleAddressing tuple;
  bool tuples = false;

private:
  template <typename F> void launchChecked(const Tensor &indices, F &&launch) {
    if (indices.numElements() == 0)
      return;
    int64_t value = 0;
    int64_t position =
        bad.launchChecked(info, indices, wideIndices, launch, value);
    if (position < 0)
      return;
    if (!tuples)
      fail(info.describe(), ": index ", value, " out of range [0, ",
           elements.dimSize, ")");
    int64_t entry = position % tuple.k;
    fail(info.describe(), ": index tuple ", position / tuple.k, " has ", value,
         " in dimension ", entry, ", out of range [0, ", tuple.dims[entry],
         ")");
  }

  BadIndexFlag bad;
  DeviceScratch<int64_t> offsets;
  DeviceScratch<long long> winners;
};

/// heterps.gather_elements (data, indices) and its gradient (data,
/// indices, result_grad).
class GatherElementsKernel : public IndexedKernel {
public:
  GatherElementsKernel(const OpInfo &op, bool backward)
      : IndexedKernel(op, 1), axisAttr(op.getInt("axis", 0)),
        backward(backward) {
    if (backward)
      requireF32(op);
    else
      requireF32OrInteger(op, 0);
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::ElementShape shape;
    shape.compute(info, axisAttr, in[0], in[1]);
    elements = makeElementAddressing(in[0], shape, info);
    if (backward && in[2] != in[1])
      fail(info.describe(), ": the result gradient has shape ",
           shapeString(in[2]), ", the indices ", shapeString(in[1]));
    return {backward ? in[0] : in[1]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    int64_t n = in[1]->numElements();
    if (backward)
      check(cudaMemsetAsync(res[0]->data(), 0, res[0]->byteSize(), stream),
            "clearing a gather's gradient");
    const int64_t *at = elementOffsetsOf(*in[1]);
    if (n == 0)
      return;
    if (backward) {
      addAt<<<blocksFor(n), kBlock, 0, stream>>>(in[2]->as<float>(), at,
                                                 res[0]->as<float>(), n, 1);
    } else {
      if (dtypeSize(in[0]->dtype()) == 4)
        gatherAt<<<blocksFor(n), kBlock, 0, stream>>>(
            in[0]->as<uint32_t>(), at, res[0]->as<uint32_t>(), n, 1);
      else
        gatherAt<<<blocksFor(n), kBlock, 0, stream>>>(
            in[0]->as<uint64_t>(), at, res[0]->as<uint64_t>(), n, 1);
    }
    checkLaunch(info);
  }

private:
  int64_t axisAttr;
  bool backward;
};

/// What the two scatters share once their offsets are known: the result
/// is the data with the updates stored, added or multiplied at `width`
/// elements per position.
class ScatterKernelBase : public IndexedKernel {
public:
  /// A scatter's operands are (data, indices, updates), its gradient's
  /// (indices, result_grad).
  ScatterKernelBase(const OpInfo &op, bool gradient, bool mulAllowed)
      : IndexedKernel(op, gradient ? 0 : 1),
        reduction(parseReduction(cpu::scatterReduction(op, mulAllowed))) {
    if (gradient)
      requireF32(op);
    else
      requireF32OrInteger(op, 0);
  }

protected:
  void scatter(const Tensor &data, const Tensor &updates, const int64_t *at,
               int64_t positions, int64_t width, Tensor &result) {
    cudaStream_t stream = gpuDevice().stream;
    check(cudaMemcpyAsync(result.data(), data.data(), data.byteSize(),
                          cudaMemcpyDeviceToDevice, stream),
          "copying a scatter's data");
    int64_t total = positions * width;
    if (total == 0)
      return;
    const long long *winner =
        reduction == Reduction::None
            ? claim(at, positions, data.numElements() / width, width)
            : nullptr;
    dispatchF32OrInteger(data.dtype(), [&](auto tag) {
      using T = decltype(tag);
      scatterAt<<<blocksFor(total), kBlock, 0, stream>>>(
          updates.as<T>(), at, result.as<T>(), total, width, reduction, winner);
    });
    checkLaunch(info);
  }

  /// (result_grad) -> the data's gradient, the updates'.
  void scatterGrad(const Tensor &dy, const int64_t *at, int64_t positions,
                   int64_t width, Tensor &dx, Tensor &du) {
    cudaStream_t stream = gpuDevice().stream;
    check(cudaMemcpyAsync(dx.data(), dy.data(), dy.byteSize(),
                          cudaMemcpyDeviceToDevice, stream),
          "copying a scatter's gradient");
    int64_t total = positions * width;
    if (total == 0)
      return;
    gatherGradAt<<<blocksFor(total), kBlock, 0, stream>>>(
        dy.as<float>(), at, du.as<float>(), total, width);
    if (reduction == Reduction::None)
      clearAt<<<blocksFor(total), kBlock, 0, stream>>>(at, dx.as<float>(),
                                                       total, width);
    checkLaunch(info);
  }

  Reduction reduction;
};

/// heterps.scatter_elements: (data, indices, updates).
class ScatterElementsKernel : public ScatterKernelBase {
public:
  explicit ScatterElementsKernel(const OpInfo &op)
      : ScatterKernelBase(op, false, false), axisAttr(op.getInt("axis", 0)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::ElementShape shape;
    shape.compute(info, axisAttr, in[0], in[1]);
    elements = makeElementAddressing(in[0], shape, info);
    if (in[2] != in[1])
      fail(info.describe(), ": updates ", shapeString(in[2]), " for indices ",
           shapeString(in[1]));
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const int64_t *at = elementOffsetsOf(*in[1]);
    scatter(*in[0], *in[2], at, in[1]->numElements(), 1, *res[0]);
  }

private:
  int64_t axisAttr;
};

/// heterps.scatter_elements_grad: (indices, result_grad).
class ScatterElementsGradKernel : public ScatterKernelBase {
public:
  explicit ScatterElementsGradKernel(const OpInfo &op)
      : ScatterKernelBase(op, true, false), axisAttr(op.getInt("axis", 0)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::ElementShape shape;
    shape.compute(info, axisAttr, in[1], in[0]);
    elements = makeElementAddressing(in[1], shape, info);
    return {in[1], in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const int64_t *at = elementOffsetsOf(*in[0]);
    scatterGrad(*in[1], at, in[0]->numElements(), 1, *res[0], *res[1]);
  }

private:
  int64_t axisAttr;
};

/// heterps.scatter_nd: (data, indices, updates).
class ScatterNDKernel : public ScatterKernelBase {
public:
  explicit ScatterNDKernel(const OpInfo &op)
      : ScatterKernelBase(op, false, true) {
    tuples = true;
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::TupleShape shape;
    shape.compute(info, in[0], in[1], in[2]);
    tuple = makeTupleAddressing(shape, info);
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const int64_t *at = tupleOffsetsOf(*in[1]);
    scatter(*in[0], *in[2], at, in[1]->numElements() / tuple.k, tuple.slice,
            *res[0]);
  }
};

/// heterps.scatter_nd_grad: (indices, result_grad).
class ScatterNDGradKernel : public ScatterKernelBase {
public:
  explicit ScatterNDGradKernel(const OpInfo &op)
      : ScatterKernelBase(op, true, false) {
    tuples = true;
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape updates = cpu::TupleShape::updatesShape(in[1], in[0]);
    cpu::TupleShape shape;
    shape.compute(info, in[1], in[0], updates);
    tuple = makeTupleAddressing(shape, info);
    return {in[1], updates};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const int64_t *at = tupleOffsetsOf(*in[0]);
    scatterGrad(*in[1], at, in[0]->numElements() / tuple.k, tuple.slice,
                *res[0], *res[1]);
  }
};

} // namespace

void cuda::registerScatterKernels(KernelRegistry &r) {
  r.add("heterps.gather_elements", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<GatherElementsKernel>(op, false);
  });
  r.add("heterps.gather_elements_grad", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<GatherElementsKernel>(op, true);
  });
  addKernel<ScatterElementsKernel>(r, "heterps.scatter_elements");
  addKernel<ScatterElementsGradKernel>(r, "heterps.scatter_elements_grad");
  addKernel<ScatterNDKernel>(r, "heterps.scatter_nd");
  addKernel<ScatterNDGradKernel>(r, "heterps.scatter_nd_grad");
}
