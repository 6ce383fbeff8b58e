//===- ShapeKernels.cpp - Constants, reshapes, copies and gathers ---------===//
//
// Byte copies that work for every element type. Two ops have a oneDNN
// primitive for f32 tensors: concat (the concat primitive) and sum_to_shape
// (a sum, see buildReduction).
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "PrimitiveCache.h"

#include <cstring>
#include <limits>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class ConstantKernel : public Kernel {
public:
  explicit ConstantKernel(const OpInfo &op)
      : Kernel(op), value(op.getTensor("value")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &) override {
    return {value.shape()};
  }
  void run(const std::vector<const Tensor *> &,
           const std::vector<Tensor *> &res, ExecContext &) override {
    res[0]->reset(value.dtype(), value.shape(), value.data());
  }
  bool outputsAreViews() const override { return true; }

private:
  Tensor value;
};

/// The result type's static dimensions with its one dynamic dimension
/// inferred from the element count.
class ReshapeKernel : public Kernel {
public:
  using Kernel::Kernel;
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = info.outputTypes()[0].dims;
    int64_t known = 1, dynamic = -1;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] < 0) {
        if (dynamic >= 0)
          fail(info.describe(), ": the result has two dynamic dimensions");
        dynamic = static_cast<int64_t>(i);
      } else {
        known *= out[i];
      }
    }
    int64_t total = numElements(in[0]);
    if (dynamic >= 0)
      out[dynamic] = known ? total / known : 0;
    if (numElements(out) != total)
      fail(info.describe(), ": cannot reshape ", shapeString(in[0]), " (",
           total, " elements) to ", shapeString(info.outputTypes()[0].dims));
    shape = out;
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    res[0]->reset(in[0]->dtype(), shape, in[0]->data());
  }
  bool outputsAreViews() const override { return true; }

private:
  Shape shape;
};

class TransposeKernel : public Kernel {
public:
  explicit TransposeKernel(const OpInfo &op)
      : Kernel(op), perm(op.getInts("perm")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    plan.compute(in[0], perm, info);
    return {plan.out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    size_t es = dtypeSize(in[0]->dtype());
    const char *x = static_cast<const char *>(in[0]->data());
    char *y = static_cast<char *>(res[0]->data());
    forEachBroadcast(plan.out, plan.strides, plan.strides,
                     [&](int64_t o, int64_t i, int64_t) {
                       std::memcpy(y + o * es, x + i * es, es);
                     });
  }

private:
  std::vector<int64_t> perm;
  TransposePlan plan;
};

class ConcatKernel : public Kernel {
public:
  explicit ConcatKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    ConcatShape shape(in, axisAttr, info);
    axis = shape.axis;
    outer = shape.outer;
    inner = shape.inner;
    const Shape &out = shape.out;
    prim = planIsF32(info)
               ? cache.get(in,
                           [&](BoundPrimitive &p) { return build(in, out, p); })
               : nullptr;
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (prim && allF32(in, res)) {
      prim->execute(info, in, res);
      return;
    }
    size_t es = dtypeSize(res[0]->dtype());
    int64_t row = 0;
    for (int64_t n : inner)
      row += n;
    char *y = static_cast<char *>(res[0]->data());
    int64_t offset = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const char *x = static_cast<const char *>(in[i]->data());
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(y + (o * row + offset) * es, x + o * inner[i] * es,
                    inner[i] * es);
      offset += inner[i];
    }
  }

private:
  bool build(const std::vector<Shape> &in, const Shape &out,
             BoundPrimitive &p) {
    std::vector<dnnl::memory::desc> srcs;
    for (const Shape &s : in)
      srcs.push_back(plainDesc(s));
    dnnl::memory::desc dst = plainDesc(out);
    dnnl::concat::primitive_desc pd(dst, static_cast<int>(axis), srcs,
                                    cpuDevice().engine, scratchpadAttr());
    for (size_t i = 0; i < srcs.size(); ++i)
      p.input(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), i, srcs[i]);
    p.output(DNNL_ARG_DST, 0, dst);
    p.set(dnnl::concat(pd), pd);
    return true;
  }

  int64_t axisAttr, axis = 0, outer = 1;
  std::vector<int64_t> inner;
  PrimitiveCache cache;
  BoundPrimitive *prim = nullptr;
};

