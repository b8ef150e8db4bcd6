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
 * NaN: every NaN stays a NaN of the same sign. Widening half (and E5M2, the top byte of a
 * half) quiets a signalling NaN and keeps its payload, as the x86 F16C instructions do, so the
 * portable and the F16C paths agree bit for bit; bfloat16 widens exactly; E4M3's NaN widens to
 * the default quiet NaN. Narrowing keeps the top payload bits and sets the quiet bit for half
 * and bfloat16, and gives the all-ones NaN code (S.1111.111) for fp8.
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

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MIXCCL_HAVE_FLOAT_LANES 1  // the lane codecs below exist
#endif

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
  // Branch-free. Rounding a value above the largest bfloat16 carries into inf, as in IEEE.
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

constexpr uint32_t kFp8e5m2OverflowAbove = 0x47600000u;  // bits of 57344.0f, the max finite

// E5M2 is the top byte of a half: exact, and inf/NaN map to inf/NaN.
inline float fp8e5m2ToFloat(uint8_t v) { return halfToFloat(static_cast<uint16_t>(v << 8)); }

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
// For functions compiled with __attribute__((target("avx2,f16c"))) (float_formats.cc and
// reduce.cc), into which they inline. Each codec has load() (8 narrow values -> 8 floats) and
// store() (8 floats -> 8 narrow values), bit-identical to the scalar functions above. The
// arithmetic uses GCC vector extensions; the widening loads and narrowing stores use
// intrinsics, because GCC 12 lowers the vector-extension equivalents to per-lane code.
#ifdef MIXCCL_HAVE_FLOAT_LANES

namespace lanes {

constexpr size_t kCount = 8;
typedef float F32x8 __attribute__((vector_size(32)));
typedef uint32_t U32x8 __attribute__((vector_size(32)));
typedef int32_t I32x8 __attribute__((vector_size(32)));

#define MIXCCL_LANE_INLINE __attribute__((always_inline, target("avx2,f16c"))) inline

MIXCCL_LANE_INLINE U32x8 loadWidened(const uint8_t* src) {
  return reinterpret_cast<U32x8>(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src))));
}

MIXCCL_LANE_INLINE U32x8 loadWidened(const uint16_t* src) {
  return reinterpret_cast<U32x8>(
      _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))));
}

// Stores the low (kHigh: the high) 16 bits of each 32-bit lane.
template <bool kHigh>
MIXCCL_LANE_INLINE void storeHalfwords(U32x8 v, uint16_t* dst) {
  constexpr char a = kHigh ? 2 : 0, b = a + 1;
  // Gather each 128-bit half's four halfwords into its low 8 bytes, then join the halves.
  const __m256i pick = _mm256_setr_epi8(a, b, a + 4, b + 4, a + 8, b + 8, a + 12, b + 12, -1, -1,
                                        -1, -1, -1, -1, -1, -1, a, b, a + 4, b + 4, a + 8, b + 8,
                                        a + 12, b + 12, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i packed =
      _mm256_permute4x64_epi64(_mm256_shuffle_epi8(reinterpret_cast<__m256i>(v), pick), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(packed));
}

// Stores the low 8 bits of each 32-bit lane.
MIXCCL_LANE_INLINE void storeLowBytes(U32x8 v, uint8_t* dst) {
  const __m256i pick =
      _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i packed =
      _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(reinterpret_cast<__m256i>(v), pick),
                                  _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(packed));
}

struct Bf16 {
  using Storage = uint16_t;
  static MIXCCL_LANE_INLINE void load(const uint16_t* src, F32x8& out) {
    out = reinterpret_cast<F32x8>(loadWidened(src) << 16);
  }
  static MIXCCL_LANE_INLINE void store(const F32x8& in, uint16_t* dst) {
    // floatToBf16 without its final shift: the result is in the high halfword of each lane.
    const U32x8 bits = reinterpret_cast<U32x8>(in);
    const U32x8 rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
    const I32x8 abs = reinterpret_cast<I32x8>(bits & 0x7FFFFFFFu);
    storeHalfwords<true>(abs > 0x7F800000 ? (bits | 0x400000u) : rounded, dst);
  }
};

