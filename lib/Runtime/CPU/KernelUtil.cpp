//===- KernelUtil.cpp - Helpers shared by the CPU kernels -----------------===//

#include "KernelUtil.h"

#include "CPUDevice.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

std::vector<int64_t> cpu::stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

Shape cpu::broadcastShapes(const Shape &a, const Shape &b, const OpInfo &op) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(op.describe(), ": shapes ", shapeString(a), " and ", shapeString(b),
           " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> cpu::broadcastStrides(const Shape &in, const Shape &out) {
  std::vector<int64_t> strides(out.size(), 0);
  std::vector<int64_t> own = stridesOf(in);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    strides[i + offset] = in[i] == 1 && out[i + offset] != 1 ? 0 : own[i];
  return strides;
}

void cpu::requireSameShapes(const std::vector<Shape> &in, const OpInfo &op) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != in[0])
      fail(op.describe(), ": operand ", i, " is ", shapeString(in[i]),
           ", operand 0 ", shapeString(in[0]), "; they must have one shape");
}

int64_t cpu::normalizeAxis(int64_t axis, int64_t rank, const OpInfo &op) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    fail(op.describe(), ": axis ", axis, " is out of range for rank ", rank);
  return a;
}

Shape cpu::resolveDims(const Shape &dims, int64_t batch) {
  Shape s = dims;
  for (int64_t &d : s)
    if (d < 0)
      d = batch;
  return s;
}

GemmShape::GemmShape(const Shape &a, const Shape &b, bool ta, bool tb,
                     const OpInfo &op) {
  if (a.size() != 2 || b.size() != 2)
    fail(op.describe(), ": operands must be 2-D, got ", shapeString(a), " and ",
         shapeString(b));
  m = ta ? a[1] : a[0];
  k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0];
  n = tb ? b[0] : b[1];
  if (k != kb)
    fail(op.describe(), ": inner dimensions differ: op(A) is ", m, "x", k,
         ", op(B) is ", kb, "x", n);
}

MatMulShape::MatMulShape(const Shape &left, const Shape &right,
                         const OpInfo &op) {
  Shape a = left, b = right;
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec)
    a.insert(a.begin(), 1);
  if (bVec)
    b.push_back(1);
  if (a.size() < 2 || b.size() < 2)
    fail(op.describe(), ": operands of rank 0");
  k = a.back();
  if (b[b.size() - 2] != k)
    fail(op.describe(), ": inner dimensions differ: ", shapeString(left),
         " times ", shapeString(right));
  n = b.back();
  Shape aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2);
  out = broadcastShapes(aBatch, bBatch, op);
  out.push_back(a[a.size() - 2]);
  out.push_back(n);
  if (bBatch.empty() || numElements(bBatch) == 1) {
    batch = 1;
    m = numElements(aBatch) * a[a.size() - 2];
    bBatched = false;
  } else if (aBatch == bBatch) {
    batch = numElements(aBatch);
    m = a[a.size() - 2];
    bBatched = true;
  } else {
    fail(op.describe(), ": broadcasting batch dimensions that differ (",
         shapeString(left), " and ", shapeString(right),
         ") is not implemented");
  }
  if (aVec)
    out.erase(out.end() - 2);
  if (bVec)
    out.pop_back();
}

void TransposePlan::compute(const Shape &in, const std::vector<int64_t> &perm,
                            const OpInfo &info) {
  if (perm.size() != in.size())
    fail(info.describe(), ": perm has ", perm.size(), " entries for a rank-",
         in.size(), " input");
  std::vector<bool> seen(in.size(), false);
  std::vector<int64_t> inStrides = stridesOf(in);
  out.assign(perm.size(), 0);
  strides.assign(perm.size(), 0);
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[p])
      fail(info.describe(), ": perm entry ", i, " is ", p,
           ", not a permutation of the ", in.size(), " dimensions");
    seen[p] = true;
    out[i] = in[p];
    strides[i] = inStrides[p];
  }
}

