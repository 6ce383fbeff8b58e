//===- ElementwiseKernels.cu - Elementwise ops on the GPU -----------------===//
//
// Binary ops broadcast as NumPy does (the shape rules are the CPU column's,
// KernelUtil.h); operands of one shape take a flat loop. Unary ops and
// their gradients evaluate UnaryMath.h's formulas, the ones the host tests
// hold against the CPU column.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"
#include "UnaryMath.h"

#include "../CPU/DropoutMask.h"
#include "../CPU/KernelUtil.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

enum class BinaryKind { Add, Sub, Mul, Div, Pow };

__device__ inline float applyBinary(BinaryKind kind, float a, float b) {
  switch (kind) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  case BinaryKind::Pow:
    return powf(a, b);
  }
  return 0.0f;
}

__global__ void binarySame(BinaryKind kind, const float *a, const float *b,
                           float *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = applyBinary(kind, a[i], b[i]);
}

__global__ void binaryBroadcast(BinaryKind kind, const float *a, const float *b,
                                float *y, int64_t n, Indexing ix) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    offsetsOf(i, ix, ia, ib);
    y[i] = applyBinary(kind, a[ia], b[ib]);
  }
}

class BinaryKernel : public Kernel {
public:
  BinaryKernel(const OpInfo &op, BinaryKind kind) : Kernel(op), kind(kind) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out;
    ix = broadcastIndexing(in[0], in[1], out, info);
    same = in[0] == in[1];
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = res[0]->numElements();
    if (n == 0)
      return;
    cudaStream_t stream = gpuDevice().stream;
    if (same)
      binarySame<<<blocksFor(n), kBlock, 0, stream>>>(
          kind, in[0]->as<float>(), in[1]->as<float>(), res[0]->as<float>(), n);
    else
      binaryBroadcast<<<blocksFor(n), kBlock, 0, stream>>>(
          kind, in[0]->as<float>(), in[1]->as<float>(), res[0]->as<float>(), n,
          ix);
    checkLaunch(info);
  }

private:
  BinaryKind kind;
  bool same = false;
  Indexing ix;
};

template <BinaryKind K> class BinaryKernelOf : public BinaryKernel {
public:
  explicit BinaryKernelOf(const OpInfo &op) : BinaryKernel(op, K) {}
};

__global__ void unaryForwardKernel(UnaryKind kind, UnaryParams p,
                                   const float *x, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = unaryForward(kind, x[i], p);
}

__global__ void unaryBackwardKernel(UnaryKind kind, UnaryParams p,
                                    const float *x, const float *y,
                                    const float *dy, float *dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = unaryBackward(kind, x[i], y[i], dy[i], p);
}

UnaryParams unaryParamsOf(const OpInfo &op) {
  UnaryParams p;
  p.alpha = static_cast<float>(op.getFloat("alpha", 0.01));
  p.lo = static_cast<float>(op.getFloat("min", -INFINITY));
  p.hi = static_cast<float>(op.getFloat("max", INFINITY));
  return p;
}

/// A unary op (`gradient` false) or heterps.unary_grad, whose operands are
/// (input, result, result_grad).
class UnaryKernel : public Kernel {
public:
  UnaryKernel(const OpInfo &op, bool gradient)
      : Kernel(op), gradient(gradient), params(unaryParamsOf(op)) {
    requireF32(op);
    std::string name =
        gradient ? op.getString("kind") : op.name().substr(strlen("heterps."));
    kind = unaryKindOf(name);
    if (kind == UnaryKind::Invalid)
      fail(op.describe(), ": the GPU column has no unary kind '", name, "'");
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::requireSameShapes(in, info);
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = res[0]->numElements();
    if (n == 0)
      return;
    cudaStream_t stream = gpuDevice().stream;
    if (gradient)
      unaryBackwardKernel<<<blocksFor(n), kBlock, 0, stream>>>(
          kind, params, in[0]->as<float>(), in[1]->as<float>(),
          in[2]->as<float>(), res[0]->as<float>(), n);
    else
      unaryForwardKernel<<<blocksFor(n), kBlock, 0, stream>>>(
          kind, params, in[0]->as<float>(), res[0]->as<float>(), n);
    checkLaunch(info);
  }

private:
  bool gradient;
  UnaryKind kind = UnaryKind::Invalid;
  UnaryParams params;
};

__global__ void dropoutKernel(const float *x, float *y, int64_t n,
                              uint64_t seed, int64_t step, int64_t id,
                              double ratio, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = dropoutKeeps(seed, step, id, i, ratio) ? x[i] * scale : 0.0f;
}

/// heterps.dropout, or heterps.unary_grad of kind dropout (operands input,
/// result, result_grad): the CPU's mask (DropoutMask.h), so both columns
/// drop the same elements of a step. Outside training the forward copies.
class DropoutKernel : public Kernel {
public:
  DropoutKernel(const OpInfo &op, bool gradient)
      : Kernel(op), gradient(gradient), ratio(op.getFloat("ratio", 0.5)),
        id(op.getInt("dropout_id", 0)) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::requireSameShapes(in, info);
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    int64_t n = res[0]->numElements();
    if (n == 0)
      return;
    cudaStream_t stream = gpuDevice().stream;
    const Tensor &x = gradient ? *in[2] : *in[0];
    if (!gradient && (!ctx.training || ratio == 0)) {
      check(cudaMemcpyAsync(res[0]->data(), x.data(), x.byteSize(),
                            cudaMemcpyDeviceToDevice, stream),
            "copying a dropout's input");
      return;
    }
    float scale = static_cast<float>(1.0 / (1.0 - ratio));
    dropoutKernel<<<blocksFor(n), kBlock, 0, stream>>>(
        x.as<float>(), res[0]->as<float>(), n, ctx.seed, ctx.step, id, ratio,
        scale);
    checkLaunch(info);
  }

private:
  bool gradient;
  double ratio;
  int64_t id;
};

} // namespace

/// The unary kinds the GPU column computes (UnaryMath.h), besides dropout.
static const char *const kUnaryOps[] = {
    "heterps.relu", "heterps.sigmoid",    "heterps.tanh", "heterps.erf",
    "heterps.exp",  "heterps.log",        "heterps.sqrt", "heterps.neg",
    "heterps.abs",  "heterps.leaky_relu", "heterps.clip"};

void cuda::registerElementwiseKernels(KernelRegistry &r) {
  addKernel<BinaryKernelOf<BinaryKind::Add>>(r, "heterps.add");
  addKernel<BinaryKernelOf<BinaryKind::Sub>>(r, "heterps.sub");
  addKernel<BinaryKernelOf<BinaryKind::Mul>>(r, "heterps.mul");
  addKernel<BinaryKernelOf<BinaryKind::Div>>(r, "heterps.div");
  addKernel<BinaryKernelOf<BinaryKind::Pow>>(r, "heterps.pow");
  for (const char *name : kUnaryOps)
    r.add(name, DeviceKind::GPU, [](const OpInfo &op) {
      return std::make_unique<UnaryKernel>(op, false);
    });
  r.add("heterps.dropout", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<DropoutKernel>(op, false);
  });
  r.add("heterps.unary_grad", DeviceKind::GPU,
        [](const OpInfo &op) -> std::unique_ptr<Kernel> {
          if (op.getString("kind") == "dropout")
            return std::make_unique<DropoutKernel>(op, true);
          return std::make_unique<UnaryKernel>(op, true);
        });
}
