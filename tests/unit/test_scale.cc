// scaleBy, the input step of a pre-multiplied sum: every type against scalar arithmetic here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "algo/float_formats.h"
#include "algo/reduce.h"

namespace mixccl {
namespace {

TEST(ScaleBy, IntegersWrapLikeUnsignedArithmetic) {
  std::vector<int8_t> in = {1, -3, 100, 0, 127};
  std::vector<int8_t> out(in.size());
  int8_t factor = 3;
  scaleBy(out.data(), in.data(), in.size(), mixcclInt8, &factor);
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(out[i], static_cast<int8_t>(static_cast<uint8_t>(in[i]) * 3u)) << i;
  std::vector<uint64_t> big = {1, 2, UINT64_MAX};
  uint64_t f64 = 5;
  scaleBy(big.data(), big.data(), big.size(), mixcclUint64, &f64);  // in place
  EXPECT_EQ(big[0], 5u);
  EXPECT_EQ(big[1], 10u);
  EXPECT_EQ(big[2], UINT64_MAX * 5);
  std::vector<int32_t> i32 = {7, -7};
  int32_t neg = -2;
  scaleBy(i32.data(), i32.data(), 2, mixcclInt32, &neg);
  EXPECT_EQ(i32[0], -14);
  EXPECT_EQ(i32[1], 14);
}

TEST(ScaleBy, FloatAndDoubleMultiplyInTheirPrecision) {
  std::vector<float> f = {1.5f, -2.0f, 0.1f};
  float half = 0.5f;
  std::vector<float> fo(3);
  scaleBy(fo.data(), f.data(), 3, mixcclFloat32, &half);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fo[i], f[i] * 0.5f);
  std::vector<double> d = {3.0, 1e300};
  double tiny = 1e-10;
  scaleBy(d.data(), d.data(), 2, mixcclFloat64, &tiny);
  EXPECT_EQ(d[0], 3.0 * 1e-10);
  EXPECT_EQ(d[1], 1e300 * 1e-10);
}

TEST(ScaleBy, NarrowFloatsWidenMultiplyAndRoundOnce) {
  // More than one block of the widening loop (512 elements), with a scalar that is exact.
  const size_t n = 1300;
  std::vector<uint16_t> h(n), b(n), ho(n), bo(n);
  for (size_t i = 0; i < n; ++i) {
    h[i] = floatToHalf(static_cast<float>(i % 37) - 18.0f);
    b[i] = floatToBf16(static_cast<float>(i % 37) * 0.25f);
  }
  uint16_t hf = floatToHalf(-1.5f), bf = floatToBf16(4.0f);
  scaleBy(ho.data(), h.data(), n, mixcclFloat16, &hf);
  scaleBy(bo.data(), b.data(), n, mixcclBfloat16, &bf);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(ho[i], floatToHalf(halfToFloat(h[i]) * -1.5f)) << i;
    ASSERT_EQ(bo[i], floatToBf16(bf16ToFloat(b[i]) * 4.0f)) << i;
  }
  std::vector<uint8_t> e4 = {floatToFp8e4m3(1.0f), floatToFp8e4m3(-3.0f)}, e5 = {floatToFp8e5m2(2.0f)};
  uint8_t e4f = floatToFp8e4m3(2.0f), e5f = floatToFp8e5m2(0.5f);
  scaleBy(e4.data(), e4.data(), 2, mixcclFloat8e4m3, &e4f);
  scaleBy(e5.data(), e5.data(), 1, mixcclFloat8e5m2, &e5f);
  EXPECT_EQ(fp8e4m3ToFloat(e4[0]), 2.0f);
  EXPECT_EQ(fp8e4m3ToFloat(e4[1]), -6.0f);
  EXPECT_EQ(fp8e5m2ToFloat(e5[0]), 1.0f);
}

TEST(ScaleBy, ZeroCountAndInvalidTypeTouchNothing) {
  float x = 1.0f, y = 7.0f, s = 2.0f;
  scaleBy(&y, &x, 0, mixcclFloat32, &s);
  EXPECT_EQ(y, 7.0f);
  scaleBy(&y, &x, 1, static_cast<mixcclDataType_t>(99), &s);
  EXPECT_EQ(y, 7.0f);
}

}  // namespace
}  // namespace mixccl
