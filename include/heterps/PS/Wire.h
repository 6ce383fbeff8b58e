//===- Wire.h - Rows on the wire: f32, f16 or bf16 --------------*- C++ -*-===//
//
// Rows and gradients may travel as 16-bit floats (`--ps-wire=f16|bf16`),
// halving the bytes of a pull or push; servers and workers compute in f32.
// f16 keeps 11 bits of mantissa within +-65504 and loses values below
// about 6e-5 to subnormals and zero; bf16 keeps f32's range with 8 bits of
// mantissa. Both round to nearest, ties to even (the runtime's
// floatToHalf and halfToFloat convert). With f16, clients send pushes
// (small gradients) as bf16.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_WIRE_H
#define HETERPS_PS_WIRE_H

#include "heterps/ps.pb.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace heterps::ps {

/// Bytes of `count` floats in `wire`'s format.
size_t wireBytes(v1::Wire wire, size_t count);
/// `count` floats as `wire`'s bytes, into `out` (resized).
void encodeFloats(v1::Wire wire, const float *values, size_t count,
                  std::string *out);
/// `count` floats as `wire`'s bytes, into wireBytes(wire, count) bytes at
/// `out`.
void encodeFloats(v1::Wire wire, const float *values, size_t count, char *out);
/// Decodes `bytes` into `count` floats; false when its size is not
/// wireBytes(wire, count).
bool decodeFloats(v1::Wire wire, const std::string &bytes, size_t count,
                  float *values);
/// Decodes the wireBytes(wire, count) bytes at `bytes` into `count` floats.
void decodeFloats(v1::Wire wire, const char *bytes, size_t count,
                  float *values);
/// Decodes the wireBytes(wire, n * dim) bytes at `bytes`, n rows of `dim`
/// floats, into `rows`: row j at row j, or with `rowIndex` at row
/// rowIndex[j].
void decodeRows(v1::Wire wire, const char *bytes, size_t n, uint32_t dim,
                float *rows, const uint32_t *rowIndex);
/// "f32", "f16" or "bf16" as a Wire; false for anything else.
bool parseWire(const std::string &name, v1::Wire *wire);

} // namespace heterps::ps

#endif // HETERPS_PS_WIRE_H
