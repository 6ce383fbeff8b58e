//===- Tensor.cpp - Runtime tensors ---------------------------------------===//

#include "heterps/Runtime/Tensor.h"

#include "heterps/Runtime/Error.h"

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
  for (int64_t d : shape)
    n *= d;
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
    fail() << "out of memory allocating " << bytes << " bytes";
  std::memset(p, 0, rounded ? rounded : 64);
  return std::shared_ptr<void>(p, std::free);
}

Tensor::Tensor(DType dtype, Shape shape) { resize(dtype, shape); }

Tensor Tensor::view(DType dtype, Shape shape, void *data) {
  Tensor t;
  t.reset(dtype, shape, data);
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
  if (!owned || bytes > capacity) {
    owned = allocateAligned(bytes);
    capacity = bytes;
  }
  ptr = owned.get();
}

Tensor Tensor::clone() const {
  Tensor t(type, dims);
  if (byteSize())
    std::memcpy(t.data(), ptr, byteSize());
  return t;
}

std::string Tensor::typeString() const {
  return "tensor<" + (dims.empty() ? std::string() : shapeString(dims) + "x") +
         dtypeName(type) + ">";
}