void GatherShape::compute(const Shape &data, const Shape &indices,
                          int64_t axisAttr, const OpInfo &info) {
  if (data.empty())
    fail(info.describe(), ": gathers from a rank-0 operand");
  axis = normalizeAxis(axisAttr, static_cast<int64_t>(data.size()), info);
  out.assign(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  outer = numElements(Shape(data.begin(), data.begin() + axis));
  inner = numElements(Shape(data.begin() + axis + 1, data.end()));
  dimSize = data[axis];
}

void GatherShape::checkGradient(const Shape &resultGradient,
                                const OpInfo &info) const {
  if (resultGradient != out)
    fail(info.describe(), ": the result gradient has shape ",
         shapeString(resultGradient), ", the gather's result ",
         shapeString(out));
}

LayerNormShape::LayerNormShape(const Shape &x, const Shape &scale,
                               const OpInfo &info) {
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = info.getInt("axis", -1);
  int64_t first = axis < 0 ? axis + rank : axis;
  if (first < 0 || first >= rank)
    fail(info.describe(), ": axis ", axis, " is out of range for input ",
         shapeString(x));
  Shape normalised(x.begin() + first, x.end());
  inner = numElements(normalised);
  outer = numElements(Shape(x.begin(), x.begin() + first));
  if (numElements(scale) != inner)
    fail(info.describe(), ": scale has shape ", shapeString(scale),
         ", expected ", shapeString(normalised), " for input ", shapeString(x),
         " and axis ", axis);
}

SegmentShape::SegmentShape(const OpInfo &info) : kind(info.getString("kind")) {
  if (kind != "sum" && kind != "mean" && kind != "max")
    fail(info.describe(), ": unknown kind '", kind, "' (sum, mean or max)");
}

Shape SegmentShape::output(const OpInfo &info, const std::vector<Shape> &in,
                           bool gradient) {
  const Shape &data = in[0];
  if (data.empty() || in[1].size() != 1)
    fail(info.describe(), ": data ", shapeString(data), " and offsets ",
         shapeString(in[1]), "; expected rows and 1-D offsets");
  width = numElements(Shape(data.begin() + 1, data.end()));
  Shape result = data;
  result[0] = in[1][0];
  if (gradient && in[2] != result)
    fail(info.describe(), ": the result gradient is ", shapeString(in[2]),
         ", expected ", shapeString(result));
  return gradient ? data : result;
}

BatchNormShape::BatchNormShape(const OpInfo &info, const Shape &x) : input(x) {
  if (x.size() < 2)
    fail(info.describe(), ": input must be N x C x ..., got ", shapeString(x));
  batch = x[0];
  channels = x[1];
  inner = numElements(Shape(x.begin() + 2, x.end()));
}

void BatchNormShape::expectChannels(const OpInfo &info, const char *what,
                                    const Shape &shape) const {
  if (shape != Shape{channels})
    fail(info.describe(), ": ", what, " has shape ", shapeString(shape),
         ", expected ", shapeString({channels}), " for input ",
         shapeString(input));
}

PoolShape::PoolShape(const OpInfo &info, const Shape &x) {
  expectSpatial(info, "input", x);
  size_t n = x.size() - 2;
  if (!info.has("kernel_shape"))
    fail(info.describe(), ": missing attribute 'kernel_shape'");
  Shape kernel = info.getInts("kernel_shape");
  if (kernel.size() != n)
    fail(info.describe(), ": kernel_shape has ", kernel.size(),
         " entries for the ", n, " spatial dimensions of input ",
         shapeString(x));
  window = readWindow(info, kernel, true);
  bool ceilMode = info.getBool("ceil_mode", false);
  output = {x[0], x[1]};
  for (size_t i = 0; i < n; ++i) {
    int64_t size = x[i + 2], k = window.kernel[i], s = window.strides[i];
    int64_t d = window.dilations[i];
    int64_t padBegin = window.padBegin[i], padEnd = window.padEnd[i];
    if (k > (int64_t(1) << 20) || d > (int64_t(1) << 20))
      fail(info.describe(), ": kernel ", k, " and dilation ", d,
           " must be at most 2^20");
    // The elements one window spans.
    int64_t extent = (k - 1) * d + 1;
    // A pad as wide as the window would make windows of padding alone,
    // which have no maximum and no average.
    if (padBegin >= extent || padEnd >= extent)
      fail(info.describe(), ": pads ", padBegin, "/", padEnd, " in dimension ",
           i + 2, " must be narrower than the ", "window of ", extent);
    int64_t span = size + padBegin + padEnd - extent;
    if (span < 0)
      fail(info.describe(), ": window of ", extent,
           " does not fit spatial size ", size, " (pads ", padBegin, "/",
           padEnd, ") in dimension ", i + 2, " of input ", shapeString(x));
    int64_t steps = ceilMode ? (span + s - 1) / s : span / s;
    // As in ONNX, PyTorch and the dialect's shape inference: the last window
    // must start inside the input or the leading padding.
    if (ceilMode && steps > 0 && steps * s >= size + padBegin)
      --steps;
    // A window that starts inside the input reads it. One that starts in
    // the leading padding reads its first tap at or after 0 (the pad is
    // narrower than the window), at the start's distance from the next
    // multiple of the dilation: with a dilation wider than the input that
    // tap can miss it. The distances repeat every d windows.
    int64_t leading = std::min((padBegin + s - 1) / s, steps + 1);
    for (int64_t o = 0; d > size && o < std::min(leading, d); ++o) {
      int64_t before = padBegin - o * s;
      int64_t firstTap = (d - before % d) % d;
      if (firstTap >= size)
        fail(info.describe(), ": window ", o, " of dimension ", i + 2,
             " reads only padding (input ", size, ", pads ", padBegin, "/",
             padEnd, ", kernel ", k, ", dilation ", d, ")");
    }
    output.push_back(steps + 1);
    padEndCeil.push_back(
        std::max(padEnd, steps * s + extent - size - padBegin));
  }
}

ConvShape::ConvShape(const OpInfo &info, const Shape &x, const Shape &w) {
  expectSpatial(info, "input", x);
  if (w.size() != x.size())
    fail(info.describe(), ": filter ", shapeString(w),
         " must have the rank of the input ", shapeString(x));
  group = info.getInt("group", 1);
  int64_t channels = x[1], features = w[0];
  if (group < 1 || features % group != 0 || w[1] * group != channels)
    fail(info.describe(), ": filter ", shapeString(w), " does not fit input ",
         shapeString(x), " with group ", group, ": expected M (a multiple of ",
         group, ") x ", (group >= 1 ? channels / group : channels),
         " x kernel...");
  window = readWindow(info, Shape(w.begin() + 2, w.end()), true);
  output = {x[0], features};
  for (size_t i = 0; i < window.kernel.size(); ++i) {
    int64_t extent = (window.kernel[i] - 1) * window.dilations[i] + 1;
    int64_t span = x[i + 2] + window.padBegin[i] + window.padEnd[i] - extent;
    if (span < 0)
      fail(info.describe(), ": dilated kernel of ", extent,
           " does not fit spatial size ", x[i + 2], " (pads ",
           window.padBegin[i], "/", window.padEnd[i], ") in dimension ", i + 2,
           " of input ", shapeString(x));
    output.push_back(span / window.strides[i] + 1);
  }
}

/// The output of heterps.conv_transpose for input `x` and filter `w`
/// (C x M/group x k...): the convolution of that output by `w` is `x`'s
/// shape, which convGeometry checks.
Shape cpu::convTransposeOutput(const OpInfo &info, const Shape &x,
                               const Shape &w) {
  expectSpatial(info, "input", x);
  if (w.size() != x.size() || w[0] != x[1])
    fail(info.describe(), ": filter ", shapeString(w), " does not fit input ",
         shapeString(x),
         ": expected C (the input's channels) x M/group x kernel...");
  size_t n = x.size() - 2;
  Window window = readWindow(info, Shape(w.begin() + 2, w.end()), true);
  Shape extra = info.getInts("output_padding", Shape(n, 0));
  if (extra.size() != n)
    fail(info.describe(), ": output_padding has ", extra.size(),
         " entries for ", n, " spatial dimensions");
  Shape out = {x[0], w[1] * info.getInt("group", 1)};
  for (size_t i = 0; i < n; ++i) {
    int64_t size = window.strides[i] * (x[i + 2] - 1) + extra[i] +
                   window.dilations[i] * (window.kernel[i] - 1) + 1 -
                   window.padBegin[i] - window.padEnd[i];
    if (x[i + 2] < 1 || size < 1 || extra[i] < 0 ||
        extra[i] >= std::max(window.strides[i], window.dilations[i]))
      fail(info.describe(), ": spatial dimension ", i, " of input ",
           shapeString(x), " gives an output of ", size, " (output_padding ",
           extra[i], ")");
    out.push_back(size);
  }
  return out;
}

ConcatShape::ConcatShape(const std::vector<Shape> &in, int64_t axisAttr,
                         const OpInfo &op) {
  out = in[0];
  axis = normalizeAxis(axisAttr, static_cast<int64_t>(out.size()), op);
  out[axis] = 0;
  for (const Shape &s : in) {
    if (s.size() != out.size())
      fail(op.describe(), ": inputs of different ranks");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != in[0][d])
        fail(op.describe(), ": input of shape ", shapeString(s),
             " does not match ", shapeString(in[0]), " outside the axis");
    out[axis] += s[axis];
  }
  for (int64_t d = 0; d < axis; ++d)
    outer *= out[d];
  for (const Shape &s : in) {
    int64_t elements = 1;
    for (size_t d = axis; d < s.size(); ++d)
      elements *= s[d];
    inner.push_back(elements);
  }
}