// F16C: the hardware conversions; round to nearest even whatever MXCSR says.
struct HalfF16c {
  using Storage = uint16_t;
  static MIXCCL_LANE_INLINE void load(const uint16_t* src, F32x8& out) {
    out = reinterpret_cast<F32x8>(
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))));
  }
  static MIXCCL_LANE_INLINE void store(const F32x8& in, uint16_t* dst) {
    constexpr int kRounding = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                     _mm256_cvtps_ph(reinterpret_cast<__m256>(in), kRounding));
  }
};

// fp8 encoding: floatbits::roundMagnitude's method on all lanes, blending the cases instead of
// branching on them.
template <int kManBits, int kBias, uint32_t kOverflowCode>
MIXCCL_LANE_INLINE void storeFp8(const F32x8& in, uint8_t* dst) {
  using R = floatbits::NarrowRounding<kManBits, kBias>;
  const U32x8 bits = reinterpret_cast<U32x8>(in);
  const U32x8 sign = (bits >> 24) & 0x80u;
  const U32x8 abs = bits & 0x7FFFFFFFu;
  U32x8 normal = abs - R::kRebias;
  normal += ((1u << (R::kDroppedBits - 1)) - 1) + ((normal >> R::kDroppedBits) & 1u);
  normal >>= R::kDroppedBits;
  const F32x8 sum = reinterpret_cast<F32x8>(abs) + floatbits::fromBits(R::kSubnormalMagicBits);
  const U32x8 subnormal = reinterpret_cast<U32x8>(sum) - R::kSubnormalMagicBits;
  const I32x8 signedAbs = reinterpret_cast<I32x8>(abs);  // < 2^31: signed compares are exact
  U32x8 code = signedAbs >= static_cast<int32_t>(R::kMinNormalBits) ? normal : subnormal;
  // Satfinite: codes grow with the magnitude, so clamping the code clamps the value (inf too).
  code = code < kOverflowCode ? code : kOverflowCode;
  code = signedAbs > 0x7F800000 ? 0x7Fu : code;  // NaN
  storeLowBytes(sign | code, dst);
}

struct Fp8e4m3 {
  using Storage = uint8_t;
  // Arithmetic decode, equal to the table: normal codes rebias, subnormal ones are m * 2^-9.
  static MIXCCL_LANE_INLINE void load(const uint8_t* src, F32x8& out) {
    const U32x8 c = loadWidened(src);
    const U32x8 sign = (c & 0x80u) << 24;
    const U32x8 magnitude = c & 0x7Fu;
    const U32x8 normal = (magnitude << 20) + (120u << 23);
    const F32x8 subnormal =
        __builtin_convertvector(reinterpret_cast<I32x8>(magnitude), F32x8) * 0x1p-9f;
    U32x8 bits = magnitude < 8u ? reinterpret_cast<U32x8>(subnormal) : normal;
    bits = magnitude == 0x7Fu ? 0x7FC00000u : bits;
    out = reinterpret_cast<F32x8>(sign | bits);
  }
  static MIXCCL_LANE_INLINE void store(const F32x8& in, uint8_t* dst) {
    storeFp8<3, 7, 0x7Eu>(in, dst);
  }
};

struct Fp8e5m2 {
  using Storage = uint8_t;
  // E5M2 is the top byte of a half.
  static MIXCCL_LANE_INLINE void load(const uint8_t* src, F32x8& out) {
    const __m128i halves = _mm_slli_epi16(
        _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src))), 8);
    out = reinterpret_cast<F32x8>(_mm256_cvtph_ps(halves));
  }
  static MIXCCL_LANE_INLINE void store(const F32x8& in, uint8_t* dst) {
    storeFp8<2, 15, 0x7Bu>(in, dst);
  }
};

#undef MIXCCL_LANE_INLINE

}  // namespace lanes

#endif  // MIXCCL_HAVE_FLOAT_LANES

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

// True on x86 CPUs (and OSes) that run the AVX2+F16C kernels here and in reduce.cc.
bool cpuHasAvx2F16c();

const ConversionKernels& activeConversionKernels();  // picked once from the CPU's features

}  // namespace detail

}  // namespace mixccl

#endif  // MIXCCL_ALGO_FLOAT_FORMATS_H_
