//===- KernelUtil.h - Helpers shared by the CPU kernels ---------*- C++ -*-===//

#ifndef HETERPS_LIB_RUNTIME_CPU_KERNELUTIL_H
#define HETERPS_LIB_RUNTIME_CPU_KERNELUTIL_H

#include "../HostDevice.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Kernel.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace heterps::runtime::cpu {

/// Calls `f(T{})` with the C++ type of `t`; `what` names the op in errors.
template <typename F> void dispatchNumeric(DType t, const OpInfo &op, F &&f) {
  switch (t) {
  case DType::F32:
    return f(float{});
  case DType::F64:
    return f(double{});
  case DType::I64:
    return f(int64_t{});
  case DType::I32:
    return f(int32_t{});
  case DType::I16:
    return f(int16_t{});
  case DType::I8:
    return f(int8_t{});
  case DType::U8:
    return f(uint8_t{});
  case DType::U16:
    return f(uint16_t{});
  case DType::U32:
    return f(uint32_t{});
  case DType::U64:
    return f(uint64_t{});
  case DType::Bool:
    return f(bool{});
  default:
    fail(op.describe(), ": no CPU kernel for element type ", dtypeName(t));
  }
}

template <typename F> void dispatchFloat(DType t, const OpInfo &op, F &&f) {
  switch (t) {
  case DType::F32:
    return f(float{});
  case DType::F64:
    return f(double{});
  default:
    fail(op.describe(), ": expected f32 or f64 elements, got ", dtypeName(t));
  }
}

/// Row-major strides of a shape.
std::vector<int64_t> stridesOf(const Shape &shape);

/// The NumPy broadcast of two shapes; throws naming the op when they do not
/// broadcast.
Shape broadcastShapes(const Shape &a, const Shape &b, const OpInfo &op);

/// Strides of `in` read as the broadcast shape `out` (0 along broadcast
/// dimensions), aligned at the trailing dimension.
std::vector<int64_t> broadcastStrides(const Shape &in, const Shape &out);