void ReducePlan::checkResults(const std::vector<Shape> &in,
                              const OpInfo &op) const {
  for (size_t i : {size_t(1), size_t(2)})
    if (numElements(in[i]) != numElements(kept))
      fail(op.describe(), ": operand ", i, " is ", shapeString(in[i]),
           ", reducing ", shapeString(input), " gives ", shapeString(kept));
}

void ReducePlan::init(const Shape &in, const std::vector<int64_t> &axes,
                      bool keepdims, const OpInfo &op) {
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

LossReduction cpu::lossReductionOf(const OpInfo &op) {
  std::string r = op.getString("reduction", "mean");
  if (r == "none")
    return LossReduction::None;
  if (r == "sum")
    return LossReduction::Sum;
  if (r != "mean")
    fail(op.describe(), ": unknown reduction '", r, "'");
  return LossReduction::Mean;
}

void heterps::runtime::registerCPUKernels(KernelRegistry &registry) {
  registerElementwiseKernels(registry);
  registerLinalgKernels(registry);
  registerShapeKernels(registry);
  registerLogicKernels(registry);
  registerReduceKernels(registry);
  registerLossKernels(registry);
  registerRecurrentKernels(registry);
  registerResizeKernels(registry);
  registerCNNKernels(registry);
}

void PadShape::compute(const Shape &in, const std::string &modeName,
                       const std::vector<int64_t> &pads, const OpInfo &info) {
  size_t rank = in.size();
  if (pads.size() != 2 * rank)
    fail(info.describe(), ": ", pads.size(), " pads for a rank-", rank,
         " input");
  if (modeName == "constant")
    mode = PadMode::Constant;
  else if (modeName == "reflect")
    mode = PadMode::Reflect;
  else if (modeName == "edge")
    mode = PadMode::Edge;
  else
    fail(info.describe(), ": unknown mode '", modeName, "'");
  out.assign(rank, 0);
  before.assign(pads.begin(), pads.begin() + rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t n = in[d], first = pads[d], after = pads[rank + d];
    if (first < 0 || after < 0 ||
        (mode == PadMode::Reflect && (first || after) &&
         (first >= n || after >= n)) ||
        (mode == PadMode::Edge && (first || after) && n == 0))
      fail(info.describe(), ": pads (", first, ", ", after, ") of dimension ",
           d, " of size ", n, " are out of range for mode ", modeName);
    out[d] = n + first + after;
  }
}

void ElementShape::compute(const OpInfo &info, int64_t axisAttr,
                           const Shape &data, const Shape &indices) {
  if (data.size() != indices.size())
    fail(info.describe(), ": indices ", shapeString(indices), " for data ",
         shapeString(data));
  axis = normalizeAxis(axisAttr, static_cast<int64_t>(data.size()), info);
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d])
      fail(info.describe(), ": indices ", shapeString(indices),
           " are larger than the data ", shapeString(data));
  dataStrides = stridesOf(data);
  indexStrides = stridesOf(indices);
  dimSize = data[axis];
}