class SliceKernel : public Kernel {
public:
  explicit SliceKernel(const OpInfo &op)
      : Kernel(op), starts(op.getInts("starts")), ends(op.getInts("ends")),
        steps(op.getInts("steps")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.compute(in[0], starts, ends, steps, info);
    const Shape &out = index.out;
    rowShape.assign(out.begin(), out.end() - (out.empty() ? 0 : 1));
    rowStrides.assign(index.strides.begin(),
                      index.strides.end() - (index.strides.empty() ? 0 : 1));
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    size_t es = dtypeSize(in[0]->dtype());
    if (res[0]->numElements() == 0)
      return;
    const char *x =
        static_cast<const char *>(in[0]->data()) + index.offset * es;
    char *y = static_cast<char *>(res[0]->data());
    if (!index.out.empty() && steps.back() == 1) {
      // Contiguous rows (a concat's gradient): one copy per row.
      size_t row = index.out.back() * es;
      forEachBroadcast(rowShape, rowStrides, rowStrides,
                       [&](int64_t o, int64_t i, int64_t) {
                         std::memcpy(y + o * row, x + i * es, row);
                       });
      return;
    }
    forEachBroadcast(index.out, index.strides, index.strides,
                     [&](int64_t o, int64_t i, int64_t) {
                       std::memcpy(y + o * es, x + i * es, es);
                     });
  }

private:
  std::vector<int64_t> starts, ends, steps, rowStrides;
  SliceIndex index;
  Shape rowShape;
};

/// heterps.slice_grad: zeros, and the slice's gradient where the slice took
/// its elements (distinct positions: a plain copy, any element type).
class SliceGradKernel : public Kernel {
public:
  explicit SliceGradKernel(const OpInfo &op)
      : Kernel(op), starts(op.getInts("starts")), ends(op.getInts("ends")),
        steps(op.getInts("steps")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.compute(in[0], starts, ends, steps, info);
    index.checkGradient(in[1], info);
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    size_t es = dtypeSize(res[0]->dtype());
    char *dx = static_cast<char *>(res[0]->data());
    std::memset(dx, 0, res[0]->numElements() * es);
    if (in[1]->numElements() == 0)
      return;
    const char *dy = static_cast<const char *>(in[1]->data());
    dx += index.offset * es;
    forEachBroadcast(index.out, index.strides, index.strides,
                     [&](int64_t o, int64_t i, int64_t) {
                       std::memcpy(dx + i * es, dy + o * es, es);
                     });
  }

private:
  std::vector<int64_t> starts, ends, steps;
  SliceIndex index;
};

/// The indices of a gather along a dimension of `dimSize` elements as i64,
/// negative ones counted from the end; throws naming the op for one out of
/// range.
void readIndices(const Tensor &indices, int64_t dimSize, const OpInfo &info,
                 std::vector<int64_t> &idx) {
  int64_t n = indices.numElements();
  idx.resize(n);
  dispatchNumeric(indices.dtype(), info, [&](auto tag) {
    using T = decltype(tag);
    const T *p = indices.as<T>();
    for (int64_t i = 0; i < n; ++i)
      idx[i] = static_cast<int64_t>(p[i]);
  });
  for (int64_t &i : idx) {
    if (i < 0)
      i += dimSize;
    if (i < 0 || i >= dimSize)
      fail(info.describe(), ": index out of range [0, ", dimSize, ")");
  }
}

class GatherKernel : public Kernel {
public:
  explicit GatherKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis", 0)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    shape.compute(in[0], in[1], axisAttr, info);
    return {shape.out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    size_t es = dtypeSize(in[0]->dtype());
    int64_t n = in[1]->numElements(), inner = shape.inner;
    readIndices(*in[1], shape.dimSize, info, idx);
    const char *x = static_cast<const char *>(in[0]->data());
    char *y = static_cast<char *>(res[0]->data());
    for (int64_t o = 0; o < shape.outer; ++o)
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(y + ((o * n + j) * inner) * es,
                    x + ((o * shape.dimSize + idx[j]) * inner) * es,
                    inner * es);
  }

private:
  int64_t axisAttr;
  GatherShape shape;
  std::vector<int64_t> idx;
};

