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
    fail() << op.describe() << ": the GPU kernels take rank up to " << kMaxRank
           << ", got " << shapeString(out);
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

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_INDEXING_H
