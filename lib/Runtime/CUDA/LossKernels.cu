//===- LossKernels.cu - Losses and their gradients on the GPU -------------===//
//
// The formulas are the CPU column's, which follow PyTorch's (BCELoss clamps
// log at -100, its gradient divides by max(p (1 - p), 1e-12)). Losses
// accumulate in double, as on the CPU. Class losses (softmax
// cross-entropy, NLL) skip the positions labelled ignore_index, weigh the
// others by their class's weight and take their mean over the weights'
// sum, as PyTorch's do. Class labels are checked on the device: the kernels
// record the first position whose label is outside [0, C) in a device word
// that run() reads back, so a bad label is an error naming its sample, as
// on the CPU.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "heterps/Runtime/Error.h"

#include "../CPU/KernelUtil.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

enum class LossKind { BCE, MSE, SoftmaxCE, NLL };

LossKind lossKindOf(const OpInfo &op, const std::string &kind) {
  if (kind == "bce")
    return LossKind::BCE;
  if (kind == "mse")
    return LossKind::MSE;
  if (kind == "softmax_ce")
    return LossKind::SoftmaxCE;
  if (kind == "nll" || kind == "weighted_nll")
    return LossKind::NLL;
  throw RuntimeError(op.describe() + ": the GPU column has no '" + kind +
                     "' loss");
}

HETERPS_HD inline bool isClassLoss(LossKind kind) {
  return kind == LossKind::SoftmaxCE || kind == LossKind::NLL;
}

/// What a class loss does with a position's label: skips `ignoreIndex`
/// (when `hasIgnore`) and weighs the others by `weights[label]` (when
/// given); a mean divides by the weights' sum, as PyTorch's does.
struct ClassLabels {
  bool hasIgnore = false;
  int64_t ignoreIndex = -100;
  const float *weights = nullptr;
};

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

/// The label of position `i`, or -1 when the position is ignored or its
/// label is outside [0, c) (then recorded in `bad`).
template <typename L>
__device__ inline int64_t usableLabel(const L *labels, int64_t i, int64_t c,
                                      const ClassLabels &cl,
                                      unsigned long long *bad) {
  int64_t label = static_cast<int64_t>(labels[i]);
  if (cl.hasIgnore && label == cl.ignoreIndex)
    return -1;
  if (label < 0 || label >= c) {
    atomicMin(bad, static_cast<unsigned long long>(i));
    return -1;
  }
  return label;
}

/// The weight of a usable label.
__device__ inline double labelWeight(const ClassLabels &cl, int64_t label) {
  return cl.weights ? static_cast<double>(cl.weights[label]) : 1.0;
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

/// Per-position losses into `out` (reduction none) or, with their
/// weights, into `partial` (pairs of doubles, summed after); one thread per
/// position.
template <typename L>
__global__ void lossForward(LossKind kind, bool fromLogits, ClassLabels cl,
                            const float *x, const float *y, const L *labels,
                            int64_t positions, int64_t c, int64_t inner,
                            float *out, double *partial,
                            unsigned long long *bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < positions; i += int64_t(gridDim.x) * blockDim.x) {
    double value = 0.0, weight = 1.0;
    if (isClassLoss(kind)) {
      int64_t label = usableLabel(labels, i, c, cl, bad);
      weight = 0.0;
      if (label >= 0) {
        const float *row = x + (i / inner) * c * inner + i % inner;
        weight = labelWeight(cl, label);
        value = (kind == LossKind::SoftmaxCE
                     ? softmaxLoss(row, c, inner, label)
                     : -static_cast<double>(row[label * inner])) *
                weight;
      }
    } else {
      value = elementLoss(kind, fromLogits, x[i], y[i]);
    }
    if (out) {
      out[i] = static_cast<float>(value);
    } else {
      partial[2 * i] = value;
      partial[2 * i + 1] = weight;
    }
  }
}

