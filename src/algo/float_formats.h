/*
 * Conversions between float32 and the narrow floating-point wire types:
 * IEEE binary16 ("half"), bfloat16, and the two OCP FP8 formats E4M3FN and E5M2.
 *
 * Narrowing (float -> narrow) rounds to nearest, ties to even, in every format. (The fp8 and
 * portable half code assume the default round-to-nearest FP mode, see NarrowRounding; the
 * F16C instructions and the bfloat16 code do not depend on the mode.)
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

// Rounding a magnitude to a narrow format with kManBits mantissa bits and bias kBias. Below the
// format's smallest normal the result is a multiple of the subnormal spacing u: adding the
// constant u * 2^23 makes the float unit round the magnitude to a multiple of u (ties to even)
// and leaves the count of u in the low mantissa bits. Exact and branch-free, but it relies on
// the default round-to-nearest mode, as every float operation of the reductions does. Flush-
// to-zero modes are harmless: float subnormals round to zero in these formats anyway.
template <int kManBits, int kBias>
struct NarrowRounding {
  static constexpr int kMinNormalExp = 1 - kBias;
  static constexpr int kDroppedBits = 23 - kManBits;
  static constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(kMinNormalExp + 127) << 23;
  static constexpr uint32_t kSubnormalMagicBits =
      static_cast<uint32_t>(kMinNormalExp - kManBits + 23 + 127) << 23;
  static constexpr uint32_t kRebias = static_cast<uint32_t>(127 - kBias) << 23;
};

// Rounds the magnitude of a finite, non-negative float (given as bits), ties to even. Returns
// the narrow code without sign; it may exceed the format's largest finite code, the caller
// handles overflow.
template <int kManBits, int kBias>
inline uint32_t roundMagnitude(uint32_t absBits) {
  using R = NarrowRounding<kManBits, kBias>;
  if (absBits >= R::kMinNormalBits) {
    // Normal in the narrow format: rebias the exponent in place, then round the mantissa.
    // A carry out of the mantissa correctly bumps the exponent.
    uint32_t v = absBits - R::kRebias;
    v += ((1u << (R::kDroppedBits - 1)) - 1) + ((v >> R::kDroppedBits) & 1u);
    return v >> R::kDroppedBits;
  }
  // Subnormal or zero; rounding up to the smallest normal gives exactly its code.
  const float sum = fromBits(absBits) + fromBits(R::kSubnormalMagicBits);
  return toBits(sum) - R::kSubnormalMagicBits;
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

inline float bf16ToFloat(uint16_t h) { return floatbits::fromBits(static_cast<uint32_t>(h) << 16); }

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
constexpr uint32_t kFp8e4m3OverflowAbove = 0x43E00000u;  // bits of 448.0f, the max finite

inline float fp8e4m3ToFloat(uint8_t v) { return kFp8e4m3Values[v]; }

inline uint8_t floatToFp8e4m3(float f) {
  const uint32_t bits = floatbits::toBits(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7Fu;
  if (abs >= kFp8e4m3OverflowAbove) return sign | 0x7Eu;  // inf included: satfinite
  return sign | static_cast<uint8_t>(floatbits::roundMagnitude<3, 7>(abs));
}

// ---- OCP FP8 E5M2: bias 15, IEEE-like inf/NaN, max finite 57344 ----

extern const std::array<float, 256> kFp8e5m2Values;
constexpr uint32_t kFp8e5m2OverflowAbove = 0x47600000u;  // bits of 57344.0f, the max finite

inline float fp8e5m2ToFloat(uint8_t v) { return kFp8e5m2Values[v]; }

inline uint8_t floatToFp8e5m2(float f) {
  const uint32_t bits = floatbits::toBits(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7Fu;
  if (abs >= kFp8e5m2OverflowAbove) return sign | 0x7Bu;  // inf included: satfinite
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

// ---- Lane codecs: 8 elements at a time, for the AVX2 kernels ----
//
// Written with GCC vector extensions and meant to be inlined into functions compiled with
// __attribute__((target("avx2,f16c"))) (float_formats.cc and reduce.cc), where they become a
// few AVX2 instructions; elsewhere GCC would lower them slowly but correctly. Each codec has
// load() (8 narrow values -> 8 floats) and store() (8 floats -> 8 narrow values), bit-identical
// to the scalar functions above. Vectors are passed by reference because their by-value ABI
// differs between AVX and non-AVX code.
#if defined(__x86_64__) || defined(__i386__)
#define MIXCCL_HAVE_FLOAT_LANES 1
}  // namespace mixccl
#include <immintrin.h>
namespace mixccl {

namespace lanes {

constexpr size_t kCount = 8;
typedef float F32x8 __attribute__((vector_size(32)));
typedef uint32_t U32x8 __attribute__((vector_size(32)));
typedef uint16_t U16x8 __attribute__((vector_size(16)));
typedef uint16_t U16x16 __attribute__((vector_size(32)));
typedef uint8_t U8x8 __attribute__((vector_size(8)));
typedef uint8_t U8x32 __attribute__((vector_size(32)));

#define MIXCCL_LANE_INLINE __attribute__((always_inline)) inline
#define MIXCCL_LANE_INLINE_F16C __attribute__((always_inline, target("avx2,f16c"))) inline

// Keeps the low 16 or 8 bits of each 32-bit lane. A byte shuffle, because GCC 12 lowers
// __builtin_convertvector to narrower lanes into one scalar extract per lane.
MIXCCL_LANE_INLINE void storeLowBits(const U32x8& lanes, uint16_t* dst) {
  const U16x16 v = reinterpret_cast<U16x16>(lanes);
  const U16x8 low = __builtin_shufflevector(v, v, 0, 2, 4, 6, 8, 10, 12, 14);
  std::memcpy(dst, &low, sizeof low);
}

MIXCCL_LANE_INLINE void storeLowBits(const U32x8& lanes, uint8_t* dst) {
  const U8x32 v = reinterpret_cast<U8x32>(lanes);
  const U8x8 low = __builtin_shufflevector(v, v, 0, 4, 8, 12, 16, 20, 24, 28);
  std::memcpy(dst, &low, sizeof low);
}

struct Bf16 {
  using Storage = uint16_t;
  static MIXCCL_LANE_INLINE void load(const uint16_t* src, F32x8& out) {
    U16x8 in;
    std::memcpy(&in, src, sizeof in);
    out = reinterpret_cast<F32x8>(__builtin_convertvector(in, U32x8) << 16);
  }
  static MIXCCL_LANE_INLINE void store(const F32x8& in, uint16_t* dst) {
    const U32x8 bits = reinterpret_cast<U32x8>(in);
    const U32x8 rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const U32x8 quietNan = (bits >> 16) | 0x40u;
    storeLowBits((bits & 0x7FFFFFFFu) > 0x7F800000u ? quietNan : rounded, dst);
  }
};

// F16C: the hardware conversion, round to nearest even whatever MXCSR says.
struct HalfF16c {
  using Storage = uint16_t;
  static MIXCCL_LANE_INLINE_F16C void load(const uint16_t* src, F32x8& out) {
    const __m128i in = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    out = reinterpret_cast<F32x8>(_mm256_cvtph_ps(in));
  }
  static MIXCCL_LANE_INLINE_F16C void store(const F32x8& in, uint16_t* dst) {
    constexpr int kRounding = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m128i out = _mm256_cvtps_ph(reinterpret_cast<__m256>(in), kRounding);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), out);
  }
};

// fp8: decode through the table, encode with floatbits::roundMagnitude's method on all lanes,
// blending the cases instead of branching.
template <int kManBits, int kBias, uint32_t kOverflowAbove, uint32_t kOverflowCode,
          const std::array<float, 256>& kTable>
struct Fp8 {
  using Storage = uint8_t;
  static MIXCCL_LANE_INLINE void load(const uint8_t* src, F32x8& out) {
    out = F32x8{kTable[src[0]], kTable[src[1]], kTable[src[2]], kTable[src[3]],
                kTable[src[4]], kTable[src[5]], kTable[src[6]], kTable[src[7]]};
  }
  static MIXCCL_LANE_INLINE void store(const F32x8& in, uint8_t* dst) {
    using R = floatbits::NarrowRounding<kManBits, kBias>;
    const U32x8 bits = reinterpret_cast<U32x8>(in);
    const U32x8 sign = (bits >> 24) & 0x80u;
    const U32x8 abs = bits & 0x7FFFFFFFu;
    U32x8 normal = abs - R::kRebias;
    normal += ((1u << (R::kDroppedBits - 1)) - 1) + ((normal >> R::kDroppedBits) & 1u);
    normal >>= R::kDroppedBits;
    const F32x8 sum = reinterpret_cast<F32x8>(abs) + floatbits::fromBits(R::kSubnormalMagicBits);
    const U32x8 subnormal = reinterpret_cast<U32x8>(sum) - R::kSubnormalMagicBits;
    U32x8 code = abs >= R::kMinNormalBits ? normal : subnormal;
    code = abs >= kOverflowAbove ? kOverflowCode : code;  // satfinite, inf included
    code = abs > 0x7F800000u ? 0x7Fu : code;              // NaN
    storeLowBits(sign | code, dst);
  }
};

using Fp8e4m3 = Fp8<3, 7, kFp8e4m3OverflowAbove, 0x7Eu, kFp8e4m3Values>;
using Fp8e5m2 = Fp8<2, 15, kFp8e5m2OverflowAbove, 0x7Bu, kFp8e5m2Values>;

#undef MIXCCL_LANE_INLINE
#undef MIXCCL_LANE_INLINE_F16C

}  // namespace lanes

#endif  // x86

namespace detail {

// One build of the bulk conversions. The ...N functions above use the active one; tests also
// run the portable one, which CPUs without AVX2/F16C use.
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

const ConversionKernels& portableConversionKernels();
const ConversionKernels& activeConversionKernels();  // picked once from the CPU's features

}  // namespace detail

}  // namespace mixccl

#endif  // MIXCCL_ALGO_FLOAT_FORMATS_H_
