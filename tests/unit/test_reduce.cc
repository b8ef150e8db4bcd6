// Tests for the reduction kernels. Expected results are computed element by element here,
// with plain scalar arithmetic, and compared with what reduce()/divideBy() produce.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algo/float_formats.h"
#include "algo/reduce.h"

namespace mixccl {
namespace {

const mixcclDataType_t kAllTypes[] = {mixcclInt8,     mixcclUint8,      mixcclInt32,
                                      mixcclUint32,   mixcclInt64,      mixcclUint64,
                                      mixcclFloat16,  mixcclFloat32,    mixcclFloat64,
                                      mixcclBfloat16, mixcclFloat8e4m3, mixcclFloat8e5m2};
const mixcclRedOp_t kAllOps[] = {mixcclSum, mixcclProd, mixcclMax, mixcclMin, mixcclAvg};
const size_t kCounts[] = {0, 1, 7, 1000, 4099};

std::string label(mixcclDataType_t type, mixcclRedOp_t op) {
  return std::string(dataTypeName(type)) + "/" + redOpName(op);
}

// ---- Scalar reference ----

// Integer Sum/Prod wrap: do it in uint64_t (arithmetic mod 2^64) and keep the low bits.
template <typename T>
T refInteger(T a, T b, mixcclRedOp_t op) {
  const uint64_t ua = static_cast<uint64_t>(a);
  const uint64_t ub = static_cast<uint64_t>(b);
  switch (op) {
    case mixcclSum:
    case mixcclAvg:
      return static_cast<T>(ua + ub);
    case mixcclProd:
      return static_cast<T>(ua * ub);
    case mixcclMax:
      return a > b ? a : b;
    case mixcclMin:
      return a < b ? a : b;
    default:
      return 0;
  }
}

template <typename F>
F refFloating(F a, F b, mixcclRedOp_t op) {
  switch (op) {
    case mixcclSum:
    case mixcclAvg:
      return a + b;
    case mixcclProd:
      return a * b;
    case mixcclMax:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
      return a > b ? a : b;
    case mixcclMin:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
      return a < b ? a : b;
    default:
      return 0;
  }
}

// Codec for one narrow float type: the conversions are tested in test_float_formats.cc.
struct NarrowCodec {
  float (*toFloat)(const void* p, size_t i) = nullptr;
  void (*store)(void* p, size_t i, float v) = nullptr;
};

template <typename S, float (*kDecode)(S), S (*kEncode)(float)>
NarrowCodec makeCodec() {
  return {[](const void* p, size_t i) { return kDecode(static_cast<const S*>(p)[i]); },
          [](void* p, size_t i, float v) { static_cast<S*>(p)[i] = kEncode(v); }};
}

bool narrowCodec(mixcclDataType_t type, NarrowCodec* codec) {
  switch (type) {
    case mixcclFloat16:
      *codec = makeCodec<uint16_t, halfToFloat, floatToHalf>();
      return true;
    case mixcclBfloat16:
      *codec = makeCodec<uint16_t, bf16ToFloat, floatToBf16>();
      return true;
    case mixcclFloat8e4m3:
      *codec = makeCodec<uint8_t, fp8e4m3ToFloat, floatToFp8e4m3>();
      return true;
    case mixcclFloat8e5m2:
      *codec = makeCodec<uint8_t, fp8e5m2ToFloat, floatToFp8e5m2>();
      return true;
    default:
      return false;
  }
}

template <typename T>
void refElement(void* out, const void* a, const void* b, size_t i, mixcclRedOp_t op) {
  const T x = static_cast<const T*>(a)[i];
  const T y = static_cast<const T*>(b)[i];
  if constexpr (std::is_floating_point_v<T>) {
    static_cast<T*>(out)[i] = refFloating<T>(x, y, op);
  } else {
    static_cast<T*>(out)[i] = refInteger<T>(x, y, op);
  }
}

// out[i] = a[i] op b[i] computed one element at a time.
void referenceReduce(void* out, const void* a, const void* b, size_t count, mixcclDataType_t type,
                     mixcclRedOp_t op) {
  NarrowCodec codec;
  const bool narrow = narrowCodec(type, &codec);
  for (size_t i = 0; i < count; ++i) {
    if (narrow) {
      codec.store(out, i, refFloating<float>(codec.toFloat(a, i), codec.toFloat(b, i), op));
      continue;
    }
    switch (type) {
      case mixcclInt8:
        refElement<int8_t>(out, a, b, i, op);
        break;
      case mixcclUint8:
        refElement<uint8_t>(out, a, b, i, op);
        break;
      case mixcclInt32:
        refElement<int32_t>(out, a, b, i, op);
        break;
      case mixcclUint32:
        refElement<uint32_t>(out, a, b, i, op);
        break;
      case mixcclInt64:
        refElement<int64_t>(out, a, b, i, op);
        break;
      case mixcclUint64:
        refElement<uint64_t>(out, a, b, i, op);
        break;
      case mixcclFloat32:
        refElement<float>(out, a, b, i, op);
        break;
      case mixcclFloat64:
        refElement<double>(out, a, b, i, op);
        break;
      default:
        break;
    }
  }
}

// Element i of buf as a double (NaN for NaN), for comparing floating results by value: the
// sign of a zero from Max(-0, +0) and NaN payloads are unspecified.
double valueAt(const void* buf, size_t i, mixcclDataType_t type) {
  NarrowCodec codec;
  if (narrowCodec(type, &codec)) return codec.toFloat(buf, i);
  if (type == mixcclFloat32) return static_cast<const float*>(buf)[i];
  return static_cast<const double*>(buf)[i];
}

bool isFloating(mixcclDataType_t type) {
  return type == mixcclFloat16 || type == mixcclFloat32 || type == mixcclFloat64 ||
         type == mixcclBfloat16 || type == mixcclFloat8e4m3 || type == mixcclFloat8e5m2;
}

void expectSameElements(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                        size_t count, mixcclDataType_t type, const std::string& what) {
  const size_t size = dataTypeSize(type);
  int failures = 0;
  for (size_t i = 0; i < count; ++i) {
    bool same;
    if (isFloating(type)) {
      const double g = valueAt(got.data(), i, type);
      const double w = valueAt(want.data(), i, type);
      same = (std::isnan(g) && std::isnan(w)) || g == w;
    } else {
      same = std::memcmp(got.data() + i * size, want.data() + i * size, size) == 0;
    }
    if (!same && ++failures <= 5) {
      ADD_FAILURE() << what << ": element " << i << " of " << count << " differs";
    }
  }
  EXPECT_EQ(failures, 0) << what;
}

// ---- Random inputs: full-range integers, finite floats, narrow codes that are neither NaN
// nor inf (NaN payloads and inf - inf are checked by dedicated tests) ----

std::vector<uint8_t> randomBuffer(mixcclDataType_t type, size_t count, std::mt19937& rng) {
  const size_t size = dataTypeSize(type);
  std::vector<uint8_t> buf(count * size + 1);  // +1: never empty, so data() is usable
  std::uniform_real_distribution<double> real(-1000.0, 1000.0);
  for (size_t i = 0; i < count; ++i) {
    uint8_t* p = buf.data() + i * size;
    switch (type) {
      case mixcclFloat32: {
        const float f = static_cast<float>(real(rng));
        std::memcpy(p, &f, size);
        break;
      }
      case mixcclFloat64: {
        const double d = real(rng);
        std::memcpy(p, &d, size);
        break;
      }
      case mixcclFloat16:
      case mixcclBfloat16:
      case mixcclFloat8e4m3:
      case mixcclFloat8e5m2: {
        NarrowCodec codec;
        narrowCodec(type, &codec);
        do {
          for (size_t k = 0; k < size; ++k) p[k] = static_cast<uint8_t>(rng());
        } while (!std::isfinite(codec.toFloat(buf.data(), i)));
        break;
      }
      default:
        for (size_t k = 0; k < size; ++k) p[k] = static_cast<uint8_t>(rng());
        break;
    }
  }
  return buf;
}

// ---- Tables ----

TEST(ReduceTables, SizesNamesAndValidity) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  const char* names[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                         "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  for (int t = 0; t < mixcclNumTypes; ++t) {
    const auto type = static_cast<mixcclDataType_t>(t);
    EXPECT_TRUE(isValidDataType(t));
    EXPECT_EQ(dataTypeSize(type), sizes[t]) << t;
    EXPECT_STREQ(dataTypeName(type), names[t]);
  }
  EXPECT_FALSE(isValidDataType(-1));
  EXPECT_FALSE(isValidDataType(mixcclNumTypes));
  EXPECT_EQ(dataTypeSize(static_cast<mixcclDataType_t>(mixcclNumTypes)), 0u);
  EXPECT_EQ(dataTypeSize(static_cast<mixcclDataType_t>(-1)), 0u);