/// The weights of the positions of a class loss into `partial` (pairs, the
/// second of each): what a mean divides by.
template <typename L>
__global__ void classWeights(const L *labels, int64_t positions, int64_t c,
                             ClassLabels cl, double *partial,
                             unsigned long long *bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < positions; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t label = usableLabel(labels, i, c, cl, bad);
    partial[2 * i] = 0.0;
    partial[2 * i + 1] = label >= 0 ? labelWeight(cl, label) : 0.0;
  }
}

/// Sums the pairs of `partial` (values, weights) in one block: `sum`
/// gets the values' sum, or their mean over the weights with `mean` (0
/// when the weights sum to 0), and `norm` (when given) 1 / the weights'
/// sum with `mean`, else 1.
__global__ void sumPartials(const double *partial, int64_t n, bool mean,
                            float *sum, double *norm) {
  __shared__ double values[kBlock], weights[kBlock];
  double value = 0.0, weight = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    value += partial[2 * i];
    weight += partial[2 * i + 1];
  }
  values[threadIdx.x] = value;
  weights[threadIdx.x] = weight;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      values[threadIdx.x] += values[threadIdx.x + width];
      weights[threadIdx.x] += weights[threadIdx.x + width];
    }
    __syncthreads();
  }
  if (threadIdx.x != 0)
    return;
  if (sum)
    sum[0] = static_cast<float>(
        !mean ? values[0] : (weights[0] > 0 ? values[0] / weights[0] : 0.0));
  if (norm)
    norm[0] = mean && weights[0] > 0 ? 1.0 / weights[0] : 1.0;
}

/// d(prediction) of one position: elementwise losses scaled by `scale`,
/// class losses by `*norm` and the label's weight.
template <typename L>
__global__ void
lossBackward(LossKind kind, bool fromLogits, ClassLabels cl, const float *x,
             const float *y, const L *labels, int64_t positions, int64_t c,
             int64_t inner, const float *dl, bool perElement, double scale,
             const double *norm, float *dx, unsigned long long *bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < positions; i += int64_t(gridDim.x) * blockDim.x) {
    double up = perElement ? dl[i] : dl[0];
    if (!isClassLoss(kind)) {
      dx[i] = static_cast<float>(elementGrad(kind, fromLogits, x[i], y[i]) *
                                 up * scale);
      continue;
    }
    const float *row = x + (i / inner) * c * inner + i % inner;
    float *drow = dx + (i / inner) * c * inner + i % inner;
    int64_t label = usableLabel(labels, i, c, cl, bad);
    if (label < 0 || kind == LossKind::NLL) {
      for (int64_t k = 0; k < c; ++k)
        drow[k * inner] = 0.0f;
      if (label >= 0)
        drow[label * inner] =
            static_cast<float>(-up * norm[0] * labelWeight(cl, label));
      continue;
    }
    up *= norm[0] * labelWeight(cl, label);
    float m, sum;
    softmaxStats(row, c, inner, m, sum);
    for (int64_t k = 0; k < c; ++k)
      drow[k * inner] = static_cast<float>(
          (expf(row[k * inner] - m) / sum - (k == label ? 1.0 : 0.0)) * up);
  }
}

