// Tests for the narrow float conversions. Expected values come from independent references:
// decoding from the format's definition with ldexp, and encoding by searching the sorted table
// of all representable values for the nearest one (ties to the even code).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "algo/float_formats.h"

namespace mixccl {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

// Describes a binary floating-point format with 1 sign bit.
struct Format {
  int expBits;
  int manBits;
  int bias;
  bool ieeeSpecials;  // all-ones exponent = inf/NaN; otherwise only all-ones code is NaN
  bool saturates;     // overflow gives max finite instead of inf

  unsigned signBit() const { return 1u << (expBits + manBits); }
  unsigned expMask() const { return (1u << expBits) - 1; }
  unsigned manMask() const { return (1u << manBits) - 1; }
  unsigned exponent(unsigned code) const { return (code >> manBits) & expMask(); }
  unsigned mantissa(unsigned code) const { return code & manMask(); }

  bool isNan(unsigned code) const {
    if (ieeeSpecials) return exponent(code) == expMask() && mantissa(code) != 0;
    return exponent(code) == expMask() && mantissa(code) == manMask();
  }
  bool isInf(unsigned code) const {
    return ieeeSpecials && exponent(code) == expMask() && mantissa(code) == 0;
  }

  // Exact value from the definition (double holds every value of these formats exactly).
  double value(unsigned code) const {
    const double sign = (code & signBit()) ? -1.0 : 1.0;
    if (isNan(code)) return std::nan("");
    if (isInf(code)) return sign * HUGE_VAL;
    const unsigned e = exponent(code);
    const unsigned m = mantissa(code);
    if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - bias - manBits);
    return sign * std::ldexp(static_cast<double>(m + (1u << manBits)),
                             static_cast<int>(e) - bias - manBits);
  }
};

const Format kHalf{5, 10, 15, true, false};
const Format kBf16{8, 7, 127, true, false};
const Format kE4m3{4, 3, 7, false, true};
const Format kE5m2{5, 2, 15, true, true};

// Round-to-nearest-even encoder by table search: the positive finite codes are ordered like
// their values, and a code's lowest bit is its mantissa's lowest bit.
class ReferenceEncoder {
 public:
  explicit ReferenceEncoder(const Format& f) : format_(f) {
    for (unsigned code = 0; code < f.signBit(); ++code) {
      if (f.isNan(code) || f.isInf(code)) continue;
      values_.push_back(f.value(code));
      codes_.push_back(code);
    }
    maxFinite_ = values_.back();
    if (!f.saturates) {
      // IEEE overflow: inf behaves as the next value up, 2^(emax+1), whose code is even.
      const unsigned infCode = f.expMask() << f.manBits;
      values_.push_back(std::ldexp(1.0, static_cast<int>(f.expMask()) - f.bias));
      codes_.push_back(infCode);
    }
  }

  // Returns the code, or -1 for NaN input (callers check NaN-ness separately).
  int encode(float x) const {
    if (std::isnan(x)) return -1;
    const unsigned sign = std::signbit(x) ? format_.signBit() : 0u;
    double ax = std::fabs(static_cast<double>(x));
    if (format_.saturates && ax > maxFinite_) ax = maxFinite_;
    if (!format_.saturates && ax >= values_.back()) return static_cast<int>(sign | codes_.back());
    const auto it = std::lower_bound(values_.begin(), values_.end(), ax);
    size_t hi = static_cast<size_t>(it - values_.begin());
    if (values_[hi] == ax) return static_cast<int>(sign | codes_[hi]);
    const size_t lo = hi - 1;  // ax > 0 here, and values_[0] == 0
    const double dLo = ax - values_[lo];
    const double dHi = values_[hi] - ax;
    size_t pick = dLo < dHi ? lo : hi;
    if (dLo == dHi) pick = (codes_[lo] & 1u) == 0 ? lo : hi;
    return static_cast<int>(sign | codes_[pick]);
  }

