//===- ONNXTensor.h - Decoding ONNX TensorProto elements --------*- C++ -*-===//
//
// One decoder of an ONNX TensorProto's elements for the importer (its
// initializers and constants) and the runtime (tensor files fed to
// heterps-run): the element count checked against the dimensions before
// anything is allocated, and the data taken from raw_data, from external
// data the caller read, or from the typed field the ONNX spec assigns to
// the data type (int32_data carries the 8- and 16-bit types and bool,
// uint64_data carries uint32), packed little-endian at the type's width.
// It includes neither MLIR nor the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_ONNXTENSOR_H
#define HETERPS_SUPPORT_ONNXTENSOR_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace heterps::onnx_tensor {

/// The most elements a decoded tensor may have.
constexpr int64_t kMaxElements = int64_t(1) << 40;

/// Bytes per element of ONNX data type `dataType`
/// (onnx::TensorProto::DataType); 0 for the types without a fixed width
/// (strings, complex numbers, undefined).
unsigned elementWidth(int32_t dataType);

/// ONNX's name of a data type ("FLOAT", "INT64"), or its number.
std::string dataTypeName(int32_t dataType);

/// A TensorProto's elements.
class DecodedTensor {
public:
  int32_t dataType = 0;
  std::vector<int64_t> dims;
  int64_t elements = 0;
  unsigned width = 0;

  /// elements * width bytes, little-endian: a view of the proto's raw_data
  /// or of the external bytes when it had them, else packed from the typed
  /// field. Valid while the proto (or the external bytes) lives.
  std::string_view bytes() const {
    return packed ? std::string_view(storage) : view;
  }

private:
  friend bool decodeTensor(const onnx::TensorProto &, const std::string_view *,
                           DecodedTensor &, std::string &);
  std::string_view view;
  std::string storage;
  bool packed = false;
};

/// Decodes `proto`. A tensor whose data_location is EXTERNAL takes its
/// bytes from `external` (which the caller read; null: refused). On a bad
/// tensor returns false with `error` saying what is wrong, starting with
/// "TensorProto '<name>'".
bool decodeTensor(const onnx::TensorProto &proto,
                  const std::string_view *external, DecodedTensor &out,
                  std::string &error);

} // namespace heterps::onnx_tensor

#endif // HETERPS_SUPPORT_ONNXTENSOR_H
