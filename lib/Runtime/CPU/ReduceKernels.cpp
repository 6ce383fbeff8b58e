//===- ReduceKernels.cpp - Reductions and softmax, with gradients ---------===//
//
// f32 tensors go through oneDNN: reductions are reduction primitives (or
// matmuls with ones, see buildReduction), softmax and log-softmax and their
// gradients softmax/logsoftmax primitives, and the gradient of a sum or
// mean is a binary primitive that broadcasts the result gradient. The loops
// serve the other element types, the gradient of a max, for which oneDNN
// has no primitive, and the shapes for which it has only reference code.
// They read a reduction as a broadcast in reverse: the result with kept
// dimensions broadcasts to the input, so one strided walk over the input
// accumulates into (or, for a gradient, reads from) the result.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "LineWalks.h"
#include "PrimitiveCache.h"

#include "heterps/Runtime/BagOffsets.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class ReduceKernel : public Kernel {
public:
  explicit ReduceKernel(const OpInfo &op)
      : Kernel(op), kind(op.name().substr(strlen("heterps.reduce_"))),
        axes(op.getInts("axes")), keepdims(op.getBool("keepdims", true)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    plan.init(in[0], axes, keepdims, info);
    dnnl::algorithm alg = kind == "max"    ? dnnl::algorithm::reduction_max
                          : kind == "mean" ? dnnl::algorithm::reduction_mean
                                           : dnnl::algorithm::reduction_sum;
    // min, prod and l2 are loops (rare, and exact in double).
    bool primitive = kind == "max" || kind == "mean" || kind == "sum";
    prim =
        primitive && planIsF32(info)
            ? cache.get(in,
                        [&](BoundPrimitive &p) {
                          return buildReduction(alg, plan.input, plan.kept, p);
                        })
            : nullptr;
    return {plan.result};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (prim && allF32(in, res)) {
      prim->execute(info, in, res);
      return;
    }
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>();
      T *y = res[0]->as<T>();
      int64_t n = res[0]->numElements();
      T init = kind == "max"    ? -std::numeric_limits<T>::infinity()
               : kind == "min"  ? std::numeric_limits<T>::infinity()
               : kind == "prod" ? T(1)
                                : T(0);
      std::fill(y, y + n, init);
      auto each = [&](auto combine) {
        forEachBroadcast(
            plan.input, plan.own, plan.toKept,
            [&](int64_t, int64_t i, int64_t o) { y[o] = combine(y[o], x[i]); });
      };
      if (kind == "max")
        each([](T a, T v) { return std::max(a, v); });
      else if (kind == "min")
        each([](T a, T v) { return std::min(a, v); });
      else if (kind == "prod")
        each([](T a, T v) { return a * v; });
      else if (kind == "l2")
        each([](T a, T v) { return a + v * v; });
      else
        each([](T a, T v) { return a + v; });
      if (kind == "mean" && plan.count)
        for (int64_t i = 0; i < n; ++i)
          y[i] /= static_cast<T>(plan.count);
      if (kind == "l2")
        for (int64_t i = 0; i < n; ++i)
          y[i] = std::sqrt(y[i]);
    });
  }

private:
  std::string kind;
  std::vector<int64_t> axes;
  bool keepdims;
  ReducePlan plan;
  PrimitiveCache cache;
  BoundPrimitive *prim = nullptr;
};

