//===- LogicKernels.cpp - Comparisons, boolean logic and where ------------===//
//
// The masks of attention models and the index arithmetic that exporters
// write with Equal, Less, Not, And and Where, when they act on data (the
// importer folds those it can compute while importing). Booleans are one
// byte each; the operands broadcast as NumPy's do.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// Two broadcast operands, their strides computed once per shape.
class BroadcastKernel : public Kernel {
public:
  using Kernel::Kernel;
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    out = broadcastShapes(in[0], in[1], info);
    sa = broadcastStrides(in[0], out);
    sb = broadcastStrides(in[1], out);
    return {out};
  }

protected:
  Shape out;
  std::vector<int64_t> sa, sb;
};

class CompareKernel : public BroadcastKernel {
public:
  explicit CompareKernel(const OpInfo &op)
      : BroadcastKernel(op), kind(op.getString("kind")) {
    if (kind != "eq" && kind != "lt" && kind != "gt" && kind != "le" &&
        kind != "ge")
      fail(info.describe(), ": unknown kind '", kind, "'");
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    bool *z = res[0]->as<bool>();
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>(), *y = in[1]->as<T>();
      auto apply = [&](auto cmp) {
        forEachBroadcast(out, sa, sb, [&](int64_t o, int64_t a, int64_t b) {
          z[o] = cmp(x[a], y[b]);
        });
      };
      if (kind == "eq")
        apply([](T a, T b) { return a == b; });
      else if (kind == "lt")
        apply([](T a, T b) { return a < b; });
      else if (kind == "gt")
        apply([](T a, T b) { return a > b; });
      else if (kind == "le")
        apply([](T a, T b) { return a <= b; });
      else
        apply([](T a, T b) { return a >= b; });
    });
  }

private:
  std::string kind;
};

class LogicalKernel : public BroadcastKernel {
public:
  explicit LogicalKernel(const OpInfo &op) : BroadcastKernel(op) {
    std::string kind = op.getString("kind");
    if (kind == "and")
      which = And;
    else if (kind == "or")
      which = Or;
    else if (kind == "xor")
      which = Xor;
    else
      fail(info.describe(), ": unknown kind '", kind, "'");
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const bool *x = in[0]->as<bool>(), *y = in[1]->as<bool>();
    bool *z = res[0]->as<bool>();
    forEachBroadcast(out, sa, sb, [&](int64_t o, int64_t a, int64_t b) {
      z[o] = which == And  ? (x[a] && y[b])
             : which == Or ? (x[a] || y[b])
                           : (x[a] != y[b]);
    });
  }

private:
  enum Which { And, Or, Xor } which = And;
};

class NotKernel : public Kernel {
public:
  using Kernel::Kernel;
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const bool *x = in[0]->as<bool>();
    bool *z = res[0]->as<bool>();
    for (int64_t i = 0, n = in[0]->numElements(); i < n; ++i)
      z[i] = !x[i];
  }
};

/// heterps.where: three broadcast operands.
class WhereKernel : public Kernel {
public:
  using Kernel::Kernel;
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    out = broadcastShapes(broadcastShapes(in[0], in[1], info), in[2], info);
    strides = {broadcastStrides(in[0], out), broadcastStrides(in[1], out),
               broadcastStrides(in[2], out)};
    outStrides = stridesOf(out);
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const bool *c = in[0]->as<bool>();
    int64_t n = numElements(out), rank = static_cast<int64_t>(out.size());
    dispatchNumeric(in[1]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[1]->as<T>(), *y = in[2]->as<T>();
      T *z = res[0]->as<T>();
      for (int64_t o = 0; o < n; ++o) {
        int64_t ic = 0, ix = 0, iy = 0, rem = o;
        for (int64_t d = 0; d < rank; ++d) {
          int64_t at = rem / outStrides[d];
          rem %= outStrides[d];
          ic += at * strides[0][d];
          ix += at * strides[1][d];
          iy += at * strides[2][d];
        }
        z[o] = c[ic] ? x[ix] : y[iy];
      }
    });
  }

private:
  Shape out;
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> outStrides;
};

} // namespace

void cpu::registerLogicKernels(KernelRegistry &r) {
  addKernel<CompareKernel>(r, "heterps.compare");
  addKernel<LogicalKernel>(r, "heterps.logical");
  addKernel<NotKernel>(r, "heterps.not");
  addKernel<WhereKernel>(r, "heterps.where");
}