/// Calls f(outIndex, aIndex, bIndex) for every element of `out`, where the
/// operand indices follow the broadcast strides `sa` and `sb`.
template <typename F>
void forEachBroadcast(const Shape &out, const std::vector<int64_t> &sa,
                      const std::vector<int64_t> &sb, F &&f) {
  int64_t rank = static_cast<int64_t>(out.size());
  if (rank == 0) {
    f(0, 0, 0);
    return;
  }
  int64_t inner = out[rank - 1];
  int64_t ia = sa[rank - 1], ib = sb[rank - 1];
  int64_t outer = 1;
  for (int64_t d = 0; d < rank - 1; ++d)
    outer *= out[d];
  if (inner == 0)
    return;
  // The odometer lives on the stack for the ranks models have, so that a
  // step does not allocate.
  int64_t stackIdx[16] = {0};
  std::vector<int64_t> heapIdx;
  int64_t *idx = stackIdx;
  if (rank > 16) {
    heapIdx.assign(rank, 0);
    idx = heapIdx.data();
  }
  int64_t o = 0, a = 0, b = 0;
  for (int64_t k = 0; k < outer; ++k) {
    for (int64_t j = 0; j < inner; ++j)
      f(o + j, a + j * ia, b + j * ib);
    o += inner;
    for (int64_t d = rank - 2; d >= 0; --d) {
      a += sa[d];
      b += sb[d];
      if (++idx[d] < out[d])
        break;
      a -= sa[d] * out[d];
      b -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

/// Fails naming the op unless every operand has the shape of the first (the
/// elementwise gradients read them index by index).
void requireSameShapes(const std::vector<Shape> &in, const OpInfo &op);

/// Normalises a possibly negative axis against `rank`, naming the op when it
/// is out of range.
int64_t normalizeAxis(int64_t axis, int64_t rank, const OpInfo &op);

/// Replaces the dynamic dimensions of a static type: dimension 0 becomes
/// `batch`, others must not be dynamic.
Shape resolveDims(const Shape &dims, int64_t batch);

/// Where a slice's elements are in its input: the result shape, and the
/// input offset and strides of the result's indices. Bounds clamp as
/// ONNX's do.
struct SliceIndex {
  Shape out;
  int64_t offset = 0;
  std::vector<int64_t> strides;

  void compute(const Shape &s, const std::vector<int64_t> &starts,
               const std::vector<int64_t> &ends,
               const std::vector<int64_t> &steps, const OpInfo &info) {
    if (starts.size() != s.size() || ends.size() != s.size() ||
        steps.size() != s.size())
      fail(info.describe(), ": bounds for ", starts.size(),
           " dimensions on a rank-", s.size(), " input");
    out.assign(s.size(), 0);
    std::vector<int64_t> inStrides = stridesOf(s);
    offset = 0;
    strides.assign(s.size(), 0);
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t dim = s[d], step = steps[d];
      if (step == 0)
        fail(info.describe(), ": step 0 in dimension ", d);
      int64_t b, e, count;
      if (step > 0) {
        b = std::clamp<int64_t>(starts[d], 0, dim);
        e = std::clamp<int64_t>(ends[d], 0, dim);
        count = e > b ? (e - b + step - 1) / step : 0;
      } else {
        b = std::clamp<int64_t>(starts[d], -1, dim - 1);
        e = std::clamp<int64_t>(ends[d], -1, dim - 1);
        count = b > e ? (b - e - step - 1) / -step : 0;
      }
      out[d] = count;
      offset += b * inStrides[d];
      strides[d] = step * inStrides[d];
    }
  }

  /// Throws naming the op unless `resultGradient` has the slice's shape.
  void checkGradient(const Shape &resultGradient, const OpInfo &info) const {
    if (resultGradient != out)
      fail(info.describe(), ": the result gradient has shape ",
           shapeString(resultGradient), ", the slice's result ",
           shapeString(out));
  }
};

/// A tensor seen as [outer, dim, inner] around one axis (softmax, cumsum).
struct AxisSplit {
  int64_t outer = 1, dim = 1, inner = 1;
  void init(const Shape &s, int64_t axis) {
    // A scalar is one row of one element (normalizeAxis accepts axis 0 and
    // -1 for it).
    if (s.empty()) {
      outer = dim = inner = 1;
      return;
    }
    outer = numElements(Shape(s.begin(), s.begin() + axis));
    dim = s[axis];
    inner = numElements(Shape(s.begin() + axis + 1, s.end()));
  }
};

/// heterps.arg_extreme: the attributes (the kind checked) and, for an input
/// shape, its lines along the axis and the result's shape.
struct ArgExtremeShape {
  bool isMax = true, keepdims = true, last = false;
  int64_t axisAttr = 0;
  AxisSplit split;
  explicit ArgExtremeShape(const OpInfo &op);
  Shape compute(const Shape &in, const OpInfo &info);
};

/// heterps.top_k_indices: the attributes and, for an input shape, k checked
/// against the axis, the lines along it and the result's shape.
struct TopKShape {
  int64_t k = 1, axisAttr = -1;
  bool largest = true;
  AxisSplit split;
  explicit TopKShape(const OpInfo &op);
  Shape compute(const Shape &in, const OpInfo &info);
};

/// heterps.transpose: the result shape and, for each of its dimensions, the
/// input's stride. Throws naming the op unless `perm` is a permutation of
/// the input's dimensions.
struct TransposePlan {
  Shape out;
  std::vector<int64_t> strides;
  void compute(const Shape &in, const std::vector<int64_t> &perm,
               const OpInfo &info);
};

/// heterps.gather and gather_grad along `axis`: the data seen as [outer,
/// dimSize, inner], the result as [outer, indices..., inner].
struct GatherShape {
  int64_t axis = 0, outer = 1, inner = 1, dimSize = 0;
  Shape out;
  void compute(const Shape &data, const Shape &indices, int64_t axisAttr,
               const OpInfo &info);
  /// Throws naming the op unless `resultGradient` has the gather's shape.
  void checkGradient(const Shape &resultGradient, const OpInfo &info) const;
};

/// heterps.pad's ways of filling the border.
enum class PadMode { Constant, Reflect, Edge };

/// The input index that index `o` of a dimension of `n` elements padded by
/// `before` in front copies, or -1 for the constant. (PadShape has checked
/// that a reflection stays inside the dimension.)
HETERPS_HD inline int64_t padSource(int64_t o, int64_t n, int64_t before,
                                    PadMode mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n)
    return i;
  switch (mode) {
  case PadMode::Edge:
    return i < 0 ? 0 : n - 1;
  case PadMode::Reflect:
    return i < 0 ? -i : 2 * (n - 1) - i;
  case PadMode::Constant:
    break;
  }
  return -1;
}

/// heterps.pad and pad_grad: the mode and the pads (every dimension's
/// before, then every dimension's after), checked against the input's
/// shape; the padded shape.
struct PadShape {
  PadMode mode = PadMode::Constant;
  Shape out;
  std::vector<int64_t> before;
  void compute(const Shape &in, const std::string &mode,
               const std::vector<int64_t> &pads, const OpInfo &info);
};

/// heterps.gather_elements, scatter_elements and their gradients: data and
/// indices of one rank, the indices no larger than the data off the axis.
struct ElementShape {
  int64_t axis = 0, dimSize = 0;
  std::vector<int64_t> dataStrides, indexStrides;
  void compute(const OpInfo &info, int64_t axisAttr, const Shape &data,
               const Shape &indices);
};

/// heterps.scatter_nd and its gradient: indices ending in tuples of `k`
/// entries, each naming a slice of `slice` elements of the data (its
/// trailing rank - k dimensions).
struct TupleShape {
  int64_t k = 1, slice = 1;
  /// The data's first k dimensions and the data's strides.
  Shape dims;
  std::vector<int64_t> strides;
  void compute(const OpInfo &info, const Shape &data, const Shape &indices,
               const Shape &updates);
  /// The updates' shape for `data` and `indices` (indices[:-1] +
  /// data[k:]), or indices[:-1] when the tuples do not fit the data
  /// (compute then names the problem).
  static Shape updatesShape(const Shape &data, const Shape &indices);
};

/// The `reduction` attribute of a scatter, checked: "none" or "add", and
/// "mul" where `mulAllowed`.
std::string scatterReduction(const OpInfo &op, bool mulAllowed);

/// Whether element `a` of value `va` comes before element `b` of value
/// `vb` among heterps.top_k_indices' results: by value (NaN above every
/// number, as PyTorch's topk and sort order it), equal values by position.
template <typename T>
HETERPS_HD inline bool topKPrecedes(T va, T vb, int64_t a, int64_t b,
                                    bool largest) {
  bool nanA = va != va, nanB = vb != vb;
  if (nanA || nanB) {
    if (nanA && nanB)
      return a < b;
    return largest ? nanA : nanB;
  }
  if (va != vb)
    return largest ? va > vb : va < vb;
  return a < b;
}

/// Whether heterps.arg_extreme moves its choice from a value `b` to a later
/// value `v` (a NaN is never chosen over a number, nor a number over a
/// leading NaN: comparisons with NaN are false).
template <typename T>
HETERPS_HD inline bool argExtremeMoves(T v, T b, bool isMax, bool last) {
  return isMax ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
}

/// heterps.layer_norm(_grad) over dimensions axis..rank-1 of `x`: `outer`
/// rows of `inner` elements. Throws naming the op for an axis out of range
/// or a scale that is not one value per element of a row.
struct LayerNormShape {
  int64_t outer = 1, inner = 1;
  LayerNormShape(const Shape &x, const Shape &scale, const OpInfo &info);
};

/// heterps.segment_reduce (operands data, offsets) and its gradient
/// (data, offsets, result_grad): the kind ("sum", "mean" or "max") and the
/// shapes, checked. A bag's row has `width` values.
struct SegmentShape {
  std::string kind;
  int64_t width = 1;
  SegmentShape() = default;
  explicit SegmentShape(const OpInfo &info);
  /// The result's shape for these operands (the data's for the gradient).
  Shape output(const OpInfo &info, const std::vector<Shape> &in, bool gradient);
};

/// The N x C x ... input of batch normalisation: `channels` statistics,
/// each over `batch` x `inner` values (the spatial dimensions flattened).
struct BatchNormShape {
  int64_t batch = 0, channels = 0, inner = 1;
  BatchNormShape() = default;
  BatchNormShape(const OpInfo &info, const Shape &x);
  /// Values per channel.
  int64_t count() const { return batch * inner; }
  /// Fails naming `what` unless `shape` is {channels}.
  void expectChannels(const OpInfo &info, const char *what,
                      const Shape &shape) const;

private:
  Shape input;
};

/// The spatial window of a conv or pool op for one input: ONNX attributes
/// with their defaults, checked against the spatial rank.
struct Window {
  Shape kernel, strides, dilations, padBegin, padEnd;
};

inline Window readWindow(const OpInfo &info, const Shape &kernel,
                         bool withDilations) {
  size_t n = kernel.size();
  Window w;
  w.kernel = kernel;
  w.strides = info.getInts("strides", Shape(n, 1));
  w.dilations =
      withDilations ? info.getInts("dilations", Shape(n, 1)) : Shape(n, 1);
  Shape pads = info.getInts("pads", Shape(2 * n, 0));
  if (w.strides.size() != n)
    fail(info.describe(), ": strides has ", w.strides.size(), " entries for ",
         n, " spatial dimensions");
  if (w.dilations.size() != n)
    fail(info.describe(), ": dilations has ", w.dilations.size(),
         " entries for ", n, " spatial dimensions");
  if (pads.size() != 2 * n)
    fail(info.describe(), ": pads has ", pads.size(), " entries, expected ",
         2 * n, " (begins then ends)");
  w.padBegin.assign(pads.begin(), pads.begin() + n);
  w.padEnd.assign(pads.begin() + n, pads.end());
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1 ||
        w.padBegin[i] < 0 || w.padEnd[i] < 0)
      fail(info.describe(), ": spatial dimension ", i, " has kernel ",
           w.kernel[i], ", stride ", w.strides[i], ", dilation ",
           w.dilations[i], ", pads ", w.padBegin[i], "/", w.padEnd[i],
           ": kernels, strides and dilations must be positive, pads "
           "non-negative");
  return w;
}

