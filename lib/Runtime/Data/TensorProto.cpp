//===- TensorProto.cpp - ONNX TensorProto files ---------------------------===//
//
// The format of ONNX's test data (test_data_set_N/input_M.pb). Reading takes
// raw_data or whichever typed field the ONNX spec assigns to the data type
// (int32_data also carries the 8- and 16-bit types and bool, uint64_data
// carries uint32); writing always uses raw_data. Data is little-endian, as
// on every host this runtime targets.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <cstring>
#include <fstream>
#include <onnx/onnx_pb.h>
#include <sstream>

using namespace heterps::runtime;

using onnx::TensorProto;

static DType fromOnnx(int type) {
  switch (type) {
  case TensorProto::FLOAT:
    return DType::F32;
  case TensorProto::DOUBLE:
    return DType::F64;
  case TensorProto::FLOAT16:
    return DType::F16;
  case TensorProto::BFLOAT16:
    return DType::BF16;
  case TensorProto::INT8:
    return DType::I8;
  case TensorProto::INT16:
    return DType::I16;
  case TensorProto::INT32:
    return DType::I32;
  case TensorProto::INT64:
    return DType::I64;
  case TensorProto::UINT8:
    return DType::U8;
  case TensorProto::UINT16:
    return DType::U16;
  case TensorProto::UINT32:
    return DType::U32;
  case TensorProto::UINT64:
    return DType::U64;
  case TensorProto::BOOL:
    return DType::Bool;
  default:
    return DType::Invalid;
  }
}

static int toOnnx(DType type) {
  switch (type) {
  case DType::F32:
    return TensorProto::FLOAT;
  case DType::F64:
    return TensorProto::DOUBLE;
  case DType::F16:
    return TensorProto::FLOAT16;
  case DType::BF16:
    return TensorProto::BFLOAT16;
  case DType::I8:
    return TensorProto::INT8;
  case DType::I16:
    return TensorProto::INT16;
  case DType::I32:
    return TensorProto::INT32;
  case DType::I64:
    return TensorProto::INT64;
  case DType::U8:
    return TensorProto::UINT8;
  case DType::U16:
    return TensorProto::UINT16;
  case DType::U32:
    return TensorProto::UINT32;
  case DType::U64:
    return TensorProto::UINT64;
  case DType::Bool:
    return TensorProto::BOOL;
  case DType::Invalid:
    break;
  }
  return TensorProto::UNDEFINED;
}

static std::string onnxTypeName(int type) {
  if (TensorProto::DataType_IsValid(type))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(type));
  return "data type " + std::to_string(type);
}

/// Copies a typed repeated field into `t`, narrowing each element to the
/// tensor's element type.
template <typename Dst, typename Field>
static void copyField(const Field &field, Tensor &t, const std::string &path,
                      const char *fieldName) {
  if (static_cast<int64_t>(field.size()) != t.numElements())
    fail() << path << ": TensorProto " << fieldName << ": expected "
           << t.numElements() << " elements (" << t.typeString() << "), found "
           << field.size();
  Dst *dst = t.as<Dst>();
  for (int i = 0; i < field.size(); ++i)
    dst[i] = static_cast<Dst>(field.Get(i));
}

