//===- Tensor.cpp - Runtime tensors ---------------------------------------===//

#include "heterps/Runtime/Tensor.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Support/CheckedMath.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

using namespace heterps::runtime;

size_t heterps::runtime::dtypeSize(DType t) {
  switch (t) {
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  case DType::Invalid:
    return 0;
  }
  return 0;
}

const char *heterps::runtime::dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::U8:
    return "ui8";
  case DType::U16:
    return "ui16";
  case DType::U32:
    return "ui32";
  case DType::U64:
    return "ui64";
  case DType::Bool:
    return "i1";
  case DType::Invalid:
    return "invalid";
  }
  return "invalid";
}

bool heterps::runtime::isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 ||
         t == DType::BF16;
}

int64_t heterps::runtime::numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    std::optional<int64_t> next = checkedMul(n, d);
    if (!next)
      fail("a tensor of shape ", shapeString(shape),
           " has more elements than 64 bits count");
    n = *next;
  }
  return n;
}

std::string heterps::runtime::shapeString(const Shape &shape) {
  std::ostringstream os;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      os << 'x';
    if (shape[i] < 0)
      os << '?';
    else
      os << shape[i];
  }
  return os.str();
}

static std::shared_ptr<void> allocateAligned(size_t bytes) {
  size_t rounded = ((bytes + 63) / 64) * 64;
  void *p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p)
    fail("out of memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded ? rounded : 64);
  return std::shared_ptr<void>(p, std::free);
}

Tensor::Tensor(DType dtype, Shape shape) { resize(dtype, shape); }

Tensor Tensor::view(DType dtype, Shape shape, void *data, MemorySpace space) {
  Tensor t;
  t.reset(dtype, shape, data);
  t.memorySpace = space;
  return t;
}

Tensor Tensor::adopt(DType dtype, Shape shape, std::shared_ptr<void> buffer,
                     size_t capacity, MemorySpace space) {
  Tensor t;
  t.type = dtype;
  t.dims = std::move(shape);
  if (t.byteSize() > capacity)
    fail("a buffer of ", capacity, " bytes cannot hold ", t.typeString());
  t.owned = std::move(buffer);
  t.ptr = t.owned.get();
  t.capacity = capacity;
  t.memorySpace = space;
  return t;
}

void Tensor::reset(DType dtype, const Shape &shape, void *data) {
  type = dtype;
  if (dims != shape)
    dims = shape;
  ptr = data;
}

void Tensor::resize(DType dtype, const Shape &shape) {
  type = dtype;
  if (dims != shape)
    dims = shape;
  size_t bytes = byteSize();
  if (memorySpace == MemorySpace::Device && bytes > capacity)
    fail("device tensor ", typeString(), " needs ", bytes,
         " bytes, its buffer has ", capacity);
  if (!owned || bytes > capacity) {
    owned = allocateAligned(bytes);
    capacity = bytes;
  }
  ptr = owned.get();
}

Tensor Tensor::clone() const {
  if (memorySpace == MemorySpace::Device)
    fail("clone() of device tensor ", typeString(),
         ": copy it to the host through the GPU column");
  Tensor t(type, dims);
  if (byteSize())
    std::memcpy(t.data(), ptr, byteSize());
  return t;
}

std::string Tensor::typeString() const {
  return "tensor<" + (dims.empty() ? std::string() : shapeString(dims) + "x") +
         dtypeName(type) + ">";
}

float heterps::runtime::halfToFloat(uint16_t h, bool bf16) {
  uint32_t bits;
  if (bf16) {
    bits = uint32_t(h) << 16;
  } else {
    uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f,
             mant = h & 0x3ff;
    if (exp == 0x1f) {
      bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp) {
      bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant) {
      exp = 113;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    } else {
      bits = sign;
    }
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t heterps::runtime::floatToHalf(float f, bool bf16) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if (bf16) {
    if (std::isnan(f))
      return uint16_t((bits >> 16) | 0x40);
    return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) // inf or NaN
    return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
  if (abs >= 0x477ff000u) // rounds to beyond 65504
    return sign | 0x7c00;
  if (abs < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    if (abs < 0x33000000u)
      return sign;
    uint32_t exp = abs >> 23, mant = (abs & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - exp; // 14..24
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1),
             mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1)))
      ++half;
    return sign | uint16_t(half);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return sign | uint16_t((rounded - 0x38000000u) >> 13);
}