/// heterps.reduce_grad: operands (input, result, result_grad).
class ReduceGradKernel : public Kernel {
public:
  explicit ReduceGradKernel(const OpInfo &op)
      : Kernel(op), kind(op.getString("kind")), axes(op.getInts("axes")),
        keepdims(op.getBool("keepdims", true)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    plan.init(in[0], axes, keepdims, info);
    plan.checkResults(in, info);
    prim = (kind == "sum" || kind == "mean") && planIsF32(info)
               ? cache.get(in, [&](BoundPrimitive &p) { return build(p); })
               : nullptr;
    if (kind == "prod") {
      zeros.assign(numElements(plan.kept), 0);
      others.resize(numElements(plan.kept));
    }
    if (kind == "max" || kind == "min")
      taken.resize(numElements(plan.kept));
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (prim && allF32(in, res)) {
      prim->execute(info, in, res);
      return;
    }
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>(), *y = in[1]->as<T>(), *dy = in[2]->as<T>();
      T *dx = res[0]->as<T>();
      T scale = kind == "mean" && plan.count ? T(1) / static_cast<T>(plan.count)
                                             : T(1);
      auto each = [&](auto f) {
        forEachBroadcast(plan.input, plan.own, plan.toKept,
                         [&](int64_t, int64_t i, int64_t o) { f(i, o); });
      };
      if (kind == "max" || kind == "min") {
        // The first element equal to the extreme gets the gradient, as
        // PyTorch's max(dim) and EmbeddingBag's max mode give it.
        std::fill(taken.begin(), taken.end(), 0);
        each([&](int64_t i, int64_t o) {
          bool first = x[i] == y[o] && !taken[o];
          taken[o] |= first;
          dx[i] = first ? dy[o] : T(0);
        });
      } else if (kind == "l2") {
        each([&](int64_t i, int64_t o) {
          dx[i] = y[o] != T(0) ? dy[o] * x[i] / y[o] : T(0);
        });
      } else if (kind == "prod") {
        // d/dx_i is the product of the other elements: y / x_i without
        // zeros; with one zero, only that element gets the product of the
        // rest; with two or more, none.
        std::fill(zeros.begin(), zeros.end(), 0);
        std::fill(others.begin(), others.end(), 1.0);
        each([&](int64_t i, int64_t o) {
          if (x[i] == T(0))
            ++zeros[o];
          else
            others[o] *= static_cast<double>(x[i]);
        });
        each([&](int64_t i, int64_t o) {
          double g = zeros[o] == 0   ? others[o] / static_cast<double>(x[i])
                     : zeros[o] == 1 ? (x[i] == T(0) ? others[o] : 0.0)
                                     : 0.0;
          dx[i] = dy[o] * static_cast<T>(g);
        });
      } else {
        each([&](int64_t i, int64_t o) { dx[i] = dy[o] * scale; });
      }
    });
  }

private:
  /// dx = dy broadcast to the input (times 1/count for a mean). oneDNN has
  /// no broadcasting copy (a reorder wants equal dimensions), but its binary
  /// primitive broadcasts src1: dx = zeros + dy, scaled by a post-op.
  bool build(BoundPrimitive &p) {
    dnnl::memory::desc dx = plainDesc(plan.input), dy = plainDesc(plan.kept);
    dnnl::primitive_attr attr = scratchpadAttr();
    if (kind == "mean") {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear,
                         1.0f / static_cast<float>(plan.count), 0.0f);
      attr.set_post_ops(ops);
    }
    dnnl::binary::primitive_desc pd(
        dnnl::binary::desc(dnnl::algorithm::binary_add, dx, dy, dx), attr,
        cpuDevice().engine);
    p.constant(DNNL_ARG_SRC_0, dx, 0.0f);
    p.input(DNNL_ARG_SRC_1, 2, dy);
    p.output(DNNL_ARG_DST, 0, dx);
    p.set(dnnl::binary(pd), pd);
    return true;
  }

  std::string kind;
  std::vector<int64_t> axes;
  bool keepdims;
  ReducePlan plan;
  PrimitiveCache cache;
  BoundPrimitive *prim = nullptr;
  // prod: per kept position, its zero count and the product of the rest.
  std::vector<int64_t> zeros;
  std::vector<double> others;
  /// Per kept position: whether its extreme has had the gradient.
  std::vector<char> taken;
};

