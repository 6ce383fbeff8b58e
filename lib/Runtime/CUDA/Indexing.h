//===- Indexing.h - Flat indices read through strides -----------*- C++ -*-===//
//
// How the GPU kernels find an operand's element for an element of their
// result: the result's flat index, split along its shape (the last
// dimension fastest), read through the operand's strides (0 along a
// broadcast dimension). nvcc compiles it for the device, a host compiler
// for the host, so that the unit tests hold it against the CPU column's
// odometer (forEachBroadcast) on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_INDEXING_H
#define HETERPS_LIB_RUNTIME_CUDA_INDEXING_H

#include "../HostDevice.h"

#include "../CPU/KernelUtil.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/OpInfo.h"

#include <cstdint>
#include <vector>

namespace heterps::runtime::cuda {

/// The ranks the broadcasting, strided and reduction kernels take.
constexpr int kMaxRank = 8;

/// A shape and the strides of up to two operands read along it, passed to
/// kernels by value.
struct Indexing {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a[kMaxRank] = {};
  int64_t b[kMaxRank] = {};
};

/// The Indexing of `out` read through strides `sa` and `sb` (0 along
/// broadcast dimensions); throws naming `op` above kMaxRank.
inline Indexing makeIndexing(const Shape &out, const std::vector<int64_t> &sa,
                             const std::vector<int64_t> &sb, const OpInfo &op) {
  if (out.size() > static_cast<size_t>(kMaxRank))
    fail(op.describe(), ": the GPU kernels take rank up to ", kMaxRank,
         ", got ", shapeString(out));
  Indexing ix;
  ix.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    ix.dims[d] = out[d];
    ix.a[d] = d < sa.size() ? sa[d] : 0;
    ix.b[d] = d < sb.size() ? sb[d] : 0;
  }
  return ix;
}

/// The Indexing of operands of shapes `a` and `b` read along their NumPy
/// broadcast, which it stores in `out`; throws naming `op` when they do
/// not broadcast.
inline Indexing broadcastIndexing(const Shape &a, const Shape &b, Shape &out,
                                  const OpInfo &op) {
  out = cpu::broadcastShapes(a, b, op);
  return makeIndexing(out, cpu::broadcastStrides(a, out),
                      cpu::broadcastStrides(b, out), op);
}

/// The offsets in operands a and b of element `flat` of the shape.
HETERPS_HD inline void offsetsOf(int64_t flat, const Indexing &ix, int64_t &a,
                                 int64_t &b) {
  a = 0;
  b = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    int64_t coordinate = flat % ix.dims[d];
    flat /= ix.dims[d];
    a += coordinate * ix.a[d];
    b += coordinate * ix.b[d];
  }
}

/// The offset in operand a of element `flat` of the shape.
HETERPS_HD inline int64_t offsetOf(int64_t flat, const Indexing &ix) {
  int64_t offset = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    offset += (flat % ix.dims[d]) * ix.a[d];
    flat /= ix.dims[d];
  }
  return offset;
}

/// heterps.pad's addressing: an output element's input element.
struct PadAddressing {
  int rank = 0;
  cpu::PadMode mode = cpu::PadMode::Constant;
  int64_t outDims[kMaxRank] = {};
  int64_t inDims[kMaxRank] = {};
  int64_t before[kMaxRank] = {};
  int64_t inStrides[kMaxRank] = {};
};

inline PadAddressing
makePadAddressing(const Shape &in, const cpu::PadShape &pad, const OpInfo &op) {
  Indexing checked = makeIndexing(pad.out, {}, {}, op);
  PadAddressing a;
  a.rank = checked.rank;
  a.mode = pad.mode;
  std::vector<int64_t> strides = cpu::stridesOf(in);
  for (int d = 0; d < a.rank; ++d) {
    a.outDims[d] = pad.out[d];
    a.inDims[d] = in[d];
    a.before[d] = pad.before[d];
    a.inStrides[d] = strides[d];
  }
  return a;
}

/// The input offset that output element `flat` copies, or -1 for the
/// constant.
HETERPS_HD inline int64_t padInputOffset(int64_t flat, const PadAddressing &a) {
  int64_t offset = 0;
  bool constant = false;
  for (int d = a.rank - 1; d >= 0; --d) {
    int64_t i =
        cpu::padSource(flat % a.outDims[d], a.inDims[d], a.before[d], a.mode);
    flat /= a.outDims[d];
    constant = constant || i < 0;
    offset += i * a.inStrides[d];
  }
  return constant ? -1 : offset;
}

/// gather_elements' and scatter_elements' addressing: the data element an
/// index names (ElementShape, with the rank bounded for a kernel argument).
struct ElementAddressing {
  int rank = 0, axis = 0;
  int64_t dimSize = 0;
  int64_t indexStrides[kMaxRank] = {};
  int64_t dataStrides[kMaxRank] = {};
};

inline ElementAddressing makeElementAddressing(const Shape &data,
                                               const cpu::ElementShape &shape,
                                               const OpInfo &op) {
  Indexing checked = makeIndexing(data, {}, {}, op);
  ElementAddressing a;
  a.rank = checked.rank;
  a.axis = static_cast<int>(shape.axis);
  a.dimSize = shape.dimSize;
  for (int d = 0; d < a.rank; ++d) {
    a.indexStrides[d] = shape.indexStrides[d];
    a.dataStrides[d] = shape.dataStrides[d];
  }
  return a;
}

/// The data offset that the index `value` at position `p` of the indices
/// names, or -1 when the value is out of range (negative values count from
/// the end of the axis).
HETERPS_HD inline int64_t elementOffset(int64_t p, int64_t value,
                                        const ElementAddressing &a) {
  if (value < 0)
    value += a.dimSize;
  if (value < 0 || value >= a.dimSize)
    return -1;
  int64_t offset = 0;
  for (int d = 0; d < a.rank; ++d) {
    int64_t c = p / a.indexStrides[d];
    p %= a.indexStrides[d];
    offset += (d == a.axis ? value : c) * a.dataStrides[d];
  }
  return offset;
}

/// scatter_nd's addressing: the data slice an index tuple names
/// (TupleShape, with k bounded for a kernel argument).
struct TupleAddressing {
  int k = 1;
  int64_t slice = 1;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

inline TupleAddressing makeTupleAddressing(const cpu::TupleShape &shape,
                                           const OpInfo &op) {
  if (shape.k > kMaxRank)
    fail(op.describe(), ": the GPU kernels take index tuples of up to ",
         kMaxRank, " entries, got ", shape.k);
  TupleAddressing a;
  a.k = static_cast<int>(shape.k);
  a.slice = shape.slice;
  for (int d = 0; d < a.k; ++d) {
    a.dims[d] = shape.dims[d];
    a.strides[d] = shape.strides[d];
  }
  return a;
}

/// The data offset of the slice that `tuple` names, or -1 with `badEntry`
/// set to the first entry out of range.
template <typename I>
HETERPS_HD inline int64_t tupleOffset(const I *tuple, const TupleAddressing &a,
                                      int &badEntry) {
  int64_t offset = 0;
  for (int d = 0; d < a.k; ++d) {
    int64_t at = static_cast<int64_t>(tuple[d]);
    if (at < 0)
      at += a.dims[d];
    if (at < 0 || at >= a.dims[d]) {
      badEntry = d;
      return -1;
    }
    offset += at * a.strides[d];
  }
  return offset;
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_INDEXING_H