  // Every midpoint between neighbouring values, and the floats just either side of it.
  std::vector<float> interestingInputs() const {
    std::vector<float> out;
    for (size_t i = 0; i + 1 < values_.size(); ++i) {
      const float mid = static_cast<float>((values_[i] + values_[i + 1]) / 2);
      out.push_back(static_cast<float>(values_[i]));
      out.push_back(mid);
      out.push_back(std::nextafter(mid, 0.0f));
      out.push_back(std::nextafter(mid, kInf));
    }
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i) out.push_back(-out[i]);
    return out;
  }

 private:
  Format format_;
  std::vector<double> values_;
  std::vector<unsigned> codes_;
  double maxFinite_ = 0;
};

// Random floats whose exponents cover [minExp, maxExp], plus every special.
std::vector<float> randomFloats(int minExp, int maxExp, size_t count) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> expDist(minExp + 127, maxExp + 127);
  std::uniform_int_distribution<uint32_t> manDist(0, 0x7FFFFF);
  std::vector<float> out;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t sign = (i & 1) ? 0x80000000u : 0u;
    out.push_back(floatOf(sign | (static_cast<uint32_t>(expDist(rng)) << 23) | manDist(rng)));
  }
  for (float f : {0.0f, -0.0f, kInf, -kInf, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()}) {
    out.push_back(f);
    out.push_back(-f);
  }
  return out;
}

template <typename Encode>
void expectMatchesReference(const ReferenceEncoder& ref, const std::vector<float>& inputs,
                            Encode encode) {
  int failures = 0;
  for (float x : inputs) {
    const int want = ref.encode(x);
    const unsigned got = encode(x);
    if (static_cast<unsigned>(want) != got && ++failures <= 10) {
      ADD_FAILURE() << "input " << x << " (bits 0x" << std::hex << bitsOf(x) << ") gave 0x" << got
                    << ", want 0x" << want;
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---------------- half ----------------

TEST(FloatFormatsHalf, DecodesKnownValues) {
  EXPECT_EQ(halfToFloat(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfToFloat(0x7C00), kInf);
  EXPECT_EQ(halfToFloat(0xFC00), -kInf);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7C01)));  // signalling NaN comes out quiet
  EXPECT_EQ(bitsOf(halfToFloat(0x7C01)), 0x7FC02000u);
  EXPECT_EQ(bitsOf(halfToFloat(0xFE00)), 0xFFC00000u);
}

TEST(FloatFormatsHalf, AllCodesDecodeToDefinitionAndRoundTrip) {
  for (unsigned code = 0; code < 0x10000; ++code) {
    const uint16_t h = static_cast<uint16_t>(code);
    const float f = halfToFloat(h);
    if (kHalf.isNan(code)) {
      ASSERT_TRUE(std::isnan(f)) << code;
      ASSERT_EQ(std::signbit(f), (code & 0x8000) != 0) << code;
      const uint16_t back = floatToHalf(f);
      ASSERT_TRUE(kHalf.isNan(back)) << code;
      // Quiet NaNs keep their payload exactly; signalling ones become quiet.
      ASSERT_EQ(back, code | 0x0200u) << code;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), kHalf.value(code)) << code;
    ASSERT_EQ(std::signbit(f), (code & 0x8000) != 0) << code;
    ASSERT_EQ(floatToHalf(f), h) << code;
  }
}