/// Checks that `shape` is N x C x spatial... with 1 to 3 spatial dimensions,
/// the ranks the convolution and pooling kernels support.
inline void expectSpatial(const OpInfo &info, const char *what,
                          const Shape &shape) {
  if (shape.size() < 3 || shape.size() > 5)
    fail(info.describe(), ": ", what,
         " must be N x C x spatial... with 1 to 3 spatial dimensions, "
         "got shape ",
         shapeString(shape));
}

/// heterps.max_pool, avg_pool and pool_grad of input `x`: the window (its
/// end pads as given), the output shape and, per spatial dimension, the end
/// padding that ceil_mode adds so that the last window fits. Throws naming
/// the op for a missing or misfit kernel.
struct PoolShape {
  Shape output;
  Window window;
  /// The end padding with ceil_mode's extension, per spatial dimension.
  Shape padEndCeil;
  PoolShape(const OpInfo &info, const Shape &x);
};

/// heterps.conv(_grad) of input `x` (N x C x spatial...) by filter `w`
/// (M x C/group x kernel...): the output shape and the window. Throws
/// naming the op when they do not fit.
struct ConvShape {
  Shape output;
  Window window;
  int64_t group = 1;
  ConvShape(const OpInfo &info, const Shape &x, const Shape &w);
};