/// heterps.gather_grad: zeros, with the result gradient's slices added
/// where the indices point (an index named twice gets both).
class GatherGradKernel : public Kernel {
public:
  explicit GatherGradKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis", 0)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    shape.compute(in[0], in[1], axisAttr, info);
    shape.checkGradient(in[2], info);
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = in[1]->numElements(), inner = shape.inner;
    readIndices(*in[1], shape.dimSize, info, idx);
    dispatchFloat(res[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      T *dx = res[0]->as<T>();
      const T *dy = in[2]->as<T>();
      std::fill(dx, dx + res[0]->numElements(), T(0));
      for (int64_t o = 0; o < shape.outer; ++o)
        for (int64_t j = 0; j < n; ++j) {
          T *to = dx + (o * shape.dimSize + idx[j]) * inner;
          const T *from = dy + (o * n + j) * inner;
          for (int64_t k = 0; k < inner; ++k)
            to[k] += from[k];
        }
    });
  }

private:
  int64_t axisAttr;
  GatherShape shape;
  std::vector<int64_t> idx;
};

/// Where each element of a padded tensor comes from: per dimension, the
/// input index of every output index, or -1 for the constant.
struct PadIndex {
  PadShape shape;
  std::vector<std::vector<int64_t>> source;
  std::vector<int64_t> inStrides;

  void compute(const Shape &in, const std::string &mode,
               const std::vector<int64_t> &pads, const OpInfo &info) {
    shape.compute(in, mode, pads, info);
    source.assign(in.size(), {});
    inStrides = stridesOf(in);
    for (size_t d = 0; d < in.size(); ++d)
      for (int64_t o = 0; o < shape.out[d]; ++o)
        source[d].push_back(padSource(o, in[d], shape.before[d], shape.mode));
  }

  /// Calls f(output offset, input offset or -1) for every output element.
  template <typename F> void forEach(F &&f) const {
    int64_t count = numElements(shape.out);
    if (count == 0)
      return;
    size_t rank = shape.out.size();
    std::vector<int64_t> at(rank, 0);
    for (int64_t o = 0; o < count; ++o) {
      int64_t from = 0;
      for (size_t d = 0; d < rank && from >= 0; ++d) {
        int64_t i = source[d][at[d]];
        from = i < 0 ? -1 : from + i * inStrides[d];
      }
      f(o, from);
      for (size_t d = rank; d-- > 0;) {
        if (++at[d] < shape.out[d])
          break;
        at[d] = 0;
      }
    }
  }
};

class PadKernel : public Kernel {
public:
  explicit PadKernel(const OpInfo &op)
      : Kernel(op), mode(op.getString("mode", "constant")),
        pads(op.getInts("pads")), value(op.getFloat("value", 0.0)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.compute(in[0], mode, pads, info);
    return {index.shape.out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>();
      T *y = res[0]->as<T>();
      T fill = static_cast<T>(value);
      index.forEach([&](int64_t o, int64_t i) { y[o] = i < 0 ? fill : x[i]; });
    });
  }

private:
  std::string mode;
  std::vector<int64_t> pads;
  double value;
  PadIndex index;
};

/// heterps.pad_grad: each element of the result gradient added to the input
/// element it was copied from.
class PadGradKernel : public Kernel {
public:
  explicit PadGradKernel(const OpInfo &op)
      : Kernel(op), mode(op.getString("mode", "constant")),
        pads(op.getInts("pads")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.compute(in[0], mode, pads, info);
    if (in[1] != index.shape.out)
      fail(info.describe(), ": the result gradient has shape ",
           shapeString(in[1]), ", the pad's result ",
           shapeString(index.shape.out));
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    dispatchFloat(res[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      T *dx = res[0]->as<T>();
      const T *dy = in[1]->as<T>();
      std::fill(dx, dx + res[0]->numElements(), T(0));
      index.forEach([&](int64_t o, int64_t i) {
        if (i >= 0)
          dx[i] += dy[o];
      });
    });
  }

private:
  std::string mode;
  std::vector<int64_t> pads;
  PadIndex index;
};