Shape TupleShape::updatesShape(const Shape &data, const Shape &indices) {
  Shape updates(indices.begin(), indices.end() - (indices.empty() ? 0 : 1));
  if (!indices.empty() && indices.back() >= 1 &&
      indices.back() <= static_cast<int64_t>(data.size()))
    updates.insert(updates.end(), data.begin() + indices.back(), data.end());
  return updates;
}

void TupleShape::compute(const OpInfo &info, const Shape &data,
                         const Shape &indices, const Shape &updates) {
  if (indices.empty() || indices.back() < 1 ||
      indices.back() > static_cast<int64_t>(data.size()))
    fail(info.describe(), ": indices ", shapeString(indices),
         " must end in tuples of 1 to ", data.size(), " entries for data ",
         shapeString(data));
  k = indices.back();
  Shape expected = updatesShape(data, indices);
  if (updates != expected)
    fail(info.describe(), ": updates ", shapeString(updates), ", expected ",
         shapeString(expected), " (indices[:-1] + data[", k, ":])");
  dims.assign(data.begin(), data.begin() + k);
  strides = stridesOf(data);
  slice = numElements(Shape(data.begin() + k, data.end()));
}

std::string cpu::scatterReduction(const OpInfo &op, bool mulAllowed) {
  std::string reduction = op.getString("reduction", "none");
  if (reduction != "none" && reduction != "add" &&
      (!mulAllowed || reduction != "mul"))
    fail(op.describe(), ": reduction '", reduction,
         "' is not one of: none, add", (mulAllowed ? ", mul" : ""));
  return reduction;
}