/// heterps.cumsum along an axis (forward or reversed, inclusive or not).
class CumSumKernel : public Kernel {
public:
  explicit CumSumKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis")),
        exclusive(op.getBool("exclusive", false)),
        reverse(op.getBool("reverse", false)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    int64_t rank = static_cast<int64_t>(in[0].size());
    split.init(in[0], normalizeAxis(axisAttr, rank, info));
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    Lines lines{split.outer, split.dim, split.inner};
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>();
      T *y = res[0]->as<T>();
      for (int64_t l = 0; l < lines.count(); ++l)
        cumulativeSumOfLine(x + lines.base(l), y + lines.base(l), lines.dim,
                            lines.inner, exclusive, reverse);
    });
  }

private:
  int64_t axisAttr;
  bool exclusive, reverse;
  AxisSplit split;
};

/// heterps.arg_extreme: the index of the maximum or minimum along `axis`.
class ArgExtremeKernel : public Kernel {
public:
  explicit ArgExtremeKernel(const OpInfo &op) : Kernel(op), shape(op) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {shape.compute(in[0], info)};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t *y = res[0]->as<int64_t>();
    const AxisSplit &split = shape.split;
    Lines lines{split.outer, split.dim, split.inner};
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>();
      for (int64_t l = 0; l < lines.count(); ++l)
        y[l] = argExtremeOfLine(x + lines.base(l), lines.dim, lines.inner,
                                shape.isMax, shape.last);
    });
  }

private:
  ArgExtremeShape shape;
};

/// heterps.top_k_indices: the positions of the k largest (or smallest)
/// elements along `axis`, in topKPrecedes' order.
class TopKIndicesKernel : public Kernel {
public:
  explicit TopKIndicesKernel(const OpInfo &op) : Kernel(op), shape(op) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = shape.compute(in[0], info);
    order.resize(shape.split.dim);
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t *y = res[0]->as<int64_t>();
    const AxisSplit &split = shape.split;
    int64_t k = shape.k;
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>();
      for (int64_t o = 0; o < split.outer; ++o)
        for (int64_t i = 0; i < split.inner; ++i) {
          const T *p = x + o * split.dim * split.inner + i;
          auto before = [&](int64_t a, int64_t b) {
            return topKPrecedes(p[a * split.inner], p[b * split.inner], a, b,
                                shape.largest);
          };
          std::iota(order.begin(), order.end(), int64_t(0));
          std::partial_sort(order.begin(), order.begin() + k, order.end(),
                            before);
          for (int64_t j = 0; j < k; ++j)
            y[(o * k + j) * split.inner + i] = order[j];
        }
    });
  }

private:
  TopKShape shape;
  std::vector<int64_t> order;
};

