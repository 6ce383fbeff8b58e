//===- LossKernels.cu - Losses and their gradients on the GPU -------------===//
//
// The formulas are the CPU column's, which follow PyTorch's (BCELoss clamps
// log at -100, its gradient divides by max(p (1 - p), 1e-12)). Losses
// accumulate in double, as on the CPU. Class labels are checked on the
// device: the kernels record the first position whose label is outside
// [0, C) in a device word that run() reads back, so a bad label is an error
// naming its sample, as on the CPU.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "heterps/Runtime/Error.h"

#include "../CPU/KernelUtil.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

enum class LossKind { BCE, MSE, SoftmaxCE };

LossKind lossKindOf(const OpInfo &op, const std::string &kind) {
  if (kind == "bce")
    return LossKind::BCE;
  if (kind == "mse")
    return LossKind::MSE;
  if (kind == "softmax_ce")
    return LossKind::SoftmaxCE;
  throw RuntimeError(op.describe() + ": the GPU column has no '" + kind +
                     "' loss");
}

__device__ inline double elementLoss(LossKind kind, bool fromLogits, double x,
                                     double y) {
  if (kind == LossKind::MSE)
    return (x - y) * (x - y);
  if (fromLogits)
    return fmax(x, 0.0) - x * y + log1p(exp(-fabs(x)));
  double lp = fmax(log(x), -100.0), l1p = fmax(log(1.0 - x), -100.0);
  return -(y * lp + (1.0 - y) * l1p);
}

__device__ inline double elementGrad(LossKind kind, bool fromLogits, double x,
                                     double y) {
  if (kind == LossKind::MSE)
    return 2.0 * (x - y);
  if (fromLogits)
    return 1.0 / (1.0 + exp(-x)) - y;
  return (x - y) / fmax((1.0 - x) * x, 1e-12);
}

template <typename L>
__device__ inline int64_t labelAt(const L *labels, int64_t i) {
  return static_cast<int64_t>(labels[i]);
}

/// The maximum of a row of class scores (strided by `inner`) and the sum
/// of its exponentials shifted by it.
__device__ inline void softmaxStats(const float *row, int64_t c, int64_t inner,
                                    float &m, float &sum) {
  m = row[0];
  for (int64_t k = 1; k < c; ++k)
    m = fmaxf(m, row[k * inner]);
  sum = 0.0f;
  for (int64_t k = 0; k < c; ++k)
    sum += expf(row[k * inner] - m);
}

/// Softmax cross-entropy of a row (classes strided by `inner`).
__device__ inline double softmaxLoss(const float *row, int64_t c, int64_t inner,
                                     int64_t label) {
  float m, sum;
  softmaxStats(row, c, inner, m, sum);
  return m + log(static_cast<double>(sum)) - row[label * inner];
}

/// Per-position losses into `out` (reduction none) or `partial` (double,
/// summed after), one thread per position.
template <typename L>
__global__ void lossForward(LossKind kind, bool fromLogits, const float *x,
                            const float *y, const L *labels, int64_t positions,
                            int64_t c, int64_t inner, float *out,
                            double *partial, unsigned long long *bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < positions; i += int64_t(gridDim.x) * blockDim.x) {
    double value;
    if (kind == LossKind::SoftmaxCE) {
      int64_t label = labelAt(labels, i);
      if (label < 0 || label >= c) {
        atomicMin(bad, static_cast<unsigned long long>(i));
        value = 0.0;
      } else {
        int64_t s = i / inner, j = i % inner;
        value = softmaxLoss(x + s * c * inner + j, c, inner, label);
      }
    } else {
      value = elementLoss(kind, fromLogits, x[i], y[i]);
    }
    if (out)
      out[i] = static_cast<float>(value);
    else
      partial[i] = value;
  }
}

__global__ void sumPartials(const double *partial, int64_t n, double scale,
                            float *out) {
  __shared__ double sums[kBlock];
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum += partial[i];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width)
      sums[threadIdx.x] += sums[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[0] = static_cast<float>(sums[0] * scale);
}

