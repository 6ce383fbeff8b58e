//===- WireTest.cpp - Rows as f16 and bf16 on the wire --------------------===//

#include "heterps/PS/Wire.h"
#include "heterps/Runtime/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace heterps::ps;

namespace {
// The runtime's conversions, as the wire uses them.
uint16_t floatToHalf(float v) {
  return heterps::runtime::floatToHalf(v, false);
}
float halfToFloat(uint16_t h) {
  return heterps::runtime::halfToFloat(h, false);
}
uint16_t floatToBFloat16(float v) {
  return heterps::runtime::floatToHalf(v, true);
}
float bfloat16ToFloat(uint16_t h) {
  return heterps::runtime::halfToFloat(h, true);
}
} // namespace

namespace {

TEST(Wire, HalfIsExactWhereItCanBe) {
  for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 0.5f, 65504.0f, -65504.0f,
                  6.103515625e-05f /* smallest normal */,
                  5.960464477539063e-08f /* smallest subnormal */, 1024.0f})
    EXPECT_EQ(halfToFloat(floatToHalf(v)), v) << v;
  EXPECT_TRUE(std::signbit(halfToFloat(floatToHalf(-0.0f))));
}

TEST(Wire, HalfRoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to even (1).
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9: to 1 + 2^-9.
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11))),
            1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + std::ldexp(1.0f, -11) +
                                    std::ldexp(1.0f, -20))),
            1.0f + std::ldexp(1.0f, -10));
  // Every value within the half range comes back within half an ulp.
  for (float v = -1000; v < 1000; v += 0.37f) {
    float back = halfToFloat(floatToHalf(v));
    float ulp = std::ldexp(1.0f, std::ilogb(v == 0 ? 1 : v) - 10);
    EXPECT_LE(std::fabs(back - v), ulp / 2) << v;
  }
}

TEST(Wire, HalfOverflowsToInfinityAndKeepsNaN) {
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(70000.0f))));
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(-1e30f))));
  EXPECT_TRUE(std::isinf(
      halfToFloat(floatToHalf(std::numeric_limits<float>::infinity()))));
  EXPECT_TRUE(std::isnan(
      halfToFloat(floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(halfToFloat(floatToHalf(1e-9f)), 0.0f);
}

TEST(Wire, BFloat16KeepsTheRangeAndRoundsToNearestEven) {
  for (float v : {0.0f, 1.0f, -3.0f, 1e30f, -1e-30f, 0.5f})
    EXPECT_NEAR(bfloat16ToFloat(floatToBFloat16(v)), v, std::fabs(v) / 128)
        << v;
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f)), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to even (1).
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f + std::ldexp(1.0f, -8))),
            1.0f);
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8))),
            1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(
      floatToBFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(bfloat16ToFloat(
      floatToBFloat16(std::numeric_limits<float>::infinity()))));
}

TEST(Wire, EncodedRowsAreHalfTheBytesAndDecodeChecksTheSize) {
  std::vector<float> rows = {0.5f, -1.25f, 3.0f, 100.0f};
  for (v1::Wire wire : {v1::WIRE_F32, v1::WIRE_F16, v1::WIRE_BF16}) {
    std::string bytes;
    encodeFloats(wire, rows.data(), rows.size(), &bytes);
    EXPECT_EQ(bytes.size(), wire == v1::WIRE_F32 ? 16u : 8u);
    std::vector<float> back(rows.size());
    ASSERT_TRUE(decodeFloats(wire, bytes, rows.size(), back.data()));
    EXPECT_EQ(back, rows);
    EXPECT_FALSE(decodeFloats(wire, bytes, rows.size() + 1, back.data()));
  }
  v1::Wire wire;
  EXPECT_TRUE(parseWire("bf16", &wire));
  EXPECT_EQ(wire, v1::WIRE_BF16);
  EXPECT_FALSE(parseWire("fp8", &wire));
}

} // namespace
