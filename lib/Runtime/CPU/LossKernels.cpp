//===- LossKernels.cpp - Losses and their gradients -----------------------===//
//
// The formulas follow PyTorch's (BCELoss clamps log at -100, its gradient
// divides by max(p (1 - p), 1e-12)), so that a training step matches a
// PyTorch step on the same model.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

void labelsAsInt(const Tensor &t, const OpInfo &op, std::vector<int64_t> &out) {
  out.resize(t.numElements());
  dispatchNumeric(t.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T *p = t.as<T>();
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<int64_t>(p[i]);
  });
}

/// Which loss, with its attributes; shared by the forward and the gradient.
struct LossSpec {
  std::string kind;
  LossReduction reduction;
  bool fromLogits;
  bool hasIgnore;
  int64_t ignoreIndex;

  LossSpec(const OpInfo &op, std::string k)
      : kind(std::move(k)), reduction(lossReductionOf(op)),
        fromLogits(op.getBool("from_logits", false)),
        hasIgnore(op.has("ignore_index")),
        ignoreIndex(op.getInt("ignore_index", -100)) {
    // A kind the kernels do not know would be computed as bce.
    if (kind != "bce" && kind != "mse" && kind != "softmax_ce" &&
        kind != "nll" && kind != "weighted_nll")
      fail(op.describe(), ": unknown loss kind '", kind,
           "'; expected bce, mse, softmax_ce, nll or weighted_nll");
  }

  bool isClassLoss() const {
    return kind == "softmax_ce" || kind == "nll" || kind == "weighted_nll";
  }
};

/// Per-element losses (elementwise kinds) or per-position losses (class
/// kinds) and their weights; `grad` is d(element loss)/d(prediction).
struct LossEval {
  std::vector<double> loss, weight;
};

class LossKernelBase : public Kernel {
public:
  LossKernelBase(const OpInfo &op, std::string kind)
      : Kernel(op), spec(op, std::move(kind)) {}

protected:
  /// Splits the prediction of a class loss into N x C x inner.
  void classSplit(const Shape &p, int64_t &n, int64_t &c, int64_t &inner) {
    if (p.size() < 2)
      fail(info.describe(), ": class scores must have rank >= 2, got ",
           shapeString(p));
    n = p[0];
    c = p[1];
    inner = numElements(Shape(p.begin() + 2, p.end()));
  }

  void checkLabels(const Shape &p, const Shape &label) {
    if (spec.isClassLoss()) {
      Shape expected = p;
      expected.erase(expected.begin() + 1);
      if (label != expected)
        fail(info.describe(), ": labels of shape ", shapeString(label),
             ", expected ", shapeString(expected));
    } else if (label != p) {
      fail(info.describe(), ": labels of shape ", shapeString(label),
           " do not match predictions ", shapeString(p));
    }
  }

  LossSpec spec;
  // Per-step scratch whose capacity is kept between steps.
  std::vector<int64_t> labels;
  std::vector<double> loss, weight;
};

class LossKernel : public LossKernelBase {
public:
  LossKernel(const OpInfo &op)
      : LossKernelBase(op,
                       op.name() == "heterps.bce_loss"          ? "bce"
                       : op.name() == "heterps.mse_loss"        ? "mse"
                       : op.name() == "heterps.softmax_ce_loss" ? "softmax_ce"
                       : op.name() == "heterps.nll_loss"        ? "nll"
                                                         : "weighted_nll") {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    checkLabels(in[0], in[1]);
    if (spec.reduction != LossReduction::None)
      return {{}};
    if (spec.isClassLoss())
      return {in[1]};
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const Tensor &p = *in[0];
    if (p.dtype() != DType::F32)
      fail(info.describe(), ": the CPU loss takes f32 predictions");
    const float *x = p.as<float>();
    float *out = res[0]->as<float>();
    if (!spec.isClassLoss()) {
      if (in[1]->dtype() != DType::F32)
        fail(info.describe(), ": labels must be f32, got ",
             dtypeName(in[1]->dtype()));
      const float *y = in[1]->as<float>();
      int64_t n = p.numElements();
      loss.resize(n);
      weight.assign(n, 1.0);
      for (int64_t i = 0; i < n; ++i) {
        double xi = x[i], yi = y[i];
        if (spec.kind == "mse") {
          loss[i] = (xi - yi) * (xi - yi);
        } else if (spec.fromLogits) {
          loss[i] =
              std::max(xi, 0.0) - xi * yi + std::log1p(std::exp(-std::abs(xi)));
        } else {
          double lp = std::max(std::log(xi), -100.0);
          double l1p = std::max(std::log(1.0 - xi), -100.0);
          loss[i] = -(yi * lp + (1.0 - yi) * l1p);
        }
      }
    } else {
      int64_t n, c, inner;
      classSplit(p.shape(), n, c, inner);
      labelsAsInt(*in[1], info, labels);
      const float *w = in.size() > 2 ? in[2]->as<float>() : nullptr;
      loss.assign(n * inner, 0.0);
      weight.assign(n * inner, 0.0);
      bool softmax = spec.kind == "softmax_ce";
      for (int64_t s = 0; s < n; ++s)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t pos = s * inner + j;
          int64_t label = labels[pos];
          if (spec.hasIgnore && label == spec.ignoreIndex)
            continue;
          if (label < 0 || label >= c)
            fail(info.describe(), ": label ", label, " of sample ", s,
                 " is outside [0, ", c, ")");
          const float *row = x + s * c * inner + j;
          double value;
          if (softmax) {
            float m = row[0];
            for (int64_t k = 1; k < c; ++k)
              m = std::max(m, row[k * inner]);
            float sum = 0;
            for (int64_t k = 0; k < c; ++k)
              sum += std::exp(row[k * inner] - m);
            value = m + std::log(static_cast<double>(sum)) - row[label * inner];
          } else {
            value = -row[label * inner];
          }
          double wt = w ? w[label] : 1.0;
          loss[pos] = value * wt;
          weight[pos] = wt;
        }
    }
    if (spec.reduction == LossReduction::None) {
      for (size_t i = 0; i < loss.size(); ++i)
        out[i] = static_cast<float>(loss[i]);
      return;
    }
    double sum = 0, wsum = 0;
    for (size_t i = 0; i < loss.size(); ++i) {
      sum += loss[i];
      wsum += weight[i];
    }
    out[0] = static_cast<float>(spec.reduction == LossReduction::Sum
                                    ? sum
                                    : (wsum > 0 ? sum / wsum : 0.0));
  }
};