template <typename L>
__global__ void lossBackward(LossKind kind, bool fromLogits, const float *x,
                             const float *y, const L *labels, int64_t positions,
                             int64_t c, int64_t inner, const float *dl,
                             bool perElement, double scale, float *dx,
                             unsigned long long *bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < positions; i += int64_t(gridDim.x) * blockDim.x) {
    double up = (perElement ? dl[i] : dl[0]) * scale;
    if (kind != LossKind::SoftmaxCE) {
      dx[i] =
          static_cast<float>(elementGrad(kind, fromLogits, x[i], y[i]) * up);
      continue;
    }
    int64_t label = labelAt(labels, i);
    int64_t s = i / inner, j = i % inner;
    const float *row = x + s * c * inner + j;
    float *drow = dx + s * c * inner + j;
    if (label < 0 || label >= c) {
      atomicMin(bad, static_cast<unsigned long long>(i));
      for (int64_t k = 0; k < c; ++k)
        drow[k * inner] = 0.0f;
      continue;
    }
    float m, sum;
    softmaxStats(row, c, inner, m, sum);
    for (int64_t k = 0; k < c; ++k)
      drow[k * inner] = static_cast<float>(
          (expf(row[k * inner] - m) / sum - (k == label ? 1.0 : 0.0)) * up);
  }
}

class LossKernelBase : public Kernel {
public:
  LossKernelBase(const OpInfo &op, const std::string &kindName)
      : Kernel(op), kind(lossKindOf(op, kindName)),
        reduction(cpu::lossReductionOf(op)),
        fromLogits(op.getBool("from_logits", false)) {
    requireF32(op);
    if (op.has("ignore_index"))
      fail() << op.describe() << ": the GPU column has no ignore_index";
    DType labelType = op.inputTypes()[1].dtype;
    if (kind == LossKind::SoftmaxCE && labelType != DType::I64 &&
        labelType != DType::I32)
      fail() << op.describe() << ": the GPU column takes i64 or i32 labels, "
             << "got " << dtypeName(labelType);
    if (kind != LossKind::SoftmaxCE && labelType != DType::F32)
      fail() << op.describe() << ": labels must be f32, got "
             << dtypeName(labelType);
  }

protected:
  void split(const std::vector<Shape> &in) {
    const Shape &p = in[0];
    if (kind == LossKind::SoftmaxCE) {
      if (p.size() < 2)
        fail() << info.describe() << ": class scores must have rank >= 2, got "
               << shapeString(p);
      Shape expected = p;
      expected.erase(expected.begin() + 1);
      if (in[1] != expected)
        fail() << info.describe() << ": labels of shape " << shapeString(in[1])
               << ", expected " << shapeString(expected);
      c = p[1];
      inner = numElements(Shape(p.begin() + 2, p.end()));
      positions = p[0] * inner;
    } else {
      if (in[1] != p)
        fail() << info.describe() << ": labels of shape " << shapeString(in[1])
               << " do not match predictions " << shapeString(p);
      c = 1;
      inner = 1;
      positions = numElements(p);
    }
    if (!bad) {
      void *word = nullptr;
      check(cudaMalloc(&word, 2 * sizeof(unsigned long long)),
            "allocating a loss's label check");
      bad.reset(static_cast<unsigned long long *>(word), cudaFree);
    }
  }

  /// Arms the label check before a launch.
  void armCheck() {
    check(cudaMemsetAsync(bad.get(), 0xff, sizeof(unsigned long long),
                          gpuDevice().stream),
          "arming a loss's label check");
  }

  /// Waits for the launch and names the first label outside [0, C).
  void reportBadLabel(const Tensor &labels) {
    unsigned long long first = 0;
    check(cudaMemcpyAsync(&first, bad.get(), sizeof(first),
                          cudaMemcpyDeviceToHost, gpuDevice().stream),
          "reading a loss's label check");
    check(cudaStreamSynchronize(gpuDevice().stream), "waiting for a loss");
    if (first == ~0ull)
      return;
    int64_t label = 0;
    const void *at = static_cast<const char *>(labels.data()) +
                     first * dtypeSize(labels.dtype());
    check(cudaMemcpy(&label, at, dtypeSize(labels.dtype()),
                     cudaMemcpyDeviceToHost),
          "reading a bad label");
    if (labels.dtype() == DType::I32)
      label = static_cast<int32_t>(label);
    fail() << info.describe() << ": label " << label << " of sample "
           << static_cast<int64_t>(first) / inner << " is outside [0, " << c
           << ")";
  }