TEST(FloatFormatsHalf, RoundsToNearestEven) {
  const float ulp1 = std::ldexp(1.0f, -10);             // spacing of halves in [1, 2)
  EXPECT_EQ(floatToHalf(1.0f + ulp1 / 2), 0x3C00);      // tie -> even (down)
  EXPECT_EQ(floatToHalf(1.0f + 3 * ulp1 / 2), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(floatToHalf(std::nextafter(1.0f + ulp1 / 2, 2.0f)), 0x3C01);
  EXPECT_EQ(floatToHalf(std::nextafter(1.0f + ulp1 / 2, 0.0f)), 0x3C00);
  EXPECT_EQ(floatToHalf(-(1.0f + ulp1 / 2)), 0xBC00);
  EXPECT_EQ(floatToHalf(2047.0f), 0x67FF);  // exact
  EXPECT_EQ(floatToHalf(2049.0f), 0x6800);  // tie between 2048 and 2050 -> 2048 (even)
  EXPECT_EQ(floatToHalf(2051.0f), 0x6802);  // tie between 2050 and 2052 -> 2052 (even)
  EXPECT_EQ(floatToHalf(0.1f), 0x2E66);
}

TEST(FloatFormatsHalf, SubnormalsAndUnderflow) {
  const float tiny = std::ldexp(1.0f, -24);
  EXPECT_EQ(floatToHalf(tiny), 0x0001);
  EXPECT_EQ(floatToHalf(tiny / 2), 0x0000);  // tie -> 0 (even)
  EXPECT_EQ(floatToHalf(std::nextafter(tiny / 2, 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(-tiny / 2), 0x8000);                         // keeps the sign
  EXPECT_EQ(floatToHalf(tiny * 1.5f), 0x0002);                       // tie 1|2 -> 2
  EXPECT_EQ(floatToHalf(tiny * 2.5f), 0x0002);                       // tie 2|3 -> 2
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14) - tiny / 2), 0x0400);  // tie -> smallest normal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
}

TEST(FloatFormatsHalf, OverflowInfAndNan) {
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);  // tie between max and "65536" -> inf
  EXPECT_EQ(floatToHalf(1e9f), 0x7C00);
  EXPECT_EQ(floatToHalf(-1e9f), 0xFC00);
  EXPECT_EQ(floatToHalf(kInf), 0x7C00);
  EXPECT_EQ(floatToHalf(-kInf), 0xFC00);
  EXPECT_EQ(floatToHalf(kNan), 0x7E00);
  EXPECT_EQ(floatToHalf(-kNan), 0xFE00);
  EXPECT_EQ(floatToHalf(floatOf(0x7F800001u)), 0x7E00);   // signalling NaN, low payload
  EXPECT_EQ(floatToHalf(floatOf(0x7FBFE000u)), 0x7FFFu);  // payload kept, quiet bit set
}

TEST(FloatFormatsHalf, MatchesReferenceEncoder) {
  const ReferenceEncoder ref(kHalf);
  expectMatchesReference(ref, ref.interestingInputs(), floatToHalf);
  expectMatchesReference(ref, randomFloats(-27, 17, 200000), floatToHalf);
}

// ---------------- bfloat16 ----------------

TEST(FloatFormatsBf16, DecodesAndRoundsToNearestEven) {
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xC040), -3.0f);
  EXPECT_EQ(bf16ToFloat(0x7F80), kInf);
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  const float ulp1 = std::ldexp(1.0f, -7);
  EXPECT_EQ(floatToBf16(1.0f + ulp1 / 2), 0x3F80);      // tie -> even (down)
  EXPECT_EQ(floatToBf16(1.0f + 3 * ulp1 / 2), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(floatToBf16(std::nextafter(1.0f + ulp1 / 2, 2.0f)), 0x3F81);
  EXPECT_EQ(floatToBf16(-(1.0f + 3 * ulp1 / 2)), 0xBF82);
  EXPECT_EQ(floatToBf16(0.1f), 0x3DCD);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf
  EXPECT_EQ(floatToBf16(kInf), 0x7F80);
  EXPECT_EQ(floatToBf16(-kInf), 0xFF80);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToBf16(floatOf(0x00008000u)), 0x0000);  // subnormal tie -> even
  EXPECT_EQ(floatToBf16(floatOf(0x00018000u)), 0x0002);
}