  const char* opNames[] = {"sum", "prod", "max", "min", "avg"};
  for (int o = 0; o < mixcclNumOps; ++o) {
    EXPECT_TRUE(isValidRedOp(o));
    EXPECT_STREQ(redOpName(static_cast<mixcclRedOp_t>(o)), opNames[o]);
  }
  EXPECT_FALSE(isValidRedOp(-1));
  EXPECT_FALSE(isValidRedOp(mixcclNumOps));
  EXPECT_STREQ(redOpName(static_cast<mixcclRedOp_t>(99)), "unknown");
  EXPECT_STREQ(dataTypeName(static_cast<mixcclDataType_t>(99)), "unknown");
}

// ---- Every type x op x count, out of place and in place ----

using ReduceFn = void (*)(void*, const void*, const void*, size_t, mixcclDataType_t, mixcclRedOp_t);

void checkEveryTypeOpAndCount(ReduceFn reduceFn) {
  std::mt19937 rng(42);
  for (mixcclDataType_t type : kAllTypes) {
    const size_t size = dataTypeSize(type);
    for (mixcclRedOp_t op : kAllOps) {
      for (size_t count : kCounts) {
        const std::string what = label(type, op) + " count " + std::to_string(count);
        const std::vector<uint8_t> a = randomBuffer(type, count, rng);
        const std::vector<uint8_t> b = randomBuffer(type, count, rng);
        std::vector<uint8_t> want(a.size());
        referenceReduce(want.data(), a.data(), b.data(), count, type, op);

        // Out of place, with a guard element after the end.
        std::vector<uint8_t> dst(count * size + size, 0xCD);
        reduceFn(dst.data(), a.data(), b.data(), count, type, op);
        expectSameElements(dst, want, count, type, what + " out of place");
        for (size_t k = count * size; k < dst.size(); ++k) {
          ASSERT_EQ(dst[k], 0xCD) << what << ": wrote past the end";
        }

        std::vector<uint8_t> inA = a;  // dst == a
        reduceFn(inA.data(), inA.data(), b.data(), count, type, op);
        expectSameElements(inA, want, count, type, what + " dst==a");

        std::vector<uint8_t> inB = b;  // dst == b
        reduceFn(inB.data(), a.data(), inB.data(), count, type, op);
        expectSameElements(inB, want, count, type, what + " dst==b");
      }
    }
  }
}

// The kernels the CPU dispatch picks (AVX2 on most x86 machines)...
TEST(Reduce, EveryTypeOpAndCountMatchesReference) { checkEveryTypeOpAndCount(reduce); }

// ...and the baseline ones, which would otherwise go untested on such machines.
TEST(Reduce, BaselineKernelsMatchReference) { checkEveryTypeOpAndCount(detail::reduceBaseline); }

TEST(Reduce, AllThreePointersEqual) {
  std::mt19937 rng(3);
  for (mixcclDataType_t type : kAllTypes) {
    for (mixcclRedOp_t op : kAllOps) {
      const std::vector<uint8_t> a = randomBuffer(type, 1000, rng);
      std::vector<uint8_t> want(a.size());
      referenceReduce(want.data(), a.data(), a.data(), 1000, type, op);
      std::vector<uint8_t> buf = a;
      reduce(buf.data(), buf.data(), buf.data(), 1000, type, op);
      expectSameElements(buf, want, 1000, type, label(type, op) + " dst==a==b");
    }
  }
}

TEST(Reduce, ZeroCountTouchesNothing) {
  uint8_t dst[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const uint8_t a[8] = {};
  reduce(dst, a, a, 0, mixcclFloat64, mixcclSum);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(dst[i], i + 1);
  reduce(nullptr, nullptr, nullptr, 0, mixcclFloat32, mixcclProd);
}

// ---- Integer semantics, with values written out by hand ----

template <typename T>
std::vector<T> run(const std::vector<T>& a, const std::vector<T>& b, mixcclDataType_t type,
                   mixcclRedOp_t op) {
  std::vector<T> dst(a.size());
  reduce(dst.data(), a.data(), b.data(), a.size(), type, op);
  return dst;
}

TEST(ReduceIntegers, SumAndProdWrap) {
  // Enough elements that both the vector body and the scalar tail see the edge cases.
  std::vector<int8_t> a8(37, 100), b8(37, 100);
  for (int8_t v : run(a8, b8, mixcclInt8, mixcclSum)) EXPECT_EQ(v, -56);
  EXPECT_EQ(run<int8_t>({-128, 127, -128}, {-1, 1, -128}, mixcclInt8, mixcclSum),
            (std::vector<int8_t>{127, -128, 0}));
  EXPECT_EQ(run<int8_t>({16, -128, 127}, {16, -1, 127}, mixcclInt8, mixcclProd),
            (std::vector<int8_t>{0, -128, 1}));
  std::vector<uint8_t> u8a(37, 200), u8b(37, 100);
  for (uint8_t v : run(u8a, u8b, mixcclUint8, mixcclSum)) EXPECT_EQ(v, 44);

  const int32_t i32max = std::numeric_limits<int32_t>::max();
  const int32_t i32min = std::numeric_limits<int32_t>::min();
  std::vector<int32_t> a32(19, i32max), b32(19, 1);
  for (int32_t v : run(a32, b32, mixcclInt32, mixcclSum)) EXPECT_EQ(v, i32min);
  std::vector<int32_t> p32(19, 65536);
  for (int32_t v : run(p32, p32, mixcclInt32, mixcclProd)) EXPECT_EQ(v, 0);
  EXPECT_EQ(run<int32_t>({i32min}, {-1}, mixcclInt32, mixcclProd), (std::vector<int32_t>{i32min}));
  EXPECT_EQ(run<uint32_t>({0xFFFFFFFFu, 3u}, {2u, 0xFFFFFFFFu}, mixcclUint32, mixcclSum),
            (std::vector<uint32_t>{1u, 2u}));

  const int64_t i64max = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> a64(11, i64max), b64(11, 1);
  for (int64_t v : run(a64, b64, mixcclInt64, mixcclSum)) {
    EXPECT_EQ(v, std::numeric_limits<int64_t>::min());
  }
  std::vector<int64_t> p64(11, int64_t{1} << 32);
  for (int64_t v : run(p64, p64, mixcclInt64, mixcclProd)) EXPECT_EQ(v, 0);
  std::vector<int64_t> q64(11, 3000000007LL), r64(11, -5000000011LL);
  for (int64_t v : run(q64, r64, mixcclInt64, mixcclProd)) {
    EXPECT_EQ(v, static_cast<int64_t>(3000000007ULL * static_cast<uint64_t>(-5000000011LL)));
  }
  std::vector<uint64_t> u64a(11, ~0ULL), u64b(11, 2);
  for (uint64_t v : run(u64a, u64b, mixcclUint64, mixcclSum)) EXPECT_EQ(v, 1u);
}

TEST(ReduceIntegers, MaxMinRespectSignedness) {
  std::vector<int8_t> a(40), b(40);
  std::vector<uint8_t> ua(40), ub(40);
  for (int i = 0; i < 40; ++i) {
    a[i] = static_cast<int8_t>(i % 2 ? -1 : 1);
    b[i] = static_cast<int8_t>(i % 2 ? 1 : -1);
    ua[i] = static_cast<uint8_t>(a[i]);
    ub[i] = static_cast<uint8_t>(b[i]);
  }
  for (int8_t v : run(a, b, mixcclInt8, mixcclMax)) EXPECT_EQ(v, 1);
  for (int8_t v : run(a, b, mixcclInt8, mixcclMin)) EXPECT_EQ(v, -1);
  for (uint8_t v : run(ua, ub, mixcclUint8, mixcclMax)) EXPECT_EQ(v, 255);
  for (uint8_t v : run(ua, ub, mixcclUint8, mixcclMin)) EXPECT_EQ(v, 1);

  EXPECT_EQ(run<int64_t>({std::numeric_limits<int64_t>::min(), 5}, {3, -7}, mixcclInt64, mixcclMax),
            (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(run<uint64_t>({~0ULL, 5}, {3, 7}, mixcclUint64, mixcclMin),
            (std::vector<uint64_t>{3, 5}));
  EXPECT_EQ(run<uint32_t>({0x80000000u, 1u}, {1u, 0x80000000u}, mixcclUint32, mixcclMax),
            (std::vector<uint32_t>{0x80000000u, 0x80000000u}));
}

TEST(ReduceIntegers, AvgIsSumInReduce) {
  EXPECT_EQ(run<int32_t>({1, -7, 100}, {2, 3, 1}, mixcclInt32, mixcclAvg),
            (std::vector<int32_t>{3, -4, 101}));
}

// ---- Floating point ----

TEST(ReduceFloats, KnownValues) {
  EXPECT_EQ(run<float>({1.5f, -2.0f, 1e30f}, {2.25f, 8.0f, 1e30f}, mixcclFloat32, mixcclSum),
            (std::vector<float>{3.75f, 6.0f, 2e30f}));
  EXPECT_EQ(run<float>({1.5f, -2.0f, 1e30f}, {2.0f, 8.0f, 1e30f}, mixcclFloat32, mixcclProd),
            (std::vector<float>{3.0f, -16.0f, std::numeric_limits<float>::infinity()}));
  EXPECT_EQ(run<double>({1.0, -3.0}, {1e-300, -2.0}, mixcclFloat64, mixcclMax),
            (std::vector<double>{1.0, -2.0}));
  EXPECT_EQ(run<double>({1.0, -3.0}, {1e-300, -2.0}, mixcclFloat64, mixcclMin),
            (std::vector<double>{1e-300, -3.0}));
}

// NaN in either operand, at every position of a vector and in the tail, gives NaN for
// Max and Min (and of course for Sum and Prod).
template <typename Store>
void checkNanPropagation(mixcclDataType_t type, Store store) {
  const size_t size = dataTypeSize(type);
  const size_t count = 77;
  for (mixcclRedOp_t op : kAllOps) {
    for (int nanInB = 0; nanInB < 2; ++nanInB) {
      std::vector<uint8_t> a(count * size), b(count * size), dst(count * size);
      for (size_t i = 0; i < count; ++i) {
        const bool nanHere = (i % 3) == 0;
        store(a.data(), i, (nanHere && !nanInB) ? NAN : 2.0f);
        store(b.data(), i, (nanHere && nanInB) ? NAN : (i % 2 ? 1.0f : 3.0f));
      }
      reduce(dst.data(), a.data(), b.data(), count, type, op);
      for (size_t i = 0; i < count; ++i) {
        const double v = valueAt(dst.data(), i, type);
        if (i % 3 == 0) {
          EXPECT_TRUE(std::isnan(v)) << label(type, op) << " element " << i << " nanInB " << nanInB;
        } else {
          EXPECT_FALSE(std::isnan(v)) << label(type, op) << " element " << i;
        }
      }
    }
  }
}

TEST(ReduceFloats, NanPropagatesThroughEveryOp) {
  checkNanPropagation(mixcclFloat32,
                      [](void* p, size_t i, float v) { static_cast<float*>(p)[i] = v; });
  checkNanPropagation(mixcclFloat64,
                      [](void* p, size_t i, float v) { static_cast<double*>(p)[i] = v; });
  for (mixcclDataType_t type :
       {mixcclFloat16, mixcclBfloat16, mixcclFloat8e4m3, mixcclFloat8e5m2}) {
    NarrowCodec codec;
    narrowCodec(type, &codec);
    checkNanPropagation(type, codec.store);
  }
}

TEST(ReduceFloats, InfinitiesFollowIeee) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> r =
      run<float>({inf, inf, -inf}, {1.0f, -inf, 0.0f}, mixcclFloat32, mixcclSum);
  EXPECT_EQ(r[0], inf);
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_EQ(r[2], -inf);
  EXPECT_EQ(run<float>({inf, -inf}, {5.0f, 5.0f}, mixcclFloat32, mixcclMax),
            (std::vector<float>{inf, 5.0f}));
}

// ---- Narrow floats: widened, combined in float, rounded once ----

TEST(ReduceNarrow, HalfKnownValues) {
  // The float sum 1 + 2^-11 lies halfway between two halves and rounds to even (1).
  const uint16_t one = 0x3C00, tiny = 0x1000;  // tiny = 2^-11
  EXPECT_EQ(run<uint16_t>({one, one}, {tiny, 0x3C00}, mixcclFloat16, mixcclSum),
            (std::vector<uint16_t>{0x3C00, 0x4000}));  // 1+2^-11 ties to 1; 1+1 = 2
  EXPECT_EQ(run<uint16_t>({0x7BFF}, {0x7BFF}, mixcclFloat16, mixcclSum),
            (std::vector<uint16_t>{0x7C00}));  // 65504 + 65504 overflows to inf
  EXPECT_EQ(run<uint16_t>({0x4200}, {0xC500}, mixcclFloat16, mixcclProd),
            (std::vector<uint16_t>{0xCB80}));  // 3 * -5 = -15
  EXPECT_EQ(run<uint16_t>({0x4200, 0xC500}, {0xC500, 0x4200}, mixcclFloat16, mixcclMax),
            (std::vector<uint16_t>{0x4200, 0x4200}));
}

TEST(ReduceNarrow, Bf16SumRoundsToNearestEven) {
  // bfloat16 steps by 2^-7 above 1: 1 + 2^-8 is a tie (-> 1), 1 + 2^-8 + 2^-9 is above it.
  const uint16_t one = 0x3F80;
  const uint16_t eps = floatToBf16(std::ldexp(1.0f, -8));
  const uint16_t eps2 = floatToBf16(std::ldexp(1.0f, -8) + std::ldexp(1.0f, -9));
  EXPECT_EQ(run<uint16_t>({one, one}, {eps, eps2}, mixcclBfloat16, mixcclSum),
            (std::vector<uint16_t>{0x3F80, 0x3F81}));  // tie -> even; above tie -> up
}

TEST(ReduceNarrow, Fp8SaturatesOnOverflow) {
  EXPECT_EQ(run<uint8_t>({0x7E, 0xFE}, {0x7E, 0xFE}, mixcclFloat8e4m3, mixcclSum),
            (std::vector<uint8_t>{0x7E, 0xFE}));  // 448 + 448 -> 448
  EXPECT_EQ(run<uint8_t>({0x7B}, {0x7B}, mixcclFloat8e5m2, mixcclProd),
            (std::vector<uint8_t>{0x7B}));  // 57344^2 -> 57344
  EXPECT_EQ(run<uint8_t>({0x38}, {0x38}, mixcclFloat8e4m3, mixcclSum),
            (std::vector<uint8_t>{0x40}));  // 1 + 1 = 2
}

// ---- divideBy ----

TEST(DivideBy, IntegersTruncateTowardZero) {
  std::vector<int8_t> i8 = {-7, 7, -128, 127, -1, 1};
  divideBy(i8.data(), i8.size(), mixcclInt8, 2);
  EXPECT_EQ(i8, (std::vector<int8_t>{-3, 3, -64, 63, 0, 0}));

  std::vector<int8_t> big = {-128, 100};
  divideBy(big.data(), big.size(), mixcclInt8, 200);  // n does not fit in int8
  EXPECT_EQ(big, (std::vector<int8_t>{0, 0}));

  std::vector<uint8_t> u8 = {255, 7};
  divideBy(u8.data(), u8.size(), mixcclUint8, 2);
  EXPECT_EQ(u8, (std::vector<uint8_t>{127, 3}));

  std::vector<int32_t> i32 = {-7, 7, std::numeric_limits<int32_t>::min(), -9};
  divideBy(i32.data(), i32.size(), mixcclInt32, 2);
  EXPECT_EQ(i32, (std::vector<int32_t>{-3, 3, -1073741824, -4}));

  std::vector<uint32_t> u32 = {0xFFFFFFFFu, 10u};
  divideBy(u32.data(), u32.size(), mixcclUint32, 3);
  EXPECT_EQ(u32, (std::vector<uint32_t>{0x55555555u, 3u}));

  std::vector<int64_t> i64 = {-7, std::numeric_limits<int64_t>::min()};
  divideBy(i64.data(), i64.size(), mixcclInt64, 2);
  EXPECT_EQ(i64, (std::vector<int64_t>{-3, std::numeric_limits<int64_t>::min() / 2}));

  std::vector<uint64_t> u64 = {~0ULL, 9};
  divideBy(u64.data(), u64.size(), mixcclUint64, 4);
  EXPECT_EQ(u64, (std::vector<uint64_t>{~0ULL / 4, 2}));
}

TEST(DivideBy, FloatsDivideInTheirOwnPrecision) {
  std::vector<float> f(1001);
  std::vector<double> d(1001);
  for (size_t i = 0; i < f.size(); ++i) {
    f[i] = static_cast<float>(i) * 0.37f - 100.0f;
    d[i] = static_cast<double>(i) * 0.37 - 100.0;
  }
  std::vector<float> fWant = f;
  std::vector<double> dWant = d;
  for (float& v : fWant) v = v / 3.0f;
  for (double& v : dWant) v = v / 3.0;
  divideBy(f.data(), f.size(), mixcclFloat32, 3);
  divideBy(d.data(), d.size(), mixcclFloat64, 3);
  EXPECT_EQ(f, fWant);
  EXPECT_EQ(d, dWant);
}

TEST(DivideBy, NarrowTypesRoundOnce) {
  for (mixcclDataType_t type :
       {mixcclFloat16, mixcclBfloat16, mixcclFloat8e4m3, mixcclFloat8e5m2}) {
    NarrowCodec codec;
    narrowCodec(type, &codec);
    std::mt19937 rng(11);
    const size_t count = 1337;  // crosses the internal block size
    std::vector<uint8_t> buf = randomBuffer(type, count, rng);
    std::vector<uint8_t> want(buf.size());
    for (size_t i = 0; i < count; ++i) {
      codec.store(want.data(), i, codec.toFloat(buf.data(), i) / 3.0f);
    }
    divideBy(buf.data(), count, type, 3);
    expectSameElements(buf, want, count, type, std::string(dataTypeName(type)) + " / 3");
  }
  std::vector<uint16_t> h = {0x4200, 0x3C00};  // 3, 1
  divideBy(h.data(), h.size(), mixcclFloat16, 2);
  EXPECT_EQ(h, (std::vector<uint16_t>{0x3E00, 0x3800}));  // 1.5, 0.5
  std::vector<uint8_t> e4 = {0x7E};                       // 448
  divideBy(e4.data(), e4.size(), mixcclFloat8e4m3, 2);
  EXPECT_EQ(fp8e4m3ToFloat(e4[0]), 224.0f);
}

TEST(DivideBy, DivisorOneOrInvalidLeavesDataUnchanged) {
  std::vector<float> f = {1.0f, -3.5f};
  divideBy(f.data(), f.size(), mixcclFloat32, 1);
  EXPECT_EQ(f, (std::vector<float>{1.0f, -3.5f}));
  divideBy(f.data(), f.size(), mixcclFloat32, 0);
  divideBy(f.data(), f.size(), mixcclFloat32, -2);
  EXPECT_EQ(f, (std::vector<float>{1.0f, -3.5f}));
  std::vector<uint16_t> h = {0x3555};
  divideBy(h.data(), h.size(), mixcclFloat16, 1);
  EXPECT_EQ(h[0], 0x3555);
}

TEST(ReduceThenDivide, AvgOfFourRanks) {
  // Avg over 4 ranks = ((a + b) + c) + d, then / 4 once.
  std::vector<int32_t> acc = {-7, 10, 1};
  const std::vector<int32_t> r1 = {0, 3, 1}, r2 = {-2, 3, 1}, r3 = {0, 0, 0};
  for (const auto* r : {&r1, &r2, &r3}) {
    reduce(acc.data(), acc.data(), r->data(), acc.size(), mixcclInt32, mixcclAvg);
  }
  divideBy(acc.data(), acc.size(), mixcclInt32, 4);
  EXPECT_EQ(acc, (std::vector<int32_t>{-2, 4, 0}));  // -9/4, 16/4, 3/4
}

}  // namespace
}  // namespace mixccl