  LossKind kind;
  cpu::LossReduction reduction;
  bool fromLogits;
  int64_t c = 1, inner = 1, positions = 0;
  std::shared_ptr<unsigned long long> bad;
};

class LossKernel : public LossKernelBase {
public:
  explicit LossKernel(const OpInfo &op)
      : LossKernelBase(op, op.name() == "heterps.bce_loss"   ? "bce"
                           : op.name() == "heterps.mse_loss" ? "mse"
                                                             : "softmax_ce") {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    split(in);
    if (reduction != cpu::LossReduction::None) {
      void *p = nullptr;
      if (!partial || partialCount < positions) {
        check(cudaMalloc(&p, std::max<int64_t>(positions, 1) * sizeof(double)),
              "allocating a loss's partial sums");
        partial.reset(static_cast<double *>(p), cudaFree);
        partialCount = positions;
      }
      return {{}};
    }
    return {kind == LossKind::SoftmaxCE ? in[1] : in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    float *out =
        reduction == cpu::LossReduction::None ? res[0]->as<float>() : nullptr;
    bool classes = kind == LossKind::SoftmaxCE;
    if (classes)
      armCheck();
    if (positions) {
      const float *y = classes ? nullptr : in[1]->as<float>();
      if (classes && in[1]->dtype() == DType::I32)
        lossForward<<<blocksFor(positions), kBlock, 0, stream>>>(
            kind, fromLogits, in[0]->as<float>(), y, in[1]->as<int32_t>(),
            positions, c, inner, out, partial.get(), bad.get());
      else
        lossForward<<<blocksFor(positions), kBlock, 0, stream>>>(
            kind, fromLogits, in[0]->as<float>(), y, in[1]->as<int64_t>(),
            positions, c, inner, out, partial.get(), bad.get());
      checkLaunch(info);
    }
    if (!out) {
      double scale = reduction == cpu::LossReduction::Mean && positions
                         ? 1.0 / static_cast<double>(positions)
                         : 1.0;
      sumPartials<<<1, kBlock, 0, stream>>>(partial.get(), positions, scale,
                                            res[0]->as<float>());
      checkLaunch(info);
    }
    if (classes)
      reportBadLabel(*in[1]);
  }

private:
  std::shared_ptr<double> partial;
  int64_t partialCount = 0;
};

/// heterps.loss_grad: operands (prediction, label, loss_grad).
class LossGradKernel : public LossKernelBase {
public:
  explicit LossGradKernel(const OpInfo &op)
      : LossKernelBase(op, op.getString("kind")) {
    if (op.numInputs() > 3)
      fail() << op.describe() << ": the GPU column has no class weights";
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    split(in);
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (!positions)
      return;
    cudaStream_t stream = gpuDevice().stream;
    bool perElement = reduction == cpu::LossReduction::None;
    double scale = reduction == cpu::LossReduction::Mean
                       ? 1.0 / static_cast<double>(positions)
                       : 1.0;
    bool classes = kind == LossKind::SoftmaxCE;
    if (classes)
      armCheck();
    const float *y = classes ? nullptr : in[1]->as<float>();
    if (classes && in[1]->dtype() == DType::I32)
      lossBackward<<<blocksFor(positions), kBlock, 0, stream>>>(
          kind, fromLogits, in[0]->as<float>(), y, in[1]->as<int32_t>(),
          positions, c, inner, in[2]->as<float>(), perElement, scale,
          res[0]->as<float>(), bad.get());
    else
      lossBackward<<<blocksFor(positions), kBlock, 0, stream>>>(
          kind, fromLogits, in[0]->as<float>(), y, in[1]->as<int64_t>(),
          positions, c, inner, in[2]->as<float>(), perElement, scale,
          res[0]->as<float>(), bad.get());
    checkLaunch(info);
    if (classes)
      reportBadLabel(*in[1]);
  }
};

} // namespace

void cuda::registerLossKernels(KernelRegistry &r) {
  for (const char *name :
       {"heterps.bce_loss", "heterps.mse_loss", "heterps.softmax_ce_loss"})
    addKernel<LossKernel>(r, name);
  addKernel<LossGradKernel>(r, "heterps.loss_grad");
}
