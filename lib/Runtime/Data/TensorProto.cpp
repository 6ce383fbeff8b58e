//===- TensorProto.cpp - ONNX TensorProto files ---------------------------===//
//
// The format of ONNX's test data (test_data_set_N/input_M.pb). Reading
// decodes with the importer's decoder (heterps/Support/ONNXTensor.h:
// raw_data or the typed field the ONNX spec assigns to the data type);
// writing always uses raw_data. Data is little-endian, as on every host
// this runtime targets.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"
#include "heterps/Support/ONNXTensor.h"

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

Tensor heterps::runtime::readTensorProto(const std::string &path,
                                         std::string *name) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, ": cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  TensorProto proto;
  if (!proto.ParseFromString(bytes.str()))
    fail(path, ": not an ONNX TensorProto");
  onnx_tensor::DecodedTensor decoded;
  std::string error;
  if (!onnx_tensor::decodeTensor(proto, /*external=*/nullptr, decoded, error))
    fail(path, ": ", error);
  DType dtype = fromOnnx(proto.data_type());
  if (dtype == DType::Invalid)
    fail(path, ": TensorProto '", proto.name(), "': unsupported data type ",
         onnx_tensor::dataTypeName(proto.data_type()));
  Tensor t(dtype, Shape(decoded.dims.begin(), decoded.dims.end()));
  std::string_view data = decoded.bytes();
  if (!data.empty())
    std::memcpy(t.data(), data.data(), data.size());
  if (name)
    *name = proto.name();
  return t;
}

void heterps::runtime::writeTensorProto(const std::string &path,
                                        const std::string &name,
                                        const Tensor &tensor) {
  int type = toOnnx(tensor.dtype());
  if (type == TensorProto::UNDEFINED)
    fail(path, ": cannot write a tensor of type ", dtypeName(tensor.dtype()),
         " as a TensorProto");
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(type);
  for (int64_t d : tensor.shape())
    proto.add_dims(d);
  proto.set_raw_data(tensor.data(), tensor.byteSize());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    fail(path, ": cannot open for writing");
  if (!proto.SerializeToOstream(&out) || !out.flush())
    fail(path, ": write failed");
}
