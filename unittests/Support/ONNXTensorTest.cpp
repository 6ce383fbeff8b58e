//===- ONNXTensorTest.cpp - The shared TensorProto decoder ----------------===//

#include "heterps/Support/ONNXTensor.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstring>

using namespace heterps::onnx_tensor;
using onnx::TensorProto;

namespace {

template <typename T> std::vector<T> valuesOf(const DecodedTensor &d) {
  std::vector<T> v(d.elements);
  std::memcpy(v.data(), d.bytes().data(), d.bytes().size());
  return v;
}

TEST(ONNXTensor, RawDataIsAViewOfTheProto) {
  TensorProto p;
  p.set_name("x");
  p.set_data_type(TensorProto::FLOAT);
  p.add_dims(2);
  float values[2] = {1.5f, -2.0f};
  p.set_raw_data(std::string(reinterpret_cast<char *>(values), 8));
  DecodedTensor d;
  std::string error;
  ASSERT_TRUE(decodeTensor(p, nullptr, d, error)) << error;
  EXPECT_EQ(d.bytes().data(), p.raw_data().data());
  EXPECT_EQ(valuesOf<float>(d), (std::vector<float>{1.5f, -2.0f}));
}

TEST(ONNXTensor, TypedFieldsPackAtTheTypesWidth) {
  // int32_data carries the narrow types, uint64_data uint32.
  TensorProto i8;
  i8.set_data_type(TensorProto::INT8);
  i8.add_dims(3);
  for (int v : {-5, 7, 127})
    i8.add_int32_data(v);
  DecodedTensor d;
  std::string error;
  ASSERT_TRUE(decodeTensor(i8, nullptr, d, error)) << error;
  EXPECT_EQ(d.width, 1u);
  EXPECT_EQ(valuesOf<int8_t>(d), (std::vector<int8_t>{-5, 7, 127}));

  TensorProto u32;
  u32.set_data_type(TensorProto::UINT32);
  u32.add_dims(2);
  u32.add_uint64_data(4000000000u);
  u32.add_uint64_data(1);
  ASSERT_TRUE(decodeTensor(u32, nullptr, d, error)) << error;
  EXPECT_EQ(valuesOf<uint32_t>(d), (std::vector<uint32_t>{4000000000u, 1}));

  TensorProto f64;
  f64.set_data_type(TensorProto::DOUBLE);
  f64.add_double_data(0.25);
  ASSERT_TRUE(decodeTensor(f64, nullptr, d, error)) << error;
  EXPECT_TRUE(d.dims.empty());
  EXPECT_EQ(valuesOf<double>(d), (std::vector<double>{0.25}));
}

TEST(ONNXTensor, SizesAreCheckedBeforeUse) {
  DecodedTensor d;
  std::string error;
  TensorProto huge;
  huge.set_name("huge");
  huge.set_data_type(TensorProto::FLOAT);
  huge.add_dims(int64_t(1) << 40);
  huge.add_dims(int64_t(1) << 40);
  huge.set_raw_data("1234");
  EXPECT_FALSE(decodeTensor(huge, nullptr, d, error));
  EXPECT_EQ(error, "TensorProto 'huge': its dimensions make more than 2^40 "
                   "elements");

  TensorProto lie;
  lie.set_name("lie");
  lie.set_data_type(TensorProto::INT64);
  lie.add_dims(3);
  lie.add_int64_data(1);
  EXPECT_FALSE(decodeTensor(lie, nullptr, d, error));
  EXPECT_EQ(error, "TensorProto 'lie' int64_data: expected 3 elements (3 "
                   "INT64), found 1");

  TensorProto negative;
  negative.set_name("n");
  negative.set_data_type(TensorProto::FLOAT);
  negative.add_dims(-1);
  EXPECT_FALSE(decodeTensor(negative, nullptr, d, error));
  EXPECT_EQ(error, "TensorProto 'n': negative dimension -1");

  TensorProto text;
  text.set_name("s");
  text.set_data_type(TensorProto::STRING);
  EXPECT_FALSE(decodeTensor(text, nullptr, d, error));
  EXPECT_EQ(error, "TensorProto 's': unsupported data type STRING");
}

TEST(ONNXTensor, ExternalDataComesFromTheCaller) {
  TensorProto p;
  p.set_name("w");
  p.set_data_type(TensorProto::INT32);
  p.add_dims(2);
  p.set_data_location(TensorProto::EXTERNAL);
  DecodedTensor d;
  std::string error;
  EXPECT_FALSE(decodeTensor(p, nullptr, d, error));
  EXPECT_EQ(error, "TensorProto 'w': external data is not supported here");
  std::string bytes(8, '\0');
  bytes[4] = 3;
  std::string_view view = bytes;
  ASSERT_TRUE(decodeTensor(p, &view, d, error)) << error;
  EXPECT_EQ(valuesOf<int32_t>(d), (std::vector<int32_t>{0, 3}));
  std::string shortBytes(7, '\0');
  std::string_view shortView = shortBytes;
  EXPECT_FALSE(decodeTensor(p, &shortView, d, error));
  EXPECT_EQ(error, "TensorProto 'w' external data: expected 8 bytes (2 "
                   "INT32), found 7");
}

} // namespace