TEST(FloatFormatsBf16, NanStaysNan) {
  EXPECT_EQ(floatToBf16(kNan), 0x7FC0);
  EXPECT_EQ(floatToBf16(-kNan), 0xFFC0);
  // A NaN whose payload lies only in the low bits must not round to inf.
  EXPECT_EQ(floatToBf16(floatOf(0x7F800001u)), 0x7FC0);
  EXPECT_EQ(floatToBf16(floatOf(0x7FFFFFFFu)), 0x7FFF);
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7F81)));
}

TEST(FloatFormatsBf16, AllCodesRoundTrip) {
  for (unsigned code = 0; code < 0x10000; ++code) {
    const uint16_t h = static_cast<uint16_t>(code);
    const float f = bf16ToFloat(h);
    if (kBf16.isNan(code)) {
      ASSERT_TRUE(std::isnan(f)) << code;
      ASSERT_EQ(floatToBf16(f), code | 0x0040u) << code;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), kBf16.value(code)) << code;
    ASSERT_EQ(floatToBf16(f), h) << code;
  }
}

TEST(FloatFormatsBf16, MatchesReferenceEncoder) {
  const ReferenceEncoder ref(kBf16);
  expectMatchesReference(ref, ref.interestingInputs(), floatToBf16);
  expectMatchesReference(ref, randomFloats(-126, 127, 200000), floatToBf16);
}

// ---------------- fp8 ----------------

TEST(FloatFormatsFp8, E4m3AllCodes) {
  int nanCodes = 0;
  for (unsigned code = 0; code < 256; ++code) {
    const uint8_t c = static_cast<uint8_t>(code);
    const float f = fp8e4m3ToFloat(c);
    if (kE4m3.isNan(code)) {
      ++nanCodes;
      ASSERT_TRUE(std::isnan(f)) << code;
      ASSERT_EQ(floatToFp8e4m3(f), c) << code;  // the only NaN codes are S.1111.111
      continue;
    }
    ASSERT_FALSE(std::isinf(f)) << code;
    ASSERT_EQ(static_cast<double>(f), kE4m3.value(code)) << code;
    ASSERT_EQ(floatToFp8e4m3(f), c) << code;
  }
  EXPECT_EQ(nanCodes, 2);
}

TEST(FloatFormatsFp8, E4m3KnownValuesAndSaturation) {
  EXPECT_EQ(fp8e4m3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(fp8e4m3ToFloat(0x38), 1.0f);
  EXPECT_EQ(fp8e4m3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8e4m3ToFloat(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(floatToFp8e4m3(448.0f), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(464.0f), 0x7E);  // would round to 480 without saturation
  EXPECT_EQ(floatToFp8e4m3(500.0f), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(1e30f), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(-1e30f), 0xFE);
  EXPECT_EQ(floatToFp8e4m3(kInf), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(-kInf), 0xFE);
  EXPECT_EQ(floatToFp8e4m3(kNan), 0x7F);
  EXPECT_EQ(floatToFp8e4m3(-kNan), 0xFF);
  EXPECT_EQ(floatToFp8e4m3(1.0625f), 0x38);                // tie 1 | 1.125 -> 1 (even)
  EXPECT_EQ(floatToFp8e4m3(1.1875f), 0x3A);                // tie 1.125 | 1.25 -> 1.25 (even)
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest: tie -> 0
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(3.0f, -10)), 0x02);  // tie 1|2 -> 2
  EXPECT_EQ(floatToFp8e4m3(-std::ldexp(1.0f, -12)), 0x80);
}

TEST(FloatFormatsFp8, E5m2AllCodes) {
  int nanCodes = 0;
  for (unsigned code = 0; code < 256; ++code) {
    const uint8_t c = static_cast<uint8_t>(code);
    const float f = fp8e5m2ToFloat(c);
    if (kE5m2.isNan(code)) {
      ++nanCodes;
      ASSERT_TRUE(std::isnan(f)) << code;
      ASSERT_TRUE(kE5m2.isNan(floatToFp8e5m2(f))) << code;
      continue;
    }
    if (kE5m2.isInf(code)) {
      // Decodes to inf; encoding inf saturates (satfinite), so inf codes do not round-trip.
      ASSERT_EQ(f, (code & 0x80) ? -kInf : kInf) << code;
      ASSERT_EQ(floatToFp8e5m2(f), (code & 0x80) | 0x7Bu) << code;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), kE5m2.value(code)) << code;
    ASSERT_EQ(floatToFp8e5m2(f), c) << code;
  }
  EXPECT_EQ(nanCodes, 6);
}

