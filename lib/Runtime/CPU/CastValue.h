//===- CastValue.h - One element of heterps.cast ----------------*- C++ -*-===//
//
// The conversion both kernel columns apply, as a function that nvcc
// compiles for the device and a host compiler for the host: a cast to bool
// is whether the value is nonzero (NaN and the infinities are, as in ONNX,
// NumPy and PyTorch); a float cast to an integer drops its fraction and is
// clamped to the integer's range, NaN giving 0 (C++ leaves both undefined,
// and x86 and the GPU would disagree); every other cast converts.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_CASTVALUE_H
#define HETERPS_LIB_RUNTIME_CPU_CASTVALUE_H

#include "../HostDevice.h"

#include <cstdint>
#include <type_traits>

namespace heterps::runtime {

template <typename To, typename From> HETERPS_HD inline To castValue(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<From>) {
    double v = static_cast<double>(x);
    if (v != v)
      return To(0);
    // The integer's range, written out: std::numeric_limits is not usable
    // in device code.
    constexpr int bits = 8 * sizeof(To);
    constexpr To high = std::is_signed_v<To>
                            ? To((uint64_t(1) << (bits - 1)) - 1)
                            : To(~uint64_t(0));
    constexpr To low = std::is_signed_v<To> ? To(-high - 1) : To(0);
    if (v >= static_cast<double>(high))
      return high;
    if (v <= static_cast<double>(low))
      return low;
    return static_cast<To>(v);
  } else {
    return static_cast<To>(x);
  }
}

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_CPU_CASTVALUE_H