Tensor heterps::runtime::readTensorProto(const std::string &path,
                                         std::string *name) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail() << path << ": cannot open";
  std::ostringstream bytes;
  bytes << in.rdbuf();
  TensorProto proto;
  if (!proto.ParseFromString(bytes.str()))
    fail() << path << ": not an ONNX TensorProto";
  if (proto.data_location() == TensorProto::EXTERNAL)
    fail() << path << ": TensorProto '" << proto.name()
           << "': external data is not supported";
  DType dtype = fromOnnx(proto.data_type());
  if (dtype == DType::Invalid)
    fail() << path << ": TensorProto '" << proto.name()
           << "': unsupported data type " << onnxTypeName(proto.data_type());
  Shape shape;
  // The element count, checked before anything is allocated: dimensions
  // whose product overflows, or that promise more than the file holds, are
  // refused.
  int64_t elements = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0)
      fail() << path << ": TensorProto '" << proto.name()
             << "': negative dimension " << d;
    if (d > 0 && elements > (int64_t(1) << 40) / d)
      fail() << path << ": TensorProto '" << proto.name()
             << "': its dimensions make more than 2^40 elements";
    elements *= d;
    shape.push_back(d);
  }
  uint64_t dataBytes = static_cast<uint64_t>(elements) * dtypeSize(dtype);
  if (proto.has_raw_data() && proto.raw_data().size() != dataBytes)
    fail() << path << ": TensorProto '" << proto.name()
           << "' raw_data: expected " << dataBytes << " bytes ("
           << Tensor::view(dtype, shape, nullptr).typeString() << "), found "
           << proto.raw_data().size();
  if (!proto.has_raw_data()) {
    // The typed field must hold every element before the tensor is
    // allocated: dimensions alone may promise 2^40 elements.
    int64_t given;
    const char *field;
    switch (dtype) {
    case DType::F32:
      given = proto.float_data_size(), field = "float_data";
      break;
    case DType::F64:
      given = proto.double_data_size(), field = "double_data";
      break;
    case DType::I64:
      given = proto.int64_data_size(), field = "int64_data";
      break;
    case DType::U32:
    case DType::U64:
      given = proto.uint64_data_size(), field = "uint64_data";
      break;
    default:
      given = proto.int32_data_size(), field = "int32_data";
      break;
    }
    if (given != elements)
      fail() << path << ": TensorProto '" << proto.name() << "' " << field
             << ": expected " << elements << " elements ("
             << Tensor::view(dtype, shape, nullptr).typeString() << "), found "
             << given;
  }
  Tensor t(dtype, shape);

  if (proto.has_raw_data()) {
    const std::string &raw = proto.raw_data();
    if (!raw.empty())
      std::memcpy(t.data(), raw.data(), raw.size());
  } else {
    switch (dtype) {
    case DType::F32:
      copyField<float>(proto.float_data(), t, path, "float_data");
      break;
    case DType::F64:
      copyField<double>(proto.double_data(), t, path, "double_data");
      break;
    case DType::I64:
      copyField<int64_t>(proto.int64_data(), t, path, "int64_data");
      break;
    case DType::U32:
      copyField<uint32_t>(proto.uint64_data(), t, path, "uint64_data");
      break;
    case DType::U64:
      copyField<uint64_t>(proto.uint64_data(), t, path, "uint64_data");
      break;
    case DType::I32:
      copyField<int32_t>(proto.int32_data(), t, path, "int32_data");
      break;
    case DType::I16:
      copyField<int16_t>(proto.int32_data(), t, path, "int32_data");
      break;
    case DType::I8:
      copyField<int8_t>(proto.int32_data(), t, path, "int32_data");
      break;
    // 16-bit floats travel as their bit patterns.
    case DType::U16:
    case DType::F16:
    case DType::BF16:
      copyField<uint16_t>(proto.int32_data(), t, path, "int32_data");
      break;
    case DType::U8:
    case DType::Bool:
      copyField<uint8_t>(proto.int32_data(), t, path, "int32_data");
      break;
    case DType::Invalid:
      break;
    }
  }
  if (name)
    *name = proto.name();
  return t;
}

void heterps::runtime::writeTensorProto(const std::string &path,
                                        const std::string &name,
                                        const Tensor &tensor) {
  int type = toOnnx(tensor.dtype());
  if (type == TensorProto::UNDEFINED)
    fail() << path << ": cannot write a tensor of type "
           << dtypeName(tensor.dtype()) << " as a TensorProto";
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(type);
  for (int64_t d : tensor.shape())
    proto.add_dims(d);
  proto.set_raw_data(tensor.data(), tensor.byteSize());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    fail() << path << ": cannot open for writing";
  if (!proto.SerializeToOstream(&out) || !out.flush())
    fail() << path << ": write failed";
}