TEST(FloatFormatsFp8, E5m2KnownValuesAndSaturation) {
  EXPECT_EQ(fp8e5m2ToFloat(0x7B), 57344.0f);
  EXPECT_EQ(fp8e5m2ToFloat(0x3C), 1.0f);
  EXPECT_EQ(fp8e5m2ToFloat(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(floatToFp8e5m2(57344.0f), 0x7B);
  EXPECT_EQ(floatToFp8e5m2(61440.0f), 0x7B);  // tie with "65536" would give inf in IEEE
  EXPECT_EQ(floatToFp8e5m2(1e9f), 0x7B);
  EXPECT_EQ(floatToFp8e5m2(-1e9f), 0xFB);
  EXPECT_EQ(floatToFp8e5m2(kInf), 0x7B);
  EXPECT_EQ(floatToFp8e5m2(-kInf), 0xFB);
  EXPECT_EQ(floatToFp8e5m2(kNan), 0x7F);
  EXPECT_EQ(floatToFp8e5m2(-kNan), 0xFF);
  EXPECT_EQ(floatToFp8e5m2(1.125f), 0x3C);  // tie 1 | 1.25 -> 1 (even)
  EXPECT_EQ(floatToFp8e5m2(1.375f), 0x3E);  // tie 1.25 | 1.5 -> 1.5 (even)
  EXPECT_EQ(floatToFp8e5m2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(floatToFp8e5m2(std::ldexp(1.0f, -17) * 1.01f), 0x01);
}

TEST(FloatFormatsFp8, MatchReferenceEncoder) {
  const ReferenceEncoder e4m3(kE4m3);
  expectMatchesReference(e4m3, e4m3.interestingInputs(), floatToFp8e4m3);
  expectMatchesReference(e4m3, randomFloats(-20, 20, 50000), floatToFp8e4m3);
  const ReferenceEncoder e5m2(kE5m2);
  expectMatchesReference(e5m2, e5m2.interestingInputs(), floatToFp8e5m2);
  expectMatchesReference(e5m2, randomFloats(-20, 20, 50000), floatToFp8e5m2);
}

// ---------------- bulk conversions: every build is bit-identical to the scalar code ----------

std::vector<const detail::ConversionKernels*> allKernelSets() {
  return {&detail::portableConversionKernels(), &detail::activeConversionKernels()};
}

// Floats that exercise every path: all midpoints and exact values of every format, numbers
// across the whole exponent range, and random bit patterns (NaN payloads, signalling NaNs).
std::vector<float> bulkInputs() {
  std::vector<float> in;
  for (const Format* f : {&kHalf, &kBf16, &kE4m3, &kE5m2}) {
    const std::vector<float> v = ReferenceEncoder(*f).interestingInputs();
    in.insert(in.end(), v.begin(), v.end());
  }
  const std::vector<float> wide = randomFloats(-140, 127, 100000);
  in.insert(in.end(), wide.begin(), wide.end());
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) in.push_back(floatOf(static_cast<uint32_t>(rng())));
  return in;
}

template <typename Code>
void expectNarrowMatchesScalar(const char* what, const std::vector<float>& in,
                               void (*bulk)(const float*, Code*, size_t), Code (*scalar)(float)) {
  std::vector<Code> out(in.size());
  bulk(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i], scalar(in[i])) << what << " input bits 0x" << std::hex << bitsOf(in[i]);
  }
}