/// The elements of `data` an index tensor names along `axis`, as ONNX's
/// GatherElements and ScatterElements read them: one flat offset into the
/// data per index.
class ElementIndex {
public:
  void prepare(const OpInfo &info, int64_t axisAttr, const Shape &data,
               const Shape &idx) {
    shape.compute(info, axisAttr, data, idx);
  }
  /// The offsets of `indices`; an index out of range is an error.
  const std::vector<int64_t> &offsets(const OpInfo &info,
                                      const Tensor &indices) {
    int64_t n = indices.numElements();
    flat.resize(n);
    dispatchNumeric(indices.dtype(), info, [&](auto tag) {
      using I = decltype(tag);
      const I *idx = indices.as<I>();
      for (int64_t p = 0; p < n; ++p) {
        int64_t at = static_cast<int64_t>(idx[p]);
        if (at < 0)
          at += shape.dimSize;
        if (at < 0 || at >= shape.dimSize)
          fail(info.describe(), ": index ", static_cast<int64_t>(idx[p]),
               " out of range [0, ", shape.dimSize, ")");
        int64_t src = 0, rem = p;
        for (size_t d = 0; d < shape.indexStrides.size(); ++d) {
          int64_t c = rem / shape.indexStrides[d];
          rem %= shape.indexStrides[d];
          src += (static_cast<int64_t>(d) == shape.axis ? at : c) *
                 shape.dataStrides[d];
        }
        flat[p] = src;
      }
    });
    return flat;
  }

private:
  ElementShape shape;
  std::vector<int64_t> flat;
};

/// heterps.gather_elements and (with `backward`) its gradient: the same
/// walk over the indices, copying forward, adding backward.
class GatherElementsKernel : public Kernel {
public:
  GatherElementsKernel(const OpInfo &op, bool backward)
      : Kernel(op), axisAttr(op.getInt("axis", 0)), backward(backward) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    const Shape &data = in[0], &idx = in[1];
    index.prepare(info, axisAttr, data, idx);
    if (backward && in[2] != idx)
      fail(info.describe(), ": the result gradient has shape ",
           shapeString(in[2]), ", the indices ", shapeString(idx));
    return {backward ? data : idx};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const std::vector<int64_t> &offsets = index.offsets(info, *in[1]);
    int64_t n = static_cast<int64_t>(offsets.size());
    if (!backward) {
      size_t es = dtypeSize(in[0]->dtype());
      const char *x = static_cast<const char *>(in[0]->data());
      char *y = static_cast<char *>(res[0]->data());
      for (int64_t p = 0; p < n; ++p)
        std::memcpy(y + p * es, x + offsets[p] * es, es);
      return;
    }
    dispatchFloat(res[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      T *dx = res[0]->as<T>();
      const T *dy = in[2]->as<T>();
      std::fill(dx, dx + res[0]->numElements(), T(0));
      for (int64_t p = 0; p < n; ++p)
        dx[offsets[p]] += dy[p];
    });
  }

private:
  int64_t axisAttr;
  bool backward;
  ElementIndex index;
};

/// heterps.scatter_elements: data, with the updates stored ("none") or
/// added ("add") where the indices name.
class ScatterElementsKernel : public Kernel {
public:
  explicit ScatterElementsKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis", 0)),
        add(scatterReduction(op, false) == "add") {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.prepare(info, axisAttr, in[0], in[1]);
    if (in[2] != in[1])
      fail(info.describe(), ": updates ", shapeString(in[2]), " for indices ",
           shapeString(in[1]));
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const std::vector<int64_t> &offsets = index.offsets(info, *in[1]);
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>(), *u = in[2]->as<T>();
      T *y = res[0]->as<T>();
      std::copy(x, x + in[0]->numElements(), y);
      for (size_t p = 0; p < offsets.size(); ++p)
        y[offsets[p]] = add ? T(y[offsets[p]] + u[p]) : u[p];
    });
  }

private:
  int64_t axisAttr;
  bool add;
  ElementIndex index;
};

