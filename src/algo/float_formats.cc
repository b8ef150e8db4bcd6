#include "algo/float_formats.h"

#include <array>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MIXCCL_HAVE_X86 1
#endif

// The bulk conversions come in two builds of the same source: the baseline ISA and, on x86,
// AVX2+F16C, chosen once at run time. The lane-parallel code uses GCC vector extensions (8
// lanes of 32 bits) instead of relying on the auto-vectoriser, which at -O2 leaves loops with
// a variable trip count scalar. Every kernel is bit-identical to the scalar functions in the
// header; the unit tests check this for both builds.
#define MIXCCL_ALWAYS_INLINE __attribute__((always_inline)) inline

namespace mixccl {

namespace {

// ---- fp8 decode tables, computed at compile time ----

constexpr float powerOfTwo(int e) {
  float p = 1.0f;
  for (; e > 0; --e) p *= 2.0f;
  for (; e < 0; ++e) p *= 0.5f;
  return p;
}

// Value of an fp8 code with kManBits mantissa bits and bias kBias. kIeeeSpecials: the all-ones
// exponent means inf/NaN (E5M2); otherwise only S.1111.111 is NaN (E4M3FN).
template <int kManBits, int kBias, bool kIeeeSpecials>
constexpr float fp8Value(unsigned code) {
  constexpr unsigned kExpMask = (0x7Fu >> kManBits);
  const bool negative = (code & 0x80u) != 0;
  const unsigned exp = (code >> kManBits) & kExpMask;
  const unsigned man = code & ((1u << kManBits) - 1);
  float mag = 0.0f;
  if (kIeeeSpecials && exp == kExpMask) {
    mag = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else if (!kIeeeSpecials && exp == kExpMask && man == (1u << kManBits) - 1) {
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    mag = static_cast<float>(man) * powerOfTwo(1 - kBias - kManBits);
  } else {
    mag = static_cast<float>(man + (1u << kManBits)) *
          powerOfTwo(static_cast<int>(exp) - kBias - kManBits);
  }
  return negative ? -mag : mag;
}

template <int kManBits, int kBias, bool kIeeeSpecials>
constexpr std::array<float, 256> makeFp8Table() {
  std::array<float, 256> table{};
  for (unsigned code = 0; code < 256; ++code) {
    table[code] = fp8Value<kManBits, kBias, kIeeeSpecials>(code);
  }
  return table;
}

// ---- Lane-parallel kernels ----

constexpr size_t kLanes = 8;
typedef uint32_t U32x8 __attribute__((vector_size(32)));
typedef int32_t I32x8 __attribute__((vector_size(32)));
typedef float F32x8 __attribute__((vector_size(32)));
typedef uint16_t U16x8 __attribute__((vector_size(16)));
typedef uint8_t U8x8 __attribute__((vector_size(8)));

typedef uint16_t U16x16 __attribute__((vector_size(32)));
typedef uint8_t U8x32 __attribute__((vector_size(32)));

// Keeps the low 16 or 8 bits of each 32-bit lane. A byte shuffle, because GCC 12 lowers
// __builtin_convertvector to narrower lanes into one scalar extract per lane.
MIXCCL_ALWAYS_INLINE void storeLowHalves(const U32x8& lanes, uint16_t* dst) {
  const U16x16 v = reinterpret_cast<U16x16>(lanes);
  const U16x8 low = __builtin_shufflevector(v, v, 0, 2, 4, 6, 8, 10, 12, 14);
  std::memcpy(dst, &low, sizeof low);
}

MIXCCL_ALWAYS_INLINE void storeLowHalves(const U32x8& lanes, uint8_t* dst) {
  const U8x32 v = reinterpret_cast<U8x32>(lanes);
  const U8x8 low = __builtin_shufflevector(v, v, 0, 4, 8, 12, 16, 20, 24, 28);
  std::memcpy(dst, &low, sizeof low);
}

// Narrow formats rounded by roundLanes (mirrors floatToHalf / floatToFp8* in the header).
struct HalfFormat {
  using Storage = uint16_t;
  static constexpr int kManBits = 10, kBias = 15, kSignShift = 16;
  static constexpr uint32_t kSignBit = 0x8000u;
  static constexpr uint32_t kOverflowAbove = 0x477FF000u;  // |x| >= 65520 -> inf
  static constexpr uint32_t kOverflowCode = 0x7C00u;
  static constexpr uint32_t kNanCode = 0x7E00u, kNanPayloadMask = 0x3FFu;
};

struct E4m3Format {
  using Storage = uint8_t;
  static constexpr int kManBits = 3, kBias = 7, kSignShift = 24;
  static constexpr uint32_t kSignBit = 0x80u;
  static constexpr uint32_t kOverflowAbove = 0x43E00000u;  // |x| >= 448 -> 448 (satfinite)
  static constexpr uint32_t kOverflowCode = 0x7Eu;
  static constexpr uint32_t kNanCode = 0x7Fu, kNanPayloadMask = 0u;
};

struct E5m2Format {
  using Storage = uint8_t;
  static constexpr int kManBits = 2, kBias = 15, kSignShift = 24;
  static constexpr uint32_t kSignBit = 0x80u;
  static constexpr uint32_t kOverflowAbove = 0x47600000u;  // |x| >= 57344 -> 57344
  static constexpr uint32_t kOverflowCode = 0x7Bu;
  static constexpr uint32_t kNanCode = 0x7Fu, kNanPayloadMask = 0u;
};

// floatbits::roundMagnitude plus the specials, computed for all lanes and blended instead of
// branched on. (Vectors pass by reference: their by-value ABI differs between the ISA builds.)
template <class Fmt>
MIXCCL_ALWAYS_INLINE void roundLanes(const U32x8& bits, U32x8& result) {
  constexpr int kDropped = 23 - Fmt::kManBits;
  constexpr int kMinNormalExp = 1 - Fmt::kBias;
  const U32x8 sign = (bits >> Fmt::kSignShift) & Fmt::kSignBit;
  const U32x8 abs = bits & 0x7FFFFFFFu;
  const I32x8 exp = reinterpret_cast<I32x8>(abs >> 23) - 127;

  // Normal result: rebias, round the mantissa (a carry bumps the exponent).
  U32x8 normal = abs - (static_cast<uint32_t>(127 - Fmt::kBias) << 23);
  normal = (normal + ((1u << (kDropped - 1)) - 1) + ((normal >> kDropped) & 1u)) >> kDropped;

  // Subnormal result: shift the full mantissa; shifts are clamped to [1, 25] so that every
  // lane (also the normal ones, whose result is discarded) shifts by a defined amount.
  I32x8 shift = (kDropped + kMinNormalExp) - exp;
  shift = shift > 25 ? 25 : shift;
  shift = shift < 1 ? 1 : shift;
  const U32x8 ushift = reinterpret_cast<U32x8>(shift);
  const U32x8 mant = (abs & 0x7FFFFFu) | 0x800000u;
  U32x8 sub = mant >> ushift;
  const U32x8 rest = mant & ((1u << ushift) - 1u);
  const U32x8 halfway = 1u << (ushift - 1u);
  const I32x8 roundUp = (rest > halfway) | ((rest == halfway) & ((sub & 1u) != 0u));
  sub -= reinterpret_cast<U32x8>(roundUp);  // a true mask is all ones, i.e. -1

  U32x8 code = exp >= kMinNormalExp ? normal : sub;
  code = abs >= Fmt::kOverflowAbove ? Fmt::kOverflowCode : code;
  const U32x8 nan = Fmt::kNanCode | ((abs >> kDropped) & Fmt::kNanPayloadMask);
  code = abs > 0x7F800000u ? nan : code;
  result = sign | code;
}

template <class Fmt>
MIXCCL_ALWAYS_INLINE void narrowLanes(const float* src, typename Fmt::Storage* dst) {
  U32x8 bits;
  std::memcpy(&bits, src, sizeof bits);
  U32x8 codes;
  roundLanes<Fmt>(bits, codes);
  storeLowHalves(codes, dst);
}

MIXCCL_ALWAYS_INLINE void bf16NarrowLanes(const float* src, uint16_t* dst) {
  U32x8 bits;
  std::memcpy(&bits, src, sizeof bits);
  const U32x8 rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const U32x8 quietNan = (bits >> 16) | 0x40u;
  const U32x8 code = (bits & 0x7FFFFFFFu) > 0x7F800000u ? quietNan : rounded;
  storeLowHalves(code, dst);
}

MIXCCL_ALWAYS_INLINE void bf16WidenLanes(const uint16_t* src, float* dst) {
  U16x8 in;
  std::memcpy(&in, src, sizeof in);
  const U32x8 bits = __builtin_convertvector(in, U32x8) << 16;
  std::memcpy(dst, &bits, sizeof bits);
}

MIXCCL_ALWAYS_INLINE void halfWidenLanes(const uint16_t* src, float* dst) {
  U16x8 in;
  std::memcpy(&in, src, sizeof in);
  const U32x8 h = __builtin_convertvector(in, U32x8);
  const U32x8 sign = (h & 0x8000u) << 16;
  const U32x8 exp = (h >> 10) & 0x1Fu;
  const U32x8 man = h & 0x3FFu;
  const U32x8 normal = sign | ((exp + 112u) << 23) | (man << 13);
  const U32x8 quietBit = man != 0u ? 0x400000u : 0u;
  const U32x8 special = sign | 0x7F800000u | (man << 13) | quietBit;
  // Signed lanes: int -> float is one instruction, unsigned -> float is not.
  const F32x8 subMag = __builtin_convertvector(reinterpret_cast<I32x8>(man), F32x8) * 0x1p-24f;
  const U32x8 subnormal = sign | reinterpret_cast<U32x8>(subMag);
  U32x8 out = exp == 0x1Fu ? special : normal;
  out = exp == 0u ? subnormal : out;
  std::memcpy(dst, &out, sizeof out);
}

// Runs a lanes kernel over whole groups of kLanes, then once more on a zero-padded copy of the
// tail, so every element goes through the same code.
template <typename From, typename To, void (*kLanesFn)(const From*, To*)>
MIXCCL_ALWAYS_INLINE void convertAll(const From* src, To* dst, size_t count) {
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) kLanesFn(src + i, dst + i);
  if (i == count) return;
  From in[kLanes] = {};
  To out[kLanes];
  std::memcpy(in, src + i, (count - i) * sizeof(From));
  kLanesFn(in, out);
  std::memcpy(dst + i, out, (count - i) * sizeof(To));
}

MIXCCL_ALWAYS_INLINE void fp8WidenTable(const uint8_t* src, float* dst, size_t count,
                                        const std::array<float, 256>& table) {
  for (size_t i = 0; i < count; ++i) dst[i] = table[src[i]];
}

}  // namespace

// Constant expressions, so these are constant-initialised: no static-initialisation order
// issue when another translation unit's initialiser converts fp8.
extern const std::array<float, 256> kFp8e4m3Values = makeFp8Table<3, 7, false>();
extern const std::array<float, 256> kFp8e5m2Values = makeFp8Table<2, 15, true>();

namespace {

// The kernel set, compiled once per ISA: namespace NS, function attributes ATTR. (A macro,
// because a target attribute cannot be a template argument.) Half is separate: the AVX2 build
// uses the F16C instructions for it instead.
#define MIXCCL_CONVERSION_KERNELS(NS, ATTR)                                                  \
  namespace NS {                                                                             \
  ATTR void bf16ToFloat(const uint16_t* s, float* d, size_t n) {                             \
    convertAll<uint16_t, float, bf16WidenLanes>(s, d, n);                                    \
  }                                                                                          \
  ATTR void floatToBf16(const float* s, uint16_t* d, size_t n) {                             \
    convertAll<float, uint16_t, bf16NarrowLanes>(s, d, n);                                   \
  }                                                                                          \
  ATTR void fp8e4m3ToFloat(const uint8_t* s, float* d, size_t n) {                           \
    fp8WidenTable(s, d, n, kFp8e4m3Values);                                                  \
  }                                                                                          \
  ATTR void floatToFp8e4m3(const float* s, uint8_t* d, size_t n) {                           \
    convertAll<float, uint8_t, narrowLanes<E4m3Format>>(s, d, n);                            \
  }                                                                                          \
  ATTR void fp8e5m2ToFloat(const uint8_t* s, float* d, size_t n) {                           \
    fp8WidenTable(s, d, n, kFp8e5m2Values);                                                  \
  }                                                                                          \
  ATTR void floatToFp8e5m2(const float* s, uint8_t* d, size_t n) {                           \
    convertAll<float, uint8_t, narrowLanes<E5m2Format>>(s, d, n);                            \
  }                                                                                          \
  }  // namespace NS

MIXCCL_CONVERSION_KERNELS(baseline, )

namespace baseline {

void halfToFloat(const uint16_t* s, float* d, size_t n) {
  convertAll<uint16_t, float, halfWidenLanes>(s, d, n);
}

void floatToHalf(const float* s, uint16_t* d, size_t n) {
  convertAll<float, uint16_t, narrowLanes<HalfFormat>>(s, d, n);
}

}  // namespace baseline

#ifdef MIXCCL_HAVE_X86
MIXCCL_CONVERSION_KERNELS(avx2, __attribute__((target("avx2,f16c"))))

namespace avx2 {

// The hardware half conversions replace the lane kernels in this build.
__attribute__((target("avx2,f16c"))) void halfToFloatF16c(const uint16_t* src, float* dst,
                                                           size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  if (i == count) return;
  uint16_t in[8] = {};
  float out[8];
  std::memcpy(in, src + i, (count - i) * sizeof(uint16_t));
  _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
  std::memcpy(dst + i, out, (count - i) * sizeof(float));
}

__attribute__((target("avx2,f16c"))) void floatToHalfF16c(const float* src, uint16_t* dst,
                                                           size_t count) {
  // Round to nearest even whatever MXCSR says.
  constexpr int kRounding = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), kRounding);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  if (i == count) return;
  float in[8] = {};
  uint16_t out[8];
  std::memcpy(in, src + i, (count - i) * sizeof(float));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_cvtps_ph(_mm256_loadu_ps(in), kRounding));
  std::memcpy(dst + i, out, (count - i) * sizeof(uint16_t));
}

}  // namespace avx2