class LossKernelBase : public Kernel {
public:
  /// `weightOperand`: the position of a class loss's weights among the
  /// operands, when the op has that many.
  LossKernelBase(const OpInfo &op, const std::string &kindName,
                 size_t weightOperand)
      : Kernel(op), kind(lossKindOf(op, kindName)),
        reduction(cpu::lossReductionOf(op)),
        fromLogits(op.getBool("from_logits", false)),
        weightOperand(weightOperand) {
    requireF32(op);
    labels.hasIgnore = op.has("ignore_index");
    labels.ignoreIndex = op.getInt("ignore_index", -100);
    DType labelType = op.inputTypes()[1].dtype;
    if (isClassLoss(kind) && labelType != DType::I64 && labelType != DType::I32)
      fail(op.describe(), ": the GPU column takes i64 or i32 labels, ", "got ",
           dtypeName(labelType));
    if (!isClassLoss(kind) && labelType != DType::F32)
      fail(op.describe(), ": labels must be f32, got ", dtypeName(labelType));
  }

protected:
  void split(const std::vector<Shape> &in) {
    const Shape &p = in[0];
    if (isClassLoss(kind)) {
      if (p.size() < 2)
        fail(info.describe(), ": class scores must have rank >= 2, got ",
             shapeString(p));
      Shape expected = p;
      expected.erase(expected.begin() + 1);
      if (in[1] != expected)
        fail(info.describe(), ": labels of shape ", shapeString(in[1]),
             ", expected ", shapeString(expected));
      c = p[1];
      inner = numElements(Shape(p.begin() + 2, p.end()));
      positions = p[0] * inner;
      if (in.size() > weightOperand && in[weightOperand] != Shape{c})
        fail(info.describe(), ": class weights of shape ",
             shapeString(in[weightOperand]), ", expected ", shapeString({c}));
    } else {
      if (in[1] != p)
        fail(info.describe(), ": labels of shape ", shapeString(in[1]),
             " do not match predictions ", shapeString(p));
      c = 1;
      inner = 1;
      positions = numElements(p);
    }
    if (!bad) {
      void *word = nullptr;
      check(cudaMalloc(&word, 2 * sizeof(unsigned long long)),
            "allocating a loss's label check");
      bad.reset(static_cast<unsigned long long *>(word), releaseDeviceMemory);
    }
    // Pairs of partial sums per position, then the mean's norm.
    if (!partial || partialCount < positions) {
      void *p = nullptr;
      check(cudaMalloc(&p, (2 * std::max<int64_t>(positions, 1) + 1) *
                               sizeof(double)),
            "allocating a loss's partial sums");
      partial.reset(static_cast<double *>(p), releaseDeviceMemory);
      partialCount = positions;
    }
  }

  /// The class weights of this run, if the op has them.
  ClassLabels classLabels(const std::vector<const Tensor *> &in) const {
    ClassLabels cl = labels;
    if (in.size() > weightOperand)
      cl.weights = in[weightOperand]->as<float>();
    return cl;
  }

  /// Where the mean's norm is kept, after the partial sums.
  double *norm() const {
    return partial.get() + 2 * std::max<int64_t>(partialCount, 1);
  }

  /// Arms the label check before a launch.
  void armCheck() {
    check(cudaMemsetAsync(bad.get(), 0xff, sizeof(unsigned long long),
                          gpuDevice().stream),
          "arming a loss's label check");
  }

  /// Waits for the launch and names the first label outside [0, C).
  void reportBadLabel(const Tensor &labelTensor) {
    unsigned long long first = 0;
    check(cudaMemcpyAsync(&first, bad.get(), sizeof(first),
                          cudaMemcpyDeviceToHost, gpuDevice().stream),
          "reading a loss's label check");
    check(cudaStreamSynchronize(gpuDevice().stream), "waiting for a loss");
    if (first == ~0ull)
      return;
    int64_t label = 0;
    const void *at = static_cast<const char *>(labelTensor.data()) +
                     first * dtypeSize(labelTensor.dtype());
    check(cudaMemcpy(&label, at, dtypeSize(labelTensor.dtype()),
                     cudaMemcpyDeviceToHost),
          "reading a bad label");
    if (labelTensor.dtype() == DType::I32)
      label = static_cast<int32_t>(label);
    fail(info.describe(), ": label ", label, " of sample ",
         static_cast<int64_t>(first) / inner, " is outside [0, ", c, ")");
  }

  LossKind kind;
  cpu::LossReduction reduction;
  bool fromLogits;
  size_t weightOperand;
  ClassLabels labels;
  int64_t c = 1, inner = 1, positions = 0;
  std::shared_ptr<unsigned long long> bad;
  std::shared_ptr<double> partial;
  int64_t partialCount = 0;
};