/// heterps.scatter_elements_grad: (indices, result_grad) -> the data's
/// gradient (zeroed where an update was stored) and the updates'.
class ScatterElementsGradKernel : public Kernel {
public:
  explicit ScatterElementsGradKernel(const OpInfo &op)
      : Kernel(op), axisAttr(op.getInt("axis", 0)),
        add(scatterReduction(op, false) == "add") {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.prepare(info, axisAttr, in[1], in[0]);
    return {in[1], in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const std::vector<int64_t> &offsets = index.offsets(info, *in[0]);
    dispatchFloat(in[1]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *dy = in[1]->as<T>();
      T *dx = res[0]->as<T>(), *du = res[1]->as<T>();
      std::copy(dy, dy + in[1]->numElements(), dx);
      for (size_t p = 0; p < offsets.size(); ++p) {
        du[p] = dy[offsets[p]];
        if (!add)
          dx[offsets[p]] = T(0);
      }
    });
  }

private:
  int64_t axisAttr;
  bool add;
  ElementIndex index;
};

/// The slices of `data` ScatterND's index tuples name: a flat offset per
/// tuple and the slice size (the data's trailing rank - k dimensions).
class TupleIndex {
public:
  void prepare(const OpInfo &info, const Shape &data, const Shape &idx,
               const Shape &updates) {
    shape.compute(info, data, idx, updates);
  }
  /// The offsets of `indices`; an index out of range is an error.
  const std::vector<int64_t> &offsets(const OpInfo &info,
                                      const Tensor &indices) {
    int64_t tuples = indices.numElements() / shape.k;
    flat.resize(tuples);
    dispatchNumeric(indices.dtype(), info, [&](auto tag) {
      using I = decltype(tag);
      const I *idx = indices.as<I>();
      for (int64_t p = 0; p < tuples; ++p) {
        int64_t offset = 0;
        for (int64_t d = 0; d < shape.k; ++d) {
          int64_t at = static_cast<int64_t>(idx[p * shape.k + d]);
          if (at < 0)
            at += shape.dims[d];
          if (at < 0 || at >= shape.dims[d])
            fail(info.describe(), ": index tuple ", p, " has ",
                 static_cast<int64_t>(idx[p * shape.k + d]), " in dimension ",
                 d, ", out of range [0, ", shape.dims[d], ")");
          offset += at * shape.strides[d];
        }
        flat[p] = offset;
      }
    });
    return flat;
  }
  int64_t slice() const { return shape.slice; }

private:
  TupleShape shape;
  std::vector<int64_t> flat;
};

/// heterps.scatter_nd: (data, indices, updates) -> data with the update
/// slices stored, added or multiplied in tuple order.
class ScatterNDKernel : public Kernel {
public:
  explicit ScatterNDKernel(const OpInfo &op)
      : Kernel(op), reduction(scatterReduction(op, true)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    index.prepare(info, in[0], in[1], in[2]);
    return {in[0]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const std::vector<int64_t> &offsets = index.offsets(info, *in[1]);
    int64_t n = index.slice();
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *x = in[0]->as<T>(), *u = in[2]->as<T>();
      T *y = res[0]->as<T>();
      std::copy(x, x + in[0]->numElements(), y);
      for (size_t p = 0; p < offsets.size(); ++p) {
        T *dst = y + offsets[p];
        const T *src = u + p * n;
        for (int64_t i = 0; i < n; ++i)
          dst[i] = reduction == "add"   ? T(dst[i] + src[i])
                   : reduction == "mul" ? T(dst[i] * src[i])
                                        : src[i];
      }
    });
  }

private:
  std::string reduction;
  TupleIndex index;
};

/// heterps.scatter_nd_grad: (indices, result_grad) -> the data's gradient
/// (zeroed where a slice was stored) and the updates'.
class ScatterNDGradKernel : public Kernel {
public:
  explicit ScatterNDGradKernel(const OpInfo &op)
      : Kernel(op), add(scatterReduction(op, false) == "add") {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    // The updates' shape follows from the indices and the data.
    Shape updates = TupleShape::updatesShape(in[1], in[0]);
    index.prepare(info, in[1], in[0], updates);
    return {in[1], updates};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const std::vector<int64_t> &offsets = index.offsets(info, *in[0]);
    int64_t n = index.slice();
    dispatchFloat(in[1]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      const T *dy = in[1]->as<T>();
      T *dx = res[0]->as<T>(), *du = res[1]->as<T>();
      std::copy(dy, dy + in[1]->numElements(), dx);
      for (size_t p = 0; p < offsets.size(); ++p)
        std::copy(dy + offsets[p], dy + offsets[p] + n, du + p * n);
      if (!add)
        for (int64_t offset : offsets)
          std::fill(dx + offset, dx + offset + n, T(0));
    });
  }