/// heterps.loss_grad: operands (prediction, label, loss_grad[, weight]).
class LossGradKernel : public LossKernelBase {
public:
  LossGradKernel(const OpInfo &op) : LossKernelBase(op, op.getString("kind")) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    checkLabels(in[0], in[1]);
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const Tensor &p = *in[0];
    const float *x = p.as<float>();
    const float *dl = in[2]->as<float>();
    bool perElement = spec.reduction == LossReduction::None;
    float *dx = res[0]->as<float>();
    if (!spec.isClassLoss()) {
      const float *y = in[1]->as<float>();
      int64_t n = p.numElements();
      double scale = spec.reduction == LossReduction::Mean ? 1.0 / n : 1.0;
      for (int64_t i = 0; i < n; ++i) {
        double xi = x[i], yi = y[i], g;
        if (spec.kind == "mse")
          g = 2.0 * (xi - yi);
        else if (spec.fromLogits)
          g = 1.0 / (1.0 + std::exp(-xi)) - yi;
        else
          g = (xi - yi) / std::max((1.0 - xi) * xi, 1e-12);
        dx[i] = static_cast<float>(g * scale * (perElement ? dl[i] : dl[0]));
      }
      return;
    }
    int64_t n, c, inner;
    classSplit(p.shape(), n, c, inner);
    labelsAsInt(*in[1], info, labels);
    const float *w = in.size() > 3 ? in[3]->as<float>() : nullptr;
    double wsum = 0;
    for (int64_t pos = 0; pos < n * inner; ++pos) {
      int64_t label = labels[pos];
      if (spec.hasIgnore && label == spec.ignoreIndex)
        continue;
      if (label < 0 || label >= c)
        fail(info.describe(), ": label ", label, " is outside [0, ", c, ")");
      wsum += w ? w[label] : 1.0;
    }
    std::fill(dx, dx + p.numElements(), 0.0f);
    bool softmax = spec.kind == "softmax_ce";
    double norm =
        spec.reduction == LossReduction::Mean && wsum > 0 ? 1.0 / wsum : 1.0;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t pos = s * inner + j;
        int64_t label = labels[pos];
        if (spec.hasIgnore && label == spec.ignoreIndex)
          continue;
        double up =
            (perElement ? dl[pos] : dl[0]) * norm * (w ? w[label] : 1.0);
        const float *row = x + s * c * inner + j;
        float *drow = dx + s * c * inner + j;
        if (softmax) {
          // The row's exponentials go into drow, then become the gradient.
          float m = row[0];
          for (int64_t k = 1; k < c; ++k)
            m = std::max(m, row[k * inner]);
          float sum = 0;
          for (int64_t k = 0; k < c; ++k) {
            float e = std::exp(row[k * inner] - m);
            drow[k * inner] = e;
            sum += e;
          }
          float scale = static_cast<float>(up) / sum;
          for (int64_t k = 0; k < c; ++k)
            drow[k * inner] *= scale;
          drow[label * inner] -= static_cast<float>(up);
        } else {
          drow[label * inner] = static_cast<float>(-up);
        }
      }
  }
};

} // namespace

void cpu::registerLossKernels(KernelRegistry &r) {
  for (const char *name :
       {"heterps.bce_loss", "heterps.mse_loss", "heterps.softmax_ce_loss",
        "heterps.nll_loss", "heterps.weighted_nll_loss"})
    addKernel<LossKernel>(r, name);
  addKernel<LossGradKernel>(r, "heterps.loss_grad");
}
