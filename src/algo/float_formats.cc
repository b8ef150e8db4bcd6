#include "algo/float_formats.h"

#include <array>
#include <limits>

#ifdef MIXCCL_HAVE_FLOAT_LANES
#include <cpuid.h>
#endif

// The bulk conversions come in two builds: a portable one, plain loops over the scalar
// functions of the header, and on x86 an AVX2+F16C one over the header's lane codecs, chosen
// once at run time. (Lane code rather than the auto-vectoriser: at -O2 GCC 12 does not
// vectorise loops with a variable trip count.) Both builds are bit-identical to the scalar
// functions; the unit tests check every build the machine can run.

namespace mixccl {

namespace {

// ---- The E4M3 decode table, computed at compile time ----

constexpr float powerOfTwo(int e) {
  float p = 1.0f;
  for (; e > 0; --e) p *= 2.0f;
  for (; e < 0; ++e) p *= 0.5f;
  return p;
}

// S.EEEE.MMM, bias 7: exponent 0 is subnormal (m * 2^-9), and S.1111.111 is the only NaN.
constexpr float fp8e4m3Value(unsigned code) {
  const unsigned exp = (code >> 3) & 0xFu;
  const unsigned man = code & 0x7u;
  float mag = 0.0f;
  if (exp == 0xF && man == 0x7) {
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    mag = static_cast<float>(man) * powerOfTwo(-9);
  } else {
    mag = static_cast<float>(man + 8) * powerOfTwo(static_cast<int>(exp) - 10);
  }
  return (code & 0x80u) ? -mag : mag;
}

constexpr std::array<float, 256> makeFp8e4m3Table() {
  std::array<float, 256> table{};
  for (unsigned code = 0; code < 256; ++code) table[code] = fp8e4m3Value(code);
  return table;
}

}  // namespace

// A constant expression, so it is constant-initialised: no static-initialisation order
// issue when another translation unit's initialiser converts fp8.
extern const std::array<float, 256> kFp8e4m3Values = makeFp8e4m3Table();

namespace {

// ---- Portable build: the scalar definitions, element by element ----

namespace portable {

template <typename From, typename To, To (*kConvert)(From)>
void convertEach(const From* src, To* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = kConvert(src[i]);
}

}  // namespace portable

#ifdef MIXCCL_HAVE_FLOAT_LANES

namespace avx2 {

#define MIXCCL_AVX2 __attribute__((target("avx2,f16c")))

// Whole groups of lanes::kCount, then the tail once through a zero-padded copy, so every
// element goes through the same code.
template <class Codec>
MIXCCL_AVX2 void widenAll(const typename Codec::Storage* src, float* dst, size_t count) {
  using S = typename Codec::Storage;
  constexpr size_t kN = lanes::kCount;
  lanes::F32x8 v;
  size_t i = 0;
  for (; i + kN <= count; i += kN) {
    Codec::load(src + i, v);
    std::memcpy(dst + i, &v, sizeof v);
  }
  if (i == count) return;
  S in[kN] = {};
  std::memcpy(in, src + i, (count - i) * sizeof(S));
  Codec::load(in, v);
  std::memcpy(dst + i, &v, (count - i) * sizeof(float));
}

template <class Codec>
MIXCCL_AVX2 void narrowAll(const float* src, typename Codec::Storage* dst, size_t count) {
  using S = typename Codec::Storage;
  constexpr size_t kN = lanes::kCount;
  lanes::F32x8 v;
  size_t i = 0;
  for (; i + kN <= count; i += kN) {
    std::memcpy(&v, src + i, sizeof v);
    Codec::store(v, dst + i);
  }
  if (i == count) return;
  float in[kN] = {};
  S out[kN];
  std::memcpy(in, src + i, (count - i) * sizeof(float));
  std::memcpy(&v, in, sizeof v);
  Codec::store(v, out);
  std::memcpy(dst + i, out, (count - i) * sizeof(S));
}

#undef MIXCCL_AVX2

}  // namespace avx2

#endif  // MIXCCL_HAVE_FLOAT_LANES

}  // namespace

namespace detail {

bool cpuHasAvx2F16c() {
#ifdef MIXCCL_HAVE_FLOAT_LANES
  // The avx2 test also checks that the OS saves the AVX registers. F16C is read from CPUID
  // leaf 1 (ECX bit 29) because clang's __builtin_cpu_supports does not know "f16c".
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
         (ecx & (1u << 29)) != 0;
#else
  return false;
#endif
}

const ConversionKernels& portableConversionKernels() {
  using portable::convertEach;
  static const ConversionKernels kernels = {"portable",
                                            convertEach<uint16_t, float, mixccl::halfToFloat>,
                                            convertEach<float, uint16_t, mixccl::floatToHalf>,
                                            convertEach<uint16_t, float, mixccl::bf16ToFloat>,
                                            convertEach<float, uint16_t, mixccl::floatToBf16>,
                                            convertEach<uint8_t, float, mixccl::fp8e4m3ToFloat>,
                                            convertEach<float, uint8_t, mixccl::floatToFp8e4m3>,
                                            convertEach<uint8_t, float, mixccl::fp8e5m2ToFloat>,
                                            convertEach<float, uint8_t, mixccl::floatToFp8e5m2>};
  return kernels;
}

// Chosen once, on first use (thread-safe function-local static).
const ConversionKernels& activeConversionKernels() {
#ifdef MIXCCL_HAVE_FLOAT_LANES
  using avx2::narrowAll;
  using avx2::widenAll;
  static const ConversionKernels avx2Kernels = {"avx2+f16c",
                                                widenAll<lanes::HalfF16c>,
                                                narrowAll<lanes::HalfF16c>,
                                                widenAll<lanes::Bf16>,
                                                narrowAll<lanes::Bf16>,
                                                widenAll<lanes::Fp8e4m3>,
                                                narrowAll<lanes::Fp8e4m3>,
                                                widenAll<lanes::Fp8e5m2>,
                                                narrowAll<lanes::Fp8e5m2>};
  static const bool useAvx2 = cpuHasAvx2F16c();
  if (useAvx2) return avx2Kernels;
#endif
  return portableConversionKernels();
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
