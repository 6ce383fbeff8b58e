//===- CheckedMath.h - Size arithmetic on untrusted numbers -----*- C++ -*-===//
//
// Dimensions, counts and offsets read from models, plans, checkpoints and
// requests are multiplied and added before anything is allocated; these
// helpers say when the result does not fit instead of wrapping (signed
// overflow is undefined behaviour). Header-only, used by the compiler, the
// runtime and the PS alike.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_CHECKEDMATH_H
#define HETERPS_SUPPORT_CHECKEDMATH_H

#include <cstdint>
#include <optional>

namespace heterps {

/// a * b, or std::nullopt when it does not fit in int64_t.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// a + b, or std::nullopt when it does not fit in int64_t.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// The product of `dims`, or std::nullopt when a dimension is negative or
/// the product does not fit in int64_t.
template <typename Range>
std::optional<int64_t> checkedProduct(const Range &dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    std::optional<int64_t> next = d < 0 ? std::nullopt : checkedMul(n, d);
    if (!next)
      return std::nullopt;
    n = *next;
  }
  return n;
}

} // namespace heterps

#endif // HETERPS_SUPPORT_CHECKEDMATH_H
