//===- Wire.cpp - Rows on the wire: f32, f16 or bf16 ----------------------===//

#include "heterps/PS/Wire.h"

#include "heterps/Runtime/Tensor.h"

#include <cstring>

using namespace heterps;
using namespace heterps::ps;

size_t ps::wireBytes(v1::Wire wire, size_t count) {
  return count * (wire == v1::WIRE_F32 ? 4 : 2);
}

void ps::encodeFloats(v1::Wire wire, const float *values, size_t count,
                      std::string *out) {
  out->resize(wireBytes(wire, count));
  encodeFloats(wire, values, count, out->data());
}

void ps::encodeFloats(v1::Wire wire, const float *values, size_t count,
                      char *p) {
  if (wire == v1::WIRE_F32) {
    if (count)
      std::memcpy(p, values, count * 4);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    uint16_t h = runtime::floatToHalf(values[i], wire == v1::WIRE_BF16);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

bool ps::decodeFloats(v1::Wire wire, const std::string &bytes, size_t count,
                      float *values) {
  if (bytes.size() != wireBytes(wire, count))
    return false;
  decodeFloats(wire, bytes.data(), count, values);
  return true;
}

void ps::decodeFloats(v1::Wire wire, const char *p, size_t count,
                      float *values) {
  if (wire == v1::WIRE_F32) {
    if (count)
      std::memcpy(values, p, count * 4);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    values[i] = runtime::halfToFloat(h, wire == v1::WIRE_BF16);
  }
}

void ps::decodeRows(v1::Wire wire, const char *bytes, size_t n, uint32_t dim,
                    float *rows, const uint32_t *rowIndex) {
  if (!rowIndex) {
    decodeFloats(wire, bytes, n * dim, rows);
    return;
  }
  size_t rowBytes = wireBytes(wire, dim);
  for (size_t j = 0; j < n; ++j)
    decodeFloats(wire, bytes + j * rowBytes, dim,
                 rows + static_cast<size_t>(rowIndex[j]) * dim);
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
