//===- LogicKernels.cu - Comparisons, selections and casts on the GPU -----===//
//
// The ops that mix floats with booleans or integers: compare (two f32
// operands broadcast into a bool result), where (a bool condition choosing
// between two f32 operands, the three broadcast) and cast between f32 and
// i32, i64 or bool, each element as the CPU converts it (CastValue.h). Ops
// on booleans or integers alone run on the CPU.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/CastValue.h"
#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

enum class Comparison { Eq, Lt, Gt, Le, Ge };

__global__ void compareBroadcast(Comparison how, const float *a, const float *b,
                                 bool *y, int64_t n, Indexing ix) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    offsetsOf(i, ix, ia, ib);
    float x = a[ia], z = b[ib];
    y[i] = how == Comparison::Eq   ? x == z
           : how == Comparison::Lt ? x < z
           : how == Comparison::Gt ? x > z
           : how == Comparison::Le ? x <= z
                                   : x >= z;
  }
}

/// y = condition ? a : b; `cx` reads the condition (a strides) and a (b
/// strides), `rest` reads b (a strides).
__global__ void selectBroadcast(const bool *condition, const float *a,
                                const float *b, float *y, int64_t n,
                                Indexing cx, Indexing rest) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ic, ia;
    offsetsOf(i, cx, ic, ia);
    y[i] = condition[ic] ? a[ia] : b[offsetOf(i, rest)];
  }
}

template <typename From, typename To>
__global__ void castElements(const From *x, To *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = castValue<To>(x[i]);
}

/// heterps.compare: (a, b) -> bool, attribute kind (eq, lt, gt, le, ge).
class CompareKernel : public Kernel {
public:
  explicit CompareKernel(const OpInfo &op) : Kernel(op) {
    std::string kind = op.getString("kind");
    how = kind == "eq"   ? Comparison::Eq
          : kind == "lt" ? Comparison::Lt
          : kind == "gt" ? Comparison::Gt
          : kind == "le" ? Comparison::Le
                         : Comparison::Ge;
    if (kind != "eq" && kind != "lt" && kind != "gt" && kind != "le" &&
        kind != "ge")
      fail(op.describe(), ": unknown kind '", kind, "'");
    for (const TensorType &t : op.inputTypes())
      if (t.dtype != DType::F32)
        fail(op.describe(), ": the GPU compare takes f32 operands, ", "got ",
             dtypeName(t.dtype));
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out;
    ix = broadcastIndexing(in[0], in[1], out, info);
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = res[0]->numElements();
    if (n == 0)
      return;
    compareBroadcast<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(
        how, in[0]->as<float>(), in[1]->as<float>(), res[0]->as<bool>(), n, ix);
    checkLaunch(info);
  }

private:
  Comparison how;
  Indexing ix;
};

/// heterps.where: (condition, a, b) -> condition ? a : b, broadcast.
class WhereKernel : public Kernel {
public:
  explicit WhereKernel(const OpInfo &op) : Kernel(op) {
    const std::vector<TensorType> &t = op.inputTypes();
    if (t.size() != 3 || t[0].dtype != DType::Bool ||
        t[1].dtype != DType::F32 || t[2].dtype != DType::F32)
      fail(op.describe(), ": the GPU where takes a bool condition ",
           "and two f32 operands");
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = cpu::broadcastShapes(cpu::broadcastShapes(in[0], in[1], info),
                                     in[2], info);
    cx = makeIndexing(out, cpu::broadcastStrides(in[0], out),
                      cpu::broadcastStrides(in[1], out), info);
    rest = makeIndexing(out, cpu::broadcastStrides(in[2], out), {}, info);
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = res[0]->numElements();
    if (n == 0)
      return;
    selectBroadcast<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(
        in[0]->as<bool>(), in[1]->as<float>(), in[2]->as<float>(),
        res[0]->as<float>(), n, cx, rest);
    checkLaunch(info);
  }

private:
  Indexing cx, rest;
};

/// heterps.cast between f32 and f32, i32, i64 or bool, either way.
class CastKernel : public Kernel {
public:
  explicit CastKernel(const OpInfo &op) : Kernel(op) {
    from = op.inputTypes().at(0).dtype;
    to = op.outputTypes().at(0).dtype;
    auto supported = [](DType t) {
      return t == DType::F32 || t == DType::I32 || t == DType::I64 ||
             t == DType::Bool;
    };
    if (!supported(from) || !supported(to) ||
        (from != DType::F32 && to != DType::F32))
      fail(op.describe(), ": the GPU cast goes between f32 and f32, ",
           "i32, i64 or bool, not ", dtypeName(from), " to ", dtypeName(to));
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = in[0]->numElements();
    if (n == 0)
      return;
    if (from == DType::F32)
      dispatch(in[0]->as<float>(), *res[0], n);
    else if (from == DType::I32)
      launch(in[0]->as<int32_t>(), res[0]->as<float>(), n);
    else if (from == DType::I64)
      launch(in[0]->as<int64_t>(), res[0]->as<float>(), n);
    else
      launch(in[0]->as<bool>(), res[0]->as<float>(), n);
    checkLaunch(info);
  }

private:
  void dispatch(const float *x, Tensor &y, int64_t n) {
    if (to == DType::F32)
      launch(x, y.as<float>(), n);
    else if (to == DType::I32)
      launch(x, y.as<int32_t>(), n);
    else if (to == DType::I64)
      launch(x, y.as<int64_t>(), n);
    else
      launch(x, y.as<bool>(), n);
  }

  template <typename F, typename T> void launch(const F *x, T *y, int64_t n) {
    castElements<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(x, y, n);
  }

  DType from, to;
};

} // namespace

void cuda::registerLogicKernels(KernelRegistry &r) {
  addKernel<CompareKernel>(r, "heterps.compare");
  addKernel<WhereKernel>(r, "heterps.where");
  addKernel<CastKernel>(r, "heterps.cast");
}
