//===- ReduceKernels.cpp - Reductions and softmax, with gradients ---------===//
//
// A reduction is read as a broadcast in reverse: the result with kept
// dimensions broadcasts to the input, so one strided walk over the input
// accumulates into (or, for a gradient, reads from) the result.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct ReducePlan {
  Shape input, kept, result;
  std::vector<int64_t> own, toKept;
  int64_t count = 1;

  void init(const Shape &in, std::vector<int64_t> axes, bool keepdims,
            const OpInfo &op) {
    input = in;
    int64_t rank = static_cast<int64_t>(in.size());
    std::vector<bool> reduced(rank, axes.empty());
    for (int64_t a : axes)
      reduced[normalizeAxis(a, rank, op)] = true;
    kept = in;
    result.clear();
    count = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d]) {
        count *= in[d];
        kept[d] = 1;
        if (keepdims)
          result.push_back(1);
      } else {
        result.push_back(in[d]);
      }
    }
    own = stridesOf(in);
    toKept = broadcastStrides(kept, in);
  }
};

class ReduceKernel : public Kernel {
public:
  explicit ReduceKernel(const OpInfo &op)
      : Kernel(op), kind(op.name().substr(strlen("heterps.reduce_"))),
        axes(op.getInts("axes")), keepdims(op.getBool("keepdims", true)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    plan.init(in[0], axes, keepdims, info);
    return {plan.result};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>();
      T *y = res[0]->as<T>();
      int64_t n = res[0]->numElements();
      bool isMax = kind == "max";
      std::fill(y, y + n, isMax ? -std::numeric_limits<T>::infinity() : T(0));
      forEachBroadcast(plan.input, plan.own, plan.toKept,
                       [&](int64_t, int64_t i, int64_t o) {
                         if (isMax)
                           y[o] = std::max(y[o], x[i]);
                         else
                           y[o] += x[i];
                       });
      if (kind == "mean" && plan.count)
        for (int64_t i = 0; i < n; ++i)
          y[i] /= static_cast<T>(plan.count);
    });
  }

private:
  std::string kind;
  std::vector<int64_t> axes;
  bool keepdims;
  ReducePlan plan;
};

/// heterps.reduce_grad: operands (input, result, result_grad).
class ReduceGradKernel : public Kernel {
public:
  explicit ReduceGradKernel(const OpInfo &op)
      : Kernel(op), kind(op.getString("kind")), axes(op.getInts("axes")),
        keepdims(op.getBool("keepdims", true)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    plan.init(in[0], axes, keepdims, info);
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>(), *y = in[1]->as<T>(), *dy = in[2]->as<T>();
      T *dx = res[0]->as<T>();
      T scale = kind == "mean" && plan.count ? T(1) / static_cast<T>(plan.count)
                                             : T(1);
      bool isMax = kind == "max";
      forEachBroadcast(plan.input, plan.own, plan.toKept,
                       [&](int64_t, int64_t i, int64_t o) {
                         if (isMax)
                           dx[i] = x[i] == y[o] ? dy[o] : T(0);
                         else
                           dx[i] = dy[o] * scale;
                       });
    });
  }

private:
  std::string kind;
  std::vector<int64_t> axes;
  bool keepdims;
  ReducePlan plan;
};

struct AxisSplit {
  int64_t outer = 1, dim = 1, inner = 1;
  void init(const Shape &s, int64_t axis) {
    outer = numElements(Shape(s.begin(), s.begin() + axis));
    dim = s.empty() ? 1 : s[axis];
    inner = numElements(Shape(s.begin() + axis + 1, s.end()));
  }
};

class SoftmaxKernel : public Kernel {
public:
  explicit SoftmaxKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis", -1)),
        isLog(op.name() == "heterps.log_softmax") {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    split.init(in[0], normalizeAxis(axisAttr,
                                    static_cast<int64_t>(in[0].size()), info));
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>();
      T *y = res[0]->as<T>();
      int64_t D = split.dim, I = split.inner;
      for (int64_t o = 0; o < split.outer; ++o)
        for (int64_t j = 0; j < I; ++j) {
          const T *xs = x + o * D * I + j;
          T *ys = y + o * D * I + j;
          T m = -std::numeric_limits<T>::infinity();
          for (int64_t d = 0; d < D; ++d)
            m = std::max(m, xs[d * I]);
          T sum = 0;
          for (int64_t d = 0; d < D; ++d)
            sum += std::exp(xs[d * I] - m);
          if (isLog) {
            T lse = m + std::log(sum);
            for (int64_t d = 0; d < D; ++d)
              ys[d * I] = xs[d * I] - lse;
          } else {
            for (int64_t d = 0; d < D; ++d)
              ys[d * I] = std::exp(xs[d * I] - m) / sum;
          }
        }
    });
  }

private:
  int64_t axisAttr;
  bool isLog;
  AxisSplit split;
};

/// heterps.softmax_grad: operands (result, result_grad).
class SoftmaxGradKernel : public Kernel {
public:
  explicit SoftmaxGradKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis", -1)),
        isLog(op.getBool("log", false)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    split.init(in[0], normalizeAxis(axisAttr,
                                    static_cast<int64_t>(in[0].size()), info));
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *y = in[0]->as<T>(), *dy = in[1]->as<T>();
      T *dx = res[0]->as<T>();
      int64_t D = split.dim, I = split.inner;
      for (int64_t o = 0; o < split.outer; ++o)
        for (int64_t j = 0; j < I; ++j) {
          int64_t base = o * D * I + j;
          T acc = 0;
          for (int64_t d = 0; d < D; ++d)
            acc +=
                isLog ? dy[base + d * I] : dy[base + d * I] * y[base + d * I];
          for (int64_t d = 0; d < D; ++d) {
            int64_t k = base + d * I;
            dx[k] = isLog ? dy[k] - std::exp(y[k]) * acc : y[k] * (dy[k] - acc);
          }
        }
    });
  }

private:
  int64_t axisAttr;
  bool isLog;
  AxisSplit split;
};

} // namespace

void cpu::registerReduceKernels(KernelRegistry &r) {
  addKernel<ReduceKernel>(r, "heterps.reduce_sum");
  addKernel<ReduceKernel>(r, "heterps.reduce_mean");
  addKernel<ReduceKernel>(r, "heterps.reduce_max");
  addKernel<ReduceGradKernel>(r, "heterps.reduce_grad");
  addKernel<SoftmaxKernel>(r, "heterps.softmax");
  addKernel<SoftmaxKernel>(r, "heterps.log_softmax");
  addKernel<SoftmaxGradKernel>(r, "heterps.softmax_grad");
}