template <typename Code>
void expectWidenMatchesScalar(const char* what, void (*bulk)(const Code*, float*, size_t),
                              float (*scalar)(Code)) {
  const size_t n = size_t{1} << (8 * sizeof(Code));
  std::vector<Code> codes(n);
  for (size_t i = 0; i < n; ++i) codes[i] = static_cast<Code>(i);
  std::vector<float> out(n);
  bulk(codes.data(), out.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(bitsOf(out[i]), bitsOf(scalar(codes[i]))) << what << " code " << i;
  }
}

TEST(FloatFormatsBulk, EveryBuildMatchesScalarBitForBit) {
  const std::vector<float> in = bulkInputs();
  for (const detail::ConversionKernels* k : allKernelSets()) {
    SCOPED_TRACE(k->isa);
    expectWidenMatchesScalar("half", k->halfToFloat, halfToFloat);
    expectWidenMatchesScalar("bf16", k->bf16ToFloat, bf16ToFloat);
    expectWidenMatchesScalar("e4m3", k->fp8e4m3ToFloat, fp8e4m3ToFloat);
    expectWidenMatchesScalar("e5m2", k->fp8e5m2ToFloat, fp8e5m2ToFloat);
    expectNarrowMatchesScalar("half", in, k->floatToHalf, floatToHalf);
    expectNarrowMatchesScalar("bf16", in, k->floatToBf16, floatToBf16);
    expectNarrowMatchesScalar("e4m3", in, k->floatToFp8e4m3, floatToFp8e4m3);
    expectNarrowMatchesScalar("e5m2", in, k->floatToFp8e5m2, floatToFp8e5m2);
  }
}

// Round trip through a bulk pair for every count up to a few vectors, checking that nothing is
// written past the end.
template <typename Code>
void checkTails(void (*widen)(const Code*, float*, size_t),
                void (*narrow)(const float*, Code*, size_t), Code first) {
  for (size_t count = 0; count <= 40; ++count) {
    std::vector<Code> in(count + 1, static_cast<Code>(0x55)),
        back(count + 1, static_cast<Code>(0x5A));
    std::vector<float> mid(count + 1, -7.0f);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<Code>(first + i);
    widen(in.data(), mid.data(), count);
    narrow(mid.data(), back.data(), count);
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(back[i], in[i]) << "count " << count;
    EXPECT_EQ(mid[count], -7.0f) << "wrote past the end, count " << count;
    EXPECT_EQ(back[count], static_cast<Code>(0x5A)) << "wrote past the end, count " << count;
  }
}

TEST(FloatFormatsBulk, EveryTailLength) {
  for (const detail::ConversionKernels* k : allKernelSets()) {
    SCOPED_TRACE(k->isa);
    checkTails<uint16_t>(k->halfToFloat, k->floatToHalf, 0x3C00);
    checkTails<uint16_t>(k->bf16ToFloat, k->floatToBf16, 0x3F80);
    checkTails<uint8_t>(k->fp8e4m3ToFloat, k->floatToFp8e4m3, 0x20);
    checkTails<uint8_t>(k->fp8e5m2ToFloat, k->floatToFp8e5m2, 0x20);
  }
}

TEST(FloatFormatsBulk, PublicFunctionsUseTheActiveBuild) {
  const float in[3] = {1.5f, -0.1f, 70000.0f};
  uint16_t h[3];
  floatToHalfN(in, h, 3);
  EXPECT_EQ(h[0], 0x3E00);
  EXPECT_EQ(h[1], floatToHalf(-0.1f));
  EXPECT_EQ(h[2], 0x7C00);
  float back[3];
  halfToFloatN(h, back, 3);
  EXPECT_EQ(back[0], 1.5f);
  uint8_t e4[3];
  floatToFp8e4m3N(in, e4, 3);
  EXPECT_EQ(e4[2], 0x7E);
  RecordProperty("conversion_build", detail::activeConversionKernels().isa);
}

}  // namespace
}  // namespace mixccl
