//===- Wire.cpp - Rows on the wire: f32, f16 or bf16 ----------------------===//

#include "heterps/PS/Wire.h"

#include <cstring>

using namespace heterps;
using namespace heterps::ps;

uint16_t ps::floatToHalf(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  uint32_t sign = (f >> 16) & 0x8000;
  uint32_t exponent = (f >> 23) & 0xff;
  uint32_t mantissa = f & 0x7fffff;
  if (exponent == 0xff) // Inf or NaN (a NaN stays a NaN).
    return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
  if (e >= 31)
    return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {
    // Subnormal half, or zero.
    if (e < -10)
      return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  // Round to nearest, ties to even; a carry into the exponent is right.
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

float ps::halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t f;
  if (exponent == 0x1f) {
    f = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      f = sign;
    } else {
      // Subnormal: normalise.
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while (!(mantissa & 0x400));
      f = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
          ((mantissa & 0x3ff) << 13);
    }
  } else {
    f = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &f, 4);
  return value;
}

uint16_t ps::floatToBFloat16(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  if ((f & 0x7f800000) == 0x7f800000 && (f & 0x7fffff))
    return static_cast<uint16_t>((f >> 16) | 0x40); // a quiet NaN
  uint32_t rounding = 0x7fff + ((f >> 16) & 1);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

float ps::bfloat16ToFloat(uint16_t bits) {
  uint32_t f = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &f, 4);
  return value;
}

size_t ps::wireBytes(v1::Wire wire, size_t count) {
  return count * (wire == v1::WIRE_F32 ? 4 : 2);
}

void ps::encodeFloats(v1::Wire wire, const float *values, size_t count,
                      std::string *out) {
  out->resize(wireBytes(wire, count));
  if (wire == v1::WIRE_F32) {
    if (count)
      std::memcpy(out->data(), values, count * 4);
    return;
  }
  char *p = out->data();
  for (size_t i = 0; i < count; ++i) {
    uint16_t h = wire == v1::WIRE_F16 ? floatToHalf(values[i])
                                      : floatToBFloat16(values[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

bool ps::decodeFloats(v1::Wire wire, const std::string &bytes, size_t count,
                      float *values) {
  if (bytes.size() != wireBytes(wire, count))
    return false;
  if (wire == v1::WIRE_F32) {
    if (count)
      std::memcpy(values, bytes.data(), bytes.size());
    return true;
  }
  const char *p = bytes.data();
  for (size_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    values[i] = wire == v1::WIRE_F16 ? halfToFloat(h) : bfloat16ToFloat(h);
  }
  return true;
}

bool ps::parseWire(const std::string &name, v1::Wire *wire) {
  if (name == "f32")
    *wire = v1::WIRE_F32;
  else if (name == "f16")
    *wire = v1::WIRE_F16;
  else if (name == "bf16")
    *wire = v1::WIRE_BF16;
  else
    return false;
  return true;
}
