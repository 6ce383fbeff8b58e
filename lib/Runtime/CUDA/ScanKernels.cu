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
// (LineWalks.h has the walks themselves.)
// Its cost per line is about k * dim * ln(dim / k) comparisons, meant for the
// small k of ranking and retrieval heads, not for sorting a line.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"
#include "LineWalks.h"

#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

#define GRID_STRIDE(e, total)                                                  \
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;             \
       e < (total); e += int64_t(gridDim.x) * blockDim.x)

Lines linesOf(const cpu::AxisSplit &split) {
  return {split.outer, split.dim, split.inner};
}

template <typename T>
__global__ void cumulativeSums(const T *x, T *y, Lines s, bool exclusive,
                               bool reverse) {
  GRID_STRIDE(l, s.count()) {
    int64_t base = s.base(l);
    cumulativeSumOfLine(x + base, y + base, s.dim, s.inner, exclusive, reverse);
  }
}

template <typename T>
__global__ void argExtremes(const T *x, int64_t *y, Lines s, bool isMax,
                            bool last) {
  GRID_STRIDE(l, s.count()) {
    y[l] = argExtremeOfLine(x + s.base(l), s.dim, s.inner, isMax, last);
  }
}

template <typename T>
__global__ void topKPlaces(const T *x, int64_t *y, Lines s, int64_t k,
                           bool largest) {
  GRID_STRIDE(e, s.count() * s.dim) {
    int64_t l = e / s.dim, d = e % s.dim;
    int64_t rank = topKRank(x + s.base(l), s.dim, s.inner, d, k, largest);
    if (rank < k)
      y[s.place(l, rank, k)] = d;
  }
}

/// Calls f(T{}) for the walk's element type (requireF32OrInteger has
/// checked it).
template <typename F> void dispatchWalkType(DType t, F &&f) {
  if (t == DType::F32)
    f(float{});
  else if (t == DType::I32)
    f(int32_t{});
  else
    f(int64_t{});
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
    dispatchWalkType(in[0]->dtype(), [&](auto tag) {
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
  explicit ArgExtremeKernel(const OpInfo &op)
      : Kernel(op), isMax(op.getString("kind") == "max"),
        axisAttr(op.getInt("axis", 0)), keepdims(op.getBool("keepdims", true)),
        last(op.getBool("select_last_index", false)) {
    std::string kind = op.getString("kind");
    if (kind != "max" && kind != "min")
      fail() << op.describe() << ": unknown kind '" << kind << "' (max or min)";
    requireF32OrInteger(op, 0);
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    int64_t rank = static_cast<int64_t>(in[0].size());
    int64_t axis = cpu::normalizeAxis(axisAttr, rank, info);
    if (in[0][axis] == 0)
      fail() << info.describe() << ": the axis has no elements";
    split.init(in[0], axis);
    Shape out = in[0];
    if (keepdims)
      out[axis] = 1;
    else
      out.erase(out.begin() + axis);
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t lines = split.outer * split.inner;
    if (lines == 0)
      return;
    dispatchWalkType(in[0]->dtype(), [&](auto tag) {
      using T = decltype(tag);
      argExtremes<<<blocksFor(lines), kBlock, 0, gpuDevice().stream>>>(
          in[0]->as<T>(), res[0]->as<int64_t>(), linesOf(split), isMax, last);
    });
    checkLaunch(info);
  }

private:
  bool isMax;
  int64_t axisAttr;
  bool keepdims, last;
  cpu::AxisSplit split;
};

class TopKIndicesKernel : public Kernel {
public:
  explicit TopKIndicesKernel(const OpInfo &op)
      : Kernel(op), k(op.getInt("k", 1)), axisAttr(op.getInt("axis", -1)),
        largest(op.getBool("largest", true)) {
    requireF32OrInteger(op, 0);
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    int64_t rank = static_cast<int64_t>(in[0].size());
    int64_t axis = cpu::normalizeAxis(axisAttr, rank, info);
    if (k < 0 || k > in[0][axis])
      fail() << info.describe() << ": k = " << k << " for an axis of "
             << in[0][axis] << " elements";
    split.init(in[0], axis);
    Shape out = in[0];
    out[axis] = k;
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t elements = split.outer * split.inner * split.dim;
    if (elements == 0 || k == 0)
      return;
    dispatchWalkType(in[0]->dtype(), [&](auto tag) {
      using T = decltype(tag);
      topKPlaces<<<blocksFor(elements), kBlock, 0, gpuDevice().stream>>>(
          in[0]->as<T>(), res[0]->as<int64_t>(), linesOf(split), k, largest);
    });
    checkLaunch(info);
  }

private:
  int64_t k, axisAttr;
  bool largest;
  cpu::AxisSplit split;
};

} // namespace

void cuda::registerScanKernels(KernelRegistry &r) {
  addKernel<CumSumKernel>(r, "heterps.cumsum");
  addKernel<ArgExtremeKernel>(r, "heterps.arg_extreme");
  addKernel<TopKIndicesKernel>(r, "heterps.top_k_indices");
}