bool cpuHasAvx2F16c() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}
#endif  // MIXCCL_HAVE_X86

}  // namespace

namespace detail {

const ConversionKernels& baselineConversionKernels() {
  static const ConversionKernels kernels = {
      "baseline",
      baseline::halfToFloat,    baseline::floatToHalf,    baseline::bf16ToFloat,
      baseline::floatToBf16,    baseline::fp8e4m3ToFloat, baseline::floatToFp8e4m3,
      baseline::fp8e5m2ToFloat, baseline::floatToFp8e5m2};
  return kernels;
}

// Chosen once, on first use (thread-safe function-local static).
const ConversionKernels& activeConversionKernels() {
#ifdef MIXCCL_HAVE_X86
  static const ConversionKernels avx2Kernels = {
      "avx2+f16c",
      avx2::halfToFloatF16c, avx2::floatToHalfF16c, avx2::bf16ToFloat,
      avx2::floatToBf16,     avx2::fp8e4m3ToFloat,  avx2::floatToFp8e4m3,
      avx2::fp8e5m2ToFloat,  avx2::floatToFp8e5m2};
  static const bool useAvx2 = cpuHasAvx2F16c();
  if (useAvx2) return avx2Kernels;
#endif
  return baselineConversionKernels();
}

}  // namespace detail

