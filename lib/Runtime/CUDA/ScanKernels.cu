//===- ScanKernels.cu - Walks along one axis: cumsum, arg and top k -------===//
//
// The tensor seen as [outer, dim, inner] around the axis (AxisSplit, as on
// the CPU). heterps.cumsum and heterps.arg_extreme give each line along the
// axis a thread that walks it in the CPU's order, so that sums round and
// ties break as the CPU's do; neighbouring threads take neighbouring lines,
// so their reads are contiguous whenever `inner` is more than one.
//
// heterps.top_k_indices gives each element a thread that counts the
// elements coming before it in topKPrecedes' order (the CPU's comparator),
// stopping at k: an element of rank r < k writes its position to place r.
// (CPU/LineWalks.h has the walks themselves.)
// Its cost per line is about k * dim * ln(dim / k) comparisons, meant for the
// small k of ranking and retrieval heads, not for sorting a line.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"
#include "../CPU/LineWalks.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

cpu::Lines linesOf(const cpu::AxisSplit &split) {
  return {split.outer, split.dim, split.inner};
}

template <typename T>
__global__ void cumulativeSums(const T *x, T *y, cpu::Lines s, bool exclusive,
                               bool reverse) {
  HETERPS_GRID_STRIDE(l, s.count()) {
    int64_t base = s.base(l);
    cpu::cumulativeSumOfLine(x + base, y + base, s.dim, s.inner, exclusive,
                             reverse);
  }
}

template <typename T>
__global__ void argExtremes(const T *x, int64_t *y, cpu::Lines s, bool isMax,
                            bool last) {
  HETERPS_GRID_STRIDE(l, s.count()) {
    y[l] = cpu::argExtremeOfLine(x + s.base(l), s.dim, s.inner, isMax, last);
  }
}

template <typename T>
__global__ void topKPlaces(const T *x, int64_t *y, cpu::Lines s, int64_t k,
                           bool largest) {
  HETERPS_GRID_STRIDE(e, s.count() * s.dim) {
    int64_t l = e / s.dim, d = e % s.dim;
    int64_t rank = cpu::topKRank(x + s.base(l), s.dim, s.inner, d, k, largest);
    if (rank < k)
      y[s.place(l, rank, k)] = d;
  }
}

class CumSumKernel : public Kernel {
public:
  explicit CumSumKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis")),
        exclusive(op.getBool("exclusive", false)),
        reverse(op.getBool("reverse", false)) {
    requireF32OrInteger(op, 0);
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    int64_t rank = static_cast<int64_t>(in[0].size());
    split.init(in[0], cpu::normalizeAxis(axisAttr, rank, info));
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t lines = split.outer * split.inner;
    if (lines * split.dim == 0)
      return;
    dispatchF32OrInteger(in[0]->dtype(), [&](auto tag) {
      using T = decltype(tag);
      cumulativeSums<<<blocksFor(lines), kBlock, 0, gpuDevice().stream>>>(
          in[0]->as<T>(), res[0]->as<T>(), linesOf(split), exclusive, reverse);
    });
    checkLaunch(info);
  }

private:
  int64_t axisAttr;
  bool exclusive, reverse;
  cpu::AxisSplit split;
};

class ArgExtremeKernel : public Kernel {
public:
  explicit ArgExtremeKernel(const OpInfo &op) : Kernel(op), shape(op) {
    requireF32OrInteger(op, 0);
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {shape.compute(in[0], info)};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cpu::Lines lines = linesOf(shape.split);
    if (lines.count() == 0)
      return;
    dispatchF32OrInteger(in[0]->dtype(), [&](auto tag) {
      using T = decltype(tag);
      argExtremes<<<blocksFor(lines.count()), kBlock, 0, gpuDevice().stream>>>(
          in[0]->as<T>(), res[0]->as<int64_t>(), lines, shape.isMax,
          shape.last);
    });
    checkLaunch(info);
  }

private:
  cpu::ArgExtremeShape shape;
};

class TopKIndicesKernel : public Kernel {
public:
  explicit TopKIndicesKernel(const OpInfo &op) : Kernel(op), shape(op) {
    requireF32OrInteger(op, 0);
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {shape.compute(in[0], info)};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cpu::Lines lines = linesOf(shape.split);
    int64_t elements = lines.count() * lines.dim;
    if (elements == 0 || shape.k == 0)
      return;
    dispatchF32OrInteger(in[0]->dtype(), [&](auto tag) {
      using T = decltype(tag);
      topKPlaces<<<blocksFor(elements), kBlock, 0, gpuDevice().stream>>>(
          in[0]->as<T>(), res[0]->as<int64_t>(), lines, shape.k, shape.largest);
    });
    checkLaunch(info);
  }

private:
  cpu::TopKShape shape;
};

} // namespace

void cuda::registerScanKernels(KernelRegistry &r) {
  addKernel<CumSumKernel>(r, "heterps.cumsum");
  addKernel<ArgExtremeKernel>(r, "heterps.arg_extreme");
  addKernel<TopKIndicesKernel>(r, "heterps.top_k_indices");
}