/// The output of heterps.conv_transpose for input `x` and filter `w`
/// (C x M/group x k...): the shape whose convolution by `w` (the same
/// attributes) has `x`'s shape, output_padding added.
Shape convTransposeOutput(const OpInfo &info, const Shape &x, const Shape &w);

/// The product of heterps.gemm: op(A) is m x k, op(B) is k x n. Throws
/// naming the op unless both operands are 2-D with equal inner dimensions.
struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
  GemmShape(const Shape &a, const Shape &b, bool ta, bool tb, const OpInfo &op);
};

/// heterps.matmul with NumPy semantics as one (batched) row-major product:
/// 1-D operands are promoted, a shared right matrix folds the left
/// operand's batch into M, equal batch dimensions run as `batch` products
/// (`bBatched`). Other batch broadcasts throw naming the op.
struct MatMulShape {
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool bBatched = false;
  Shape out;
  MatMulShape(const Shape &a, const Shape &b, const OpInfo &op);
};

/// heterps.concat along `axis` as `outer` rows, each the operands' `inner`
/// elements side by side. Throws naming the op when the operands' ranks or
/// their dimensions outside the axis differ.
struct ConcatShape {
  int64_t axis = 0, outer = 1;
  std::vector<int64_t> inner;
  Shape out;
  ConcatShape(const std::vector<Shape> &in, int64_t axisAttr, const OpInfo &op);
};

/// A reduction of `input` over `axes` (all when empty): `kept` is the
/// input's shape with 1 along the reduced dimensions, `result` the op's
/// (kept, or without those dimensions), `count` the elements per result,
/// `own` and `toKept` the strides that walk the input and its result.
struct ReducePlan {
  Shape input, kept, result;
  std::vector<int64_t> own, toKept;
  int64_t count = 1;

  void init(const Shape &in, const std::vector<int64_t> &axes, bool keepdims,
            const OpInfo &op);
  /// For reduce_grad: throws naming the op unless operands 1 and 2 (the
  /// result and its gradient) have one element per kept position.
  void checkResults(const std::vector<Shape> &in, const OpInfo &op) const;
};

/// The `reduction` attribute of the losses.
enum class LossReduction { None, Mean, Sum };
LossReduction lossReductionOf(const OpInfo &op);

/// Registers a kernel class constructible from OpInfo.
template <typename K>
void addKernel(KernelRegistry &r, const std::string &name) {
  r.add(name, DeviceKind::CPU,
        [](const OpInfo &op) { return std::make_unique<K>(op); });
}

/// heterps.reshape: a view of its operand with the new shape, whatever
/// memory it is in (the GPU column registers it too).
std::unique_ptr<Kernel> makeReshapeKernel(const OpInfo &op);

void registerElementwiseKernels(KernelRegistry &r);
void registerLinalgKernels(KernelRegistry &r);
void registerShapeKernels(KernelRegistry &r);
void registerLogicKernels(KernelRegistry &r);
void registerReduceKernels(KernelRegistry &r);
void registerLossKernels(KernelRegistry &r);
void registerRecurrentKernels(KernelRegistry &r);
void registerResizeKernels(KernelRegistry &r);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_KERNELUTIL_H