void halfToFloatN(const uint16_t* src, float* dst, size_t count) {
  detail::activeConversionKernels().halfToFloat(src, dst, count);
}

void floatToHalfN(const float* src, uint16_t* dst, size_t count) {
  detail::activeConversionKernels().floatToHalf(src, dst, count);
}

void bf16ToFloatN(const uint16_t* src, float* dst, size_t count) {
  detail::activeConversionKernels().bf16ToFloat(src, dst, count);
}

void floatToBf16N(const float* src, uint16_t* dst, size_t count) {
  detail::activeConversionKernels().floatToBf16(src, dst, count);
}

void fp8e4m3ToFloatN(const uint8_t* src, float* dst, size_t count) {
  detail::activeConversionKernels().fp8e4m3ToFloat(src, dst, count);
}

void floatToFp8e4m3N(const float* src, uint8_t* dst, size_t count) {
  detail::activeConversionKernels().floatToFp8e4m3(src, dst, count);
}

void fp8e5m2ToFloatN(const uint8_t* src, float* dst, size_t count) {
  detail::activeConversionKernels().fp8e5m2ToFloat(src, dst, count);
}

void floatToFp8e5m2N(const float* src, uint8_t* dst, size_t count) {
  detail::activeConversionKernels().floatToFp8e5m2(src, dst, count);
}

}  // namespace mixccl
