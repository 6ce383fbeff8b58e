//===- LineWalks.h - Walks along one line of a tensor -----------*- C++ -*-===//
//
// One line along an axis: `dim` elements `stride` apart. Both columns'
// cumsum and arg_extreme walk their lines with these; the GPU's kernels give
// a line (top_k_indices: an element of a line) to a thread. nvcc compiles
// them for the device, a host compiler for the host, so that the unit tests
// hold the GPU's top k against the CPU's sort on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_LINEWALKS_H
#define HETERPS_LIB_RUNTIME_CPU_LINEWALKS_H

#include "../HostDevice.h"
#include "KernelUtil.h"

#include <cstdint>

namespace heterps::runtime::cpu {

/// A tensor's lines along an axis (AxisSplit's [outer, dim, inner]), passed
/// to kernels by value.
struct Lines {
  int64_t outer, dim, inner;
  HETERPS_HD int64_t count() const { return outer * inner; }
  /// The first element of line `l` (its elements are `inner` apart).
  HETERPS_HD int64_t base(int64_t l) const {
    return (l / inner) * dim * inner + l % inner;
  }
  /// Where place `r` of line `l` goes in a result of `places` per line
  /// (top_k_indices' k).
  HETERPS_HD int64_t place(int64_t l, int64_t r, int64_t places) const {
    return ((l / inner) * places + r) * inner + l % inner;
  }
};

/// The running sums of a line into `y` (same layout), in the CPU's order.
template <typename T>
HETERPS_HD inline void cumulativeSumOfLine(const T *x, T *y, int64_t dim,
                                           int64_t stride, bool exclusive,
                                           bool reverse) {
  T sum = T(0);
  for (int64_t step = 0; step < dim; ++step) {
    int64_t at = (reverse ? dim - 1 - step : step) * stride;
    T v = x[at];
    if (exclusive) {
      y[at] = sum;
      sum += v;
    } else {
      sum += v;
      y[at] = sum;
    }
  }
}

/// The position of a line's maximum or minimum (argExtremeMoves' rule).
template <typename T>
HETERPS_HD inline int64_t argExtremeOfLine(const T *x, int64_t dim,
                                           int64_t stride, bool isMax,
                                           bool last) {
  int64_t best = 0;
  for (int64_t d = 1; d < dim; ++d)
    if (argExtremeMoves(x[d * stride], x[best * stride], isMax, last))
      best = d;
  return best;
}

/// How many elements of a line come before element `d` in topKPrecedes'
/// order, counted up to `k` (an element at k or beyond is not among the
/// top k, whatever its rank).
template <typename T>
HETERPS_HD inline int64_t topKRank(const T *x, int64_t dim, int64_t stride,
                                   int64_t d, int64_t k, bool largest) {
  T v = x[d * stride];
  int64_t rank = 0;
  for (int64_t other = 0; other < dim && rank < k; ++other)
    if (topKPrecedes(x[other * stride], v, other, d, largest))
      ++rank;
  return rank;
}

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_LINEWALKS_H