private:
  bool add;
  TupleIndex index;
};

class ExpandKernel : public Kernel {
public:
  explicit ExpandKernel(const OpInfo &op)
      : Kernel(op), target(op.getInts("shape")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    outShape = broadcastShapes(in[0], target, info);
    src = broadcastStrides(in[0], outShape);
    return {outShape};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    size_t es = dtypeSize(in[0]->dtype());
    const char *x = static_cast<const char *>(in[0]->data());
    char *y = static_cast<char *>(res[0]->data());
    forEachBroadcast(outShape, src, src, [&](int64_t o, int64_t i, int64_t) {
      std::memcpy(y + o * es, x + i * es, es);
    });
  }

private:
  Shape target, outShape;
  std::vector<int64_t> src;
};

/// heterps.sum_to_shape: sums `value` over the dimensions along which
/// `like`'s shape was broadcast.
class SumToShapeKernel : public Kernel {
public:
  using Kernel::Kernel;
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    valueShape = in[0];
    if (broadcastShapes(in[1], in[0], info) != in[0])
      fail(info.describe(), ": ", shapeString(in[1]), " does not broadcast to ",
           shapeString(in[0]));
    dst = broadcastStrides(in[1], in[0]);
    own = stridesOf(in[0]);
    // The sum has `like`'s shape with the leading unit dimensions that
    // NumPy broadcasting implies.
    Shape kept = padRank(in[1], in[0].size());
    prim =
        planIsF32(info)
            ? cache.get(in,
                        [&](BoundPrimitive &p) {
                          return buildReduction(dnnl::algorithm::reduction_sum,
                                                in[0], kept, p);
                        })
            : nullptr;
    return {in[1]};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (prim && allF32(in, res)) {
      prim->execute(info, in, res);
      return;
    }
    dispatchNumeric(in[0]->dtype(), info, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        fail(info.describe(), ": cannot sum booleans");
      } else {
        const T *x = in[0]->as<T>();
        T *y = res[0]->as<T>();
        std::fill(y, y + res[0]->numElements(), T(0));
        forEachBroadcast(valueShape, own, dst,
                         [&](int64_t, int64_t i, int64_t o) {
                           y[o] = static_cast<T>(y[o] + x[i]);
                         });
      }
    });
  }

private:
  Shape valueShape;
  std::vector<int64_t> dst, own;
  PrimitiveCache cache;
  BoundPrimitive *prim = nullptr;
};

} // namespace

std::unique_ptr<Kernel> cpu::makeReshapeKernel(const OpInfo &op) {
  return std::make_unique<ReshapeKernel>(op);
}

void cpu::registerShapeKernels(KernelRegistry &r) {
  addKernel<ConstantKernel>(r, "heterps.constant");
  addKernel<ReshapeKernel>(r, "heterps.reshape");
  addKernel<TransposeKernel>(r, "heterps.transpose");
  addKernel<ConcatKernel>(r, "heterps.concat");
  addKernel<SliceKernel>(r, "heterps.slice");
  addKernel<GatherKernel>(r, "heterps.gather");
  addKernel<GatherGradKernel>(r, "heterps.gather_grad");
  r.add("heterps.gather_elements", DeviceKind::CPU, [](const OpInfo &op) {
    return std::make_unique<GatherElementsKernel>(op, false);
  });
  r.add("heterps.gather_elements_grad", DeviceKind::CPU, [](const OpInfo &op) {
    return std::make_unique<GatherElementsKernel>(op, true);
  });
  addKernel<ScatterElementsKernel>(r, "heterps.scatter_elements");
  addKernel<ScatterElementsGradKernel>(r, "heterps.scatter_elements_grad");
  addKernel<ScatterNDKernel>(r, "heterps.scatter_nd");
  addKernel<ScatterNDGradKernel>(r, "heterps.scatter_nd_grad");
  addKernel<SliceGradKernel>(r, "heterps.slice_grad");
  addKernel<PadKernel>(r, "heterps.pad");
  addKernel<PadGradKernel>(r, "heterps.pad_grad");
  addKernel<ExpandKernel>(r, "heterps.expand");
  addKernel<SumToShapeKernel>(r, "heterps.sum_to_shape");
}