/// The softmax (or log-softmax) primitive along `axis` of a tensor of
/// `shape`: the forward from input 0 to output 0, or the backward over the
/// operands (result, result_grad) of heterps.softmax_grad. Both oneDNN
/// backward primitives take the forward's result, as the op does. oneDNN's
/// log-softmax computes its log with the approximation of eltwise_log:
/// within 3.5e-6 of the exact result (the loop within 3e-7), well inside
/// the tolerances of a loss or of ONNX's tests.
bool buildSoftmax(bool isLog, bool gradient, const Shape &shape, int axis,
                  BoundPrimitive &p) {
  const dnnl::engine &engine = cpuDevice().engine;
  dnnl::memory::desc desc = plainDesc(shape);
  auto prop = gradient ? dnnl::prop_kind::forward_training
                       : dnnl::prop_kind::forward_inference;
  if (isLog) {
    dnnl::logsoftmax_forward::primitive_desc forward(
        dnnl::logsoftmax_forward::desc(prop, desc, axis), scratchpadAttr(),
        engine);
    if (!gradient) {
      p.input(DNNL_ARG_SRC, 0, desc);
      p.output(DNNL_ARG_DST, 0, desc);
      p.set(dnnl::logsoftmax_forward(forward), forward);
      return true;
    }
    dnnl::logsoftmax_backward::primitive_desc pd(
        dnnl::logsoftmax_backward::desc(desc, desc, axis), scratchpadAttr(),
        engine, forward);
    p.input(DNNL_ARG_DST, 0, desc);
    p.input(DNNL_ARG_DIFF_DST, 1, desc);
    p.output(DNNL_ARG_DIFF_SRC, 0, desc);
    p.set(dnnl::logsoftmax_backward(pd), pd);
    return true;
  }
  dnnl::softmax_forward::primitive_desc forward(
      dnnl::softmax_forward::desc(prop, desc, axis), scratchpadAttr(), engine);
  if (!gradient) {
    p.input(DNNL_ARG_SRC, 0, desc);
    p.output(DNNL_ARG_DST, 0, desc);
    p.set(dnnl::softmax_forward(forward), forward);
    return true;
  }
  dnnl::softmax_backward::primitive_desc pd(
      dnnl::softmax_backward::desc(desc, desc, axis), scratchpadAttr(), engine,
      forward);
  p.input(DNNL_ARG_DST, 0, desc);
  p.input(DNNL_ARG_DIFF_DST, 1, desc);
  p.output(DNNL_ARG_DIFF_SRC, 0, desc);
  p.set(dnnl::softmax_backward(pd), pd);
  return true;
}

/// softmax and log_softmax, forward and backward: the axis, its split
/// and the oneDNN primitive (f32) are the same; the loops (other dtypes,
/// or shapes oneDNN refuses) are each kernel's.
class SoftmaxKernelBase : public Kernel {
public:
  SoftmaxKernelBase(const OpInfo &op, bool isLog, bool backward)
      : Kernel(op), axisAttr(op.getInt("axis", -1)), isLog(isLog),
        backward(backward) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    requireSameShapes(in, info);
    int axis = static_cast<int>(
        normalizeAxis(axisAttr, static_cast<int64_t>(in[0].size()), info));
    split.init(in[0], axis);
    prim = planIsF32(info) ? cache.get(in,
                                       [&](BoundPrimitive &p) {
                                         return buildSoftmax(isLog, backward,
                                                             in[0], axis, p);
                                       })
                           : nullptr;
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (prim && allF32(in, res)) {
      prim->execute(info, in, res);
      return;
    }
    runLoops(in, res);
  }

protected:
  virtual void runLoops(const std::vector<const Tensor *> &in,
                        const std::vector<Tensor *> &res) = 0;

  int64_t axisAttr;
  bool isLog, backward;
  AxisSplit split;
  PrimitiveCache cache;
  BoundPrimitive *prim = nullptr;
};

