//===- DropoutMask.h - Which elements a dropout keeps -----------*- C++ -*-===//
//
// A dropout's mask is a hash of (seed, step, dropout id, element), so that
// its gradient redraws the forward's mask without storing it, and so that
// the CPU and GPU columns, which both call this function, drop the same
// elements.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_DROPOUTMASK_H
#define HETERPS_LIB_RUNTIME_CPU_DROPOUTMASK_H

#include "../HostDevice.h"

#include <cstdint>

namespace heterps::runtime {

/// Whether element `i` of dropout `id` survives step `step` at drop
/// probability `ratio` (splitmix64 of the four, as a uniform double).
HETERPS_HD inline bool dropoutKeeps(uint64_t seed, int64_t step, int64_t id,
                                    int64_t i, double ratio) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(step) << 20) ^
               (static_cast<uint64_t>(id) << 52) ^ static_cast<uint64_t>(i);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  double u = static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
  return u >= ratio;
}

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_CPU_DROPOUTMASK_H