const char *lossKindOfOp(const std::string &name) {
  return name == "heterps.bce_loss"          ? "bce"
         : name == "heterps.mse_loss"        ? "mse"
         : name == "heterps.softmax_ce_loss" ? "softmax_ce"
                                             : "nll";
}

/// heterps.bce_loss, mse_loss, softmax_ce_loss, nll_loss and
/// weighted_nll_loss: operands (prediction, label[, class weights]).
class LossKernel : public LossKernelBase {
public:
  explicit LossKernel(const OpInfo &op)
      : LossKernelBase(op, lossKindOfOp(op.name()), 2) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    split(in);
    if (reduction != cpu::LossReduction::None)
      return {{}};
    return {isClassLoss(kind) ? in[1] : in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    float *out =
        reduction == cpu::LossReduction::None ? res[0]->as<float>() : nullptr;
    bool classes = isClassLoss(kind);
    ClassLabels cl = classLabels(in);
    if (classes)
      armCheck();
    if (positions) {
      const float *y = classes ? nullptr : in[1]->as<float>();
      if (classes && in[1]->dtype() == DType::I32)
        lossForward<<<blocksFor(positions), kBlock, 0, stream>>>(
            kind, fromLogits, cl, in[0]->as<float>(), y, in[1]->as<int32_t>(),
            positions, c, inner, out, partial.get(), bad.get());
      else
        lossForward<<<blocksFor(positions), kBlock, 0, stream>>>(
            kind, fromLogits, cl, in[0]->as<float>(), y, in[1]->as<int64_t>(),
            positions, c, inner, out, partial.get(), bad.get());
      checkLaunch(info);
    }
    if (!out) {
      sumPartials<<<1, kBlock, 0, stream>>>(
          partial.get(), positions, reduction == cpu::LossReduction::Mean,
          res[0]->as<float>(), nullptr);
      checkLaunch(info);
    }
    if (classes)
      reportBadLabel(*in[1]);
  }
};

/// heterps.loss_grad: operands (prediction, label, loss_grad[, class
/// weights]).
class LossGradKernel : public LossKernelBase {
public:
  explicit LossGradKernel(const OpInfo &op)
      : LossKernelBase(op, op.getString("kind"), 3) {}

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
    bool mean = reduction == cpu::LossReduction::Mean;
    double scale = mean ? 1.0 / static_cast<double>(positions) : 1.0;
    bool classes = isClassLoss(kind);
    ClassLabels cl = classLabels(in);
    const float *y = classes ? nullptr : in[1]->as<float>();
    auto launch = [&](auto *labelData) {
      if (classes) {
        armCheck();
        // A class loss's mean divides by the weights of the positions it
        // counts.
        classWeights<<<blocksFor(positions), kBlock, 0, stream>>>(
            labelData, positions, c, cl, partial.get(), bad.get());
        checkLaunch(info);
        sumPartials<<<1, kBlock, 0, stream>>>(partial.get(), positions, mean,
                                              nullptr, norm());
        checkLaunch(info);
      }
      lossBackward<<<blocksFor(positions), kBlock, 0, stream>>>(
          kind, fromLogits, cl, in[0]->as<float>(), y, labelData, positions, c,
          inner, in[2]->as<float>(), perElement, scale, norm(),
          res[0]->as<float>(), bad.get());
      checkLaunch(info);
    };
    if (classes && in[1]->dtype() == DType::I32)
      launch(in[1]->as<int32_t>());
    else
      launch(in[1]->as<int64_t>());
    if (classes)
      reportBadLabel(*in[1]);
  }
};

} // namespace

void cuda::registerLossKernels(KernelRegistry &r) {
  for (const char *name :
       {"heterps.bce_loss", "heterps.mse_loss", "heterps.softmax_ce_loss",
        "heterps.nll_loss", "heterps.weighted_nll_loss"})
    addKernel<LossKernel>(r, name);
  addKernel<LossGradKernel>(r, "heterps.loss_grad");
}