class SoftmaxKernel : public SoftmaxKernelBase {
public:
  explicit SoftmaxKernel(const OpInfo &op)
      : SoftmaxKernelBase(op, op.name() == "heterps.log_softmax", false) {}

private:
  void runLoops(const std::vector<const Tensor *> &in,
                const std::vector<Tensor *> &res) override {
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
};

/// heterps.softmax_grad: operands (result, result_grad).
class SoftmaxGradKernel : public SoftmaxKernelBase {
public:
  explicit SoftmaxGradKernel(const OpInfo &op)
      : SoftmaxKernelBase(op, op.getBool("log", false), true) {}

private:
  void runLoops(const std::vector<const Tensor *> &in,
                const std::vector<Tensor *> &res) override {
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
};

/// heterps.segment_reduce and segment_reduce_grad: sums, means or maxima
/// of runs of rows that start at the offsets (nn.EmbeddingBag's bags).
class SegmentReduceKernel : public Kernel {
public:
  explicit SegmentReduceKernel(const OpInfo &op)
      : Kernel(op), isGrad(op.name() == "heterps.segment_reduce_grad"),
        shape(op) {
    isMax = shape.kind == "max";
    isMean = shape.kind == "mean";
  }
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = shape.output(info, in, isGrad);
    width = shape.width;
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t rows = in[0]->dim(0);
    readBagOffsets(*in[1], rows, info.describe(), starts);
    dispatchFloat(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      if (isGrad)
        backward(in[0]->as<T>(), in[2]->as<T>(), res[0]->as<T>(), rows);
      else
        forward(in[0]->as<T>(), res[0]->as<T>(), rows);
    });
  }

private:
  int64_t endOf(size_t bag, int64_t rows) const {
    return bag + 1 < starts.size() ? starts[bag + 1] : rows;
  }
  template <typename T> void forward(const T *x, T *y, int64_t rows) {
    for (size_t b = 0; b < starts.size(); ++b) {
      T *out = y + b * width;
      int64_t begin = starts[b], end = endOf(b, rows);
      // An empty bag is zeros, whatever the kind.
      if (begin == end) {
        std::fill_n(out, width, T(0));
        continue;
      }
      std::copy_n(x + begin * width, width, out);
      for (int64_t r = begin + 1; r < end; ++r) {
        const T *row = x + r * width;
        if (isMax)
          for (int64_t k = 0; k < width; ++k)
            out[k] = std::max(out[k], row[k]);
        else
          for (int64_t k = 0; k < width; ++k)
            out[k] += row[k];
      }
      if (isMean)
        for (int64_t k = 0; k < width; ++k)
          out[k] /= static_cast<T>(end - begin);
    }
  }
  template <typename T>
  void backward(const T *x, const T *dy, T *dx, int64_t rows) {
    if (isMax)
      std::fill_n(dx, rows * width, T(0));
    for (size_t b = 0; b < starts.size(); ++b) {
      const T *g = dy + b * width;
      int64_t begin = starts[b], end = endOf(b, rows);
      if (isMax) {
        // The first row of the run that holds the maximum takes it all.
        for (int64_t k = 0; k < width; ++k) {
          int64_t best = begin;
          for (int64_t r = begin + 1; r < end; ++r)
            if (x[r * width + k] > x[best * width + k])
              best = r;
          if (begin < end)
            dx[best * width + k] = g[k];
        }
        continue;
      }
      T scale = isMean && end > begin ? T(1) / T(end - begin) : T(1);
      for (int64_t r = begin; r < end; ++r)
        for (int64_t k = 0; k < width; ++k)
          dx[r * width + k] = g[k] * scale;
    }
  }

  bool isGrad, isMax = false, isMean = false;
  SegmentShape shape;
  int64_t width = 1;
  std::vector<int64_t> starts;
};

} // namespace

void cpu::registerReduceKernels(KernelRegistry &r) {
  addKernel<ReduceKernel>(r, "heterps.reduce_sum");
  addKernel<ReduceKernel>(r, "heterps.reduce_mean");
  addKernel<ReduceKernel>(r, "heterps.reduce_max");
  addKernel<ReduceKernel>(r, "heterps.reduce_min");
  addKernel<ReduceKernel>(r, "heterps.reduce_prod");
  addKernel<ReduceKernel>(r, "heterps.reduce_l2");
  addKernel<ArgExtremeKernel>(r, "heterps.arg_extreme");
  addKernel<TopKIndicesKernel>(r, "heterps.top_k_indices");
  addKernel<CumSumKernel>(r, "heterps.cumsum");
  addKernel<ReduceGradKernel>(r, "heterps.reduce_grad");
  addKernel<SegmentReduceKernel>(r, "heterps.segment_reduce");
  addKernel<SegmentReduceKernel>(r, "heterps.segment_reduce_grad");
  addKernel<SoftmaxKernel>(r, "heterps.softmax");
  addKernel<SoftmaxKernel>(r, "heterps.log_softmax");
  addKernel<SoftmaxGradKernel>(r, "heterps.softmax_grad");
}