ArgExtremeShape::ArgExtremeShape(const OpInfo &op)
    : isMax(op.getString("kind") == "max"),
      keepdims(op.getBool("keepdims", true)),
      last(op.getBool("select_last_index", false)),
      axisAttr(op.getInt("axis", 0)) {
  std::string kind = op.getString("kind");
  if (kind != "max" && kind != "min")
    fail(op.describe(), ": unknown kind '", kind, "' (max or min)");
}

Shape ArgExtremeShape::compute(const Shape &in, const OpInfo &info) {
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = normalizeAxis(axisAttr, rank, info);
  if (in[axis] == 0)
    fail(info.describe(), ": the axis has no elements");
  split.init(in, axis);
  Shape out = in;
  if (keepdims)
    out[axis] = 1;
  else
    out.erase(out.begin() + axis);
  return out;
}

TopKShape::TopKShape(const OpInfo &op)
    : k(op.getInt("k", 1)), axisAttr(op.getInt("axis", -1)),
      largest(op.getBool("largest", true)) {}

Shape TopKShape::compute(const Shape &in, const OpInfo &info) {
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = normalizeAxis(axisAttr, rank, info);
  if (k < 0 || k > in[axis])
    fail(info.describe(), ": k = ", k, " for an axis of ", in[axis],
         " elements");
  split.init(in, axis);
  Shape out = in;
  out[axis] = k;
  return out;
}
