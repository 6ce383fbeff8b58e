//===- ONNXTensor.cpp - Decoding ONNX TensorProto elements ----------------===//

#include "heterps/Support/ONNXTensor.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <sstream>
#include <type_traits>

using namespace heterps::onnx_tensor;
using onnx::TensorProto;

unsigned heterps::onnx_tensor::elementWidth(int32_t dataType) {
  switch (dataType) {
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::UINT64:
    return 8;
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    return 4;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
  case TensorProto::INT16:
  case TensorProto::UINT16:
    return 2;
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return 1;
  default:
    return 0;
  }
}

std::string heterps::onnx_tensor::dataTypeName(int32_t dataType) {
  if (TensorProto::DataType_IsValid(dataType))
    return TensorProto::DataType_Name(
        static_cast<TensorProto::DataType>(dataType));
  return "data type " + std::to_string(dataType);
}

namespace {

/// Packs a typed repeated field at `width` bytes per element, narrowing
/// each value as the spec stores it (the low bits).
template <typename Field>
void pack(const Field &field, unsigned width, std::string &out) {
  out.resize(static_cast<size_t>(field.size()) * width);
  char *p = out.data();
  for (int i = 0; i < field.size(); ++i, p += width) {
    auto v = field.Get(i);
    switch (width) {
    case 8: {
      uint64_t bits;
      static_assert(sizeof(v) <= 8);
      if constexpr (sizeof(v) == 8)
        std::memcpy(&bits, &v, 8);
      else
        bits = static_cast<uint64_t>(v);
      std::memcpy(p, &bits, 8);
      break;
    }
    case 4: {
      if constexpr (std::is_floating_point_v<decltype(v)> && sizeof(v) == 4) {
        std::memcpy(p, &v, 4);
      } else {
        uint32_t bits = static_cast<uint32_t>(v);
        std::memcpy(p, &bits, 4);
      }
      break;
    }
    case 2: {
      uint16_t bits = static_cast<uint16_t>(v);
      std::memcpy(p, &bits, 2);
      break;
    }
    default: {
      uint8_t bits = static_cast<uint8_t>(v);
      std::memcpy(p, &bits, 1);
    }
    }
  }
}

} // namespace

bool heterps::onnx_tensor::decodeTensor(const TensorProto &proto,
                                        const std::string_view *external,
                                        DecodedTensor &out,
                                        std::string &error) {
  std::ostringstream err;
  auto report = [&]() -> std::ostringstream & {
    err << "TensorProto '" << proto.name() << "'";
    return err;
  };
  auto done = [&]() {
    error = err.str();
    return false;
  };
  out = DecodedTensor();
  out.dataType = proto.data_type();
  out.width = elementWidth(out.dataType);
  if (out.width == 0) {
    report() << ": unsupported data type " << dataTypeName(out.dataType);
    return done();
  }
  // The element count first: dimensions may promise more than any data.
  int64_t elements = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) {
      report() << ": negative dimension " << d;
      return done();
    }
    if (d > 0 && elements > kMaxElements / d) {
      report() << ": its dimensions make more than 2^40 elements";
      return done();
    }
    elements *= d;
    out.dims.push_back(d);
  }
  out.elements = elements;
  uint64_t expected = static_cast<uint64_t>(elements) * out.width;
  auto shapeText = [&] {
    std::string s;
    for (int64_t d : out.dims)
      s += (s.empty() ? "" : "x") + std::to_string(d);
    return (s.empty() ? std::string("scalar") : s) + " " +
           dataTypeName(out.dataType);
  };

  if (proto.data_location() == TensorProto::EXTERNAL) {
    if (!external) {
      report() << ": external data is not supported here";
      return done();
    }
    if (external->size() != expected) {
      report() << " external data: expected " << expected << " bytes ("
               << shapeText() << "), found " << external->size();
      return done();
    }
    out.view = *external;
    return true;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != expected) {
      report() << " raw_data: expected " << expected << " bytes ("
               << shapeText() << "), found " << proto.raw_data().size();
      return done();
    }
    out.view = proto.raw_data();
    return true;
  }
  int64_t given;
  const char *field;
  switch (out.dataType) {
  case TensorProto::FLOAT:
    given = proto.float_data_size(), field = "float_data";
    break;
  case TensorProto::DOUBLE:
    given = proto.double_data_size(), field = "double_data";
    break;
  case TensorProto::INT64:
    given = proto.int64_data_size(), field = "int64_data";
    break;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    given = proto.uint64_data_size(), field = "uint64_data";
    break;
  default:
    given = proto.int32_data_size(), field = "int32_data";
  }
  if (given != elements) {
    report() << " " << field << ": expected " << elements << " elements ("
             << shapeText() << "), found " << given;
    return done();
  }
  switch (out.dataType) {
  case TensorProto::FLOAT:
    pack(proto.float_data(), 4, out.storage);
    break;
  case TensorProto::DOUBLE:
    pack(proto.double_data(), 8, out.storage);
    break;
  case TensorProto::INT64:
    pack(proto.int64_data(), 8, out.storage);
    break;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    pack(proto.uint64_data(), out.width, out.storage);
    break;
  default:
    pack(proto.int32_data(), out.width, out.storage);
  }
  out.packed = true;
  return true;
}
