/*
 * Conversions between float32 and the narrow floating-point wire types:
 * IEEE binary16 ("half"), bfloat16, and the two OCP FP8 formats E4M3FN and E5M2.
 *
 * Narrowing (float -> narrow) rounds to nearest, ties to even, in every format.
 *
 * Overflow:
 *  - half and bfloat16 are IEEE-like: values that round beyond the largest finite number
 *    become +/-inf, and +/-inf stays +/-inf.
 *  - fp8 follows CUDA's default __nv_fp8_e4m3 / __nv_fp8_e5m2 conversion, which is
 *    "satfinite": any finite value beyond the largest finite number, and +/-inf itself,
 *    becomes +/-max finite (+/-448 for E4M3, +/-57344 for E5M2). E4M3FN has no infinity at
 *    all, and saturating E5M2 too keeps one reduction overflow from poisoning a whole
 *    gradient with inf. A consequence: the E5M2 inf codes (0x7C, 0xFC) decode to +/-inf but
 *    do not round-trip.
 *
 * NaN: every NaN stays a NaN of the same sign. Widening quiets a signalling NaN and keeps
 * its payload (what the x86 F16C instructions do, so the portable and the F16C paths agree
 * bit for bit); narrowing keeps the top payload bits and sets the quiet bit for half and
 * bfloat16, and gives the format's all-ones NaN code (S.1111.111) for fp8.
 *
 * The scalar functions are inline for callers that convert one element at a time; the bulk
 * (...N) functions convert arrays several elements at a time (AVX2, and F16C for half, when the
 * CPU has them) with bit-identical results.
 */
#ifndef MIXCCL_ALGO_FLOAT_FORMATS_H_
#define MIXCCL_ALGO_FLOAT_FORMATS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mixccl {

namespace floatbits {

inline uint32_t toBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds the magnitude of a finite, non-negative float (given as bits) to a narrow format
// with kManBits mantissa bits and exponent bias kBias, ties to even. Returns the narrow code
// without sign; it may exceed the format's largest finite code, the caller handles overflow.
template <int kManBits, int kBias>
inline uint32_t roundMagnitude(uint32_t absBits) {
  constexpr int kMinNormalExp = 1 - kBias;
  constexpr int kDroppedBits = 23 - kManBits;
  const int exp = static_cast<int>(absBits >> 23) - 127;
  if (exp >= kMinNormalExp) {
    // Normal in the narrow format: rebias the exponent in place, then round the mantissa.
    // A carry out of the mantissa correctly bumps the exponent.
    uint32_t v = absBits - (static_cast<uint32_t>(127 - kBias) << 23);
    v += ((1u << (kDroppedBits - 1)) - 1) + ((v >> kDroppedBits) & 1u);
    return v >> kDroppedBits;
  }
  // Subnormal (or zero) in the narrow format: count in units of its smallest subnormal.
  const int shift = kDroppedBits + kMinNormalExp - exp;
  if (shift > 24) return 0;  // below half the smallest subnormal (also float zero/subnormal)
  const uint32_t mant = (absBits & 0x7FFFFFu) | 0x800000u;
  uint32_t q = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (q & 1u))) ++q;
  return q;  // rounding up to the smallest normal gives exactly its code
}

}  // namespace floatbits

// ---- IEEE binary16 ----

inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) {  // inf, or NaN made quiet
    return floatbits::fromBits(sign | 0x7F800000u | (man << 13) | (man ? 0x400000u : 0u));
  }
  if (exp != 0) return floatbits::fromBits(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in float.
  const float mag = static_cast<float>(man) * 0x1p-24f;
  return sign ? -mag : mag;
}

inline uint16_t floatToHalf(float f) {
  const uint32_t bits = floatbits::toBits(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7E00u | static_cast<uint16_t>((abs >> 13) & 0x3FFu);
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to inf (inf included)
  return sign | static_cast<uint16_t>(floatbits::roundMagnitude<10, 15>(abs));
}

// ---- bfloat16: the top half of a float ----

inline float bf16ToFloat(uint16_t h) {
  return floatbits::fromBits(static_cast<uint32_t>(h) << 16);
}

inline uint16_t floatToBf16(float f) {
  const uint32_t bits = floatbits::toBits(f);
  // Written branch-free so loops over it vectorise. Overflow carries into inf, as IEEE does.
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quietNan = (bits >> 16) | 0x40u;
  const bool isNan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint16_t>(isNan ? quietNan : rounded);
}

// ---- OCP FP8 E4M3FN: bias 7, no inf, NaN = S.1111.111, max finite 448 ----

// Indexed by code; constant-initialised (usable during static initialisation).
extern const std::array<float, 256> kFp8e4m3Values;

inline float fp8e4m3ToFloat(uint8_t v) { return kFp8e4m3Values[v]; }

inline uint8_t floatToFp8e4m3(float f) {
  const uint32_t bits = floatbits::toBits(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7Fu;
  if (abs >= 0x43E00000u) return sign | 0x7Eu;  // >= 448 (inf included): satfinite
  return sign | static_cast<uint8_t>(floatbits::roundMagnitude<3, 7>(abs));
}

// ---- OCP FP8 E5M2: bias 15, IEEE-like inf/NaN, max finite 57344 ----

extern const std::array<float, 256> kFp8e5m2Values;

inline float fp8e5m2ToFloat(uint8_t v) { return kFp8e5m2Values[v]; }

inline uint8_t floatToFp8e5m2(float f) {
  const uint32_t bits = floatbits::toBits(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7Fu;
  if (abs >= 0x47600000u) return sign | 0x7Bu;  // >= 57344 (inf included): satfinite
  return sign | static_cast<uint8_t>(floatbits::roundMagnitude<2, 15>(abs));
}

// ---- Bulk conversions; results are bit-identical to the scalar functions above ----

void halfToFloatN(const uint16_t* src, float* dst, size_t count);
void floatToHalfN(const float* src, uint16_t* dst, size_t count);
void bf16ToFloatN(const uint16_t* src, float* dst, size_t count);
void floatToBf16N(const float* src, uint16_t* dst, size_t count);
void fp8e4m3ToFloatN(const uint8_t* src, float* dst, size_t count);
void floatToFp8e4m3N(const float* src, uint8_t* dst, size_t count);
void fp8e5m2ToFloatN(const uint8_t* src, float* dst, size_t count);
void floatToFp8e5m2N(const float* src, uint8_t* dst, size_t count);

namespace detail {

// One build of the bulk conversions. The ...N functions above use the active one; tests also
// run the baseline one, which CPUs without AVX2/F16C use.
struct ConversionKernels {
  const char* isa;
  void (*halfToFloat)(const uint16_t*, float*, size_t);
  void (*floatToHalf)(const float*, uint16_t*, size_t);
  void (*bf16ToFloat)(const uint16_t*, float*, size_t);
  void (*floatToBf16)(const float*, uint16_t*, size_t);
  void (*fp8e4m3ToFloat)(const uint8_t*, float*, size_t);
  void (*floatToFp8e4m3)(const float*, uint8_t*, size_t);
  void (*fp8e5m2ToFloat)(const uint8_t*, float*, size_t);
  void (*floatToFp8e5m2)(const float*, uint8_t*, size_t);
};

const ConversionKernels& baselineConversionKernels();
const ConversionKernels& activeConversionKernels();  // picked once from the CPU's features

}  // namespace detail

}  // namespace mixccl

#endif  // MIXCCL_ALGO_FLOAT_FORMATS_H_
