#include "algo/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "algo/float_formats.h"

// The AVX2 build needs the lane codecs of float_formats.h, which exist on x86 only.
#ifdef MIXCCL_HAVE_FLOAT_LANES
#define MIXCCL_REDUCE_AVX2 1
#endif

// The kernels are written with GCC vector extensions rather than left to the auto-vectoriser:
// at the project's -O2 GCC 12 only vectorises loops that need neither a scalar epilogue nor a
// runtime aliasing check, and ours need both (any count; dst may be a or b). An explicit
// vector loop loads a[i..] and b[i..] before storing dst[i..], so exact aliasing is safe.
#define MIXCCL_ALWAYS_INLINE __attribute__((always_inline)) inline

namespace mixccl {

namespace {

// ---- Element-wise ops: work on scalars and on GCC vectors alike (taken by reference so no
// vector crosses a call boundary with an ISA-dependent ABI) ----

struct SumOp {
  template <class V>
  MIXCCL_ALWAYS_INLINE static void apply(V& r, const V& a, const V& b) {
    r = a + b;
  }
};

struct ProdOp {
  template <class V>
  MIXCCL_ALWAYS_INLINE static void apply(V& r, const V& a, const V& b) {
    r = a * b;
  }
};

// Max/Min return a when a is NaN, else b when b is NaN (the comparison is then false), so NaN
// propagates. T is the element type; the NaN test is compiled only for floating types.
template <class T>
struct MaxOp {
  template <class V>
  MIXCCL_ALWAYS_INLINE static void apply(V& r, const V& a, const V& b) {
    if constexpr (std::is_floating_point_v<T>) {
      r = ((a > b) | (a != a)) ? a : b;
    } else {
      r = (a > b) ? a : b;
    }
  }
};

template <class T>
struct MinOp {
  template <class V>
  MIXCCL_ALWAYS_INLINE static void apply(V& r, const V& a, const V& b) {
    if constexpr (std::is_floating_point_v<T>) {
      r = ((a < b) | (a != a)) ? a : b;
    } else {
      r = (a < b) ? a : b;
    }
  }
};

// dst[i] = a[i] op b[i], kVecBytes at a time, then a scalar tail.
template <typename T, class Op, size_t kVecBytes>
MIXCCL_ALWAYS_INLINE void reduceSpan(T* dst, const T* a, const T* b, size_t count) {
  typedef T Vec __attribute__((vector_size(kVecBytes)));
  constexpr size_t kLanes = kVecBytes / sizeof(T);
  size_t i = 0;
  for (; i + 2 * kLanes <= count; i += 2 * kLanes) {
    Vec a0, a1, b0, b1, r0, r1;
    std::memcpy(&a0, a + i, sizeof(Vec));
    std::memcpy(&a1, a + i + kLanes, sizeof(Vec));
    std::memcpy(&b0, b + i, sizeof(Vec));
    std::memcpy(&b1, b + i + kLanes, sizeof(Vec));
    Op::apply(r0, a0, b0);
    Op::apply(r1, a1, b1);
    std::memcpy(dst + i, &r0, sizeof(Vec));
    std::memcpy(dst + i + kLanes, &r1, sizeof(Vec));
  }
  for (; i < count; ++i) {
    T r;
    Op::apply(r, a[i], b[i]);
    dst[i] = r;
  }
}

// ---- Narrow float types: widen to float, reduce in float, round once ----

// Each codec converts blocks through the bulk functions of float_formats.h (the baseline
// kernels and divideBy use these) and names the lane codec that the fused AVX2 kernels use.
#ifdef MIXCCL_REDUCE_AVX2
#define MIXCCL_LANE_CODEC(name) using Lanes = lanes::name
#else
#define MIXCCL_LANE_CODEC(name) static_assert(true)
#endif

struct HalfCodec {
  using Storage = uint16_t;
  MIXCCL_LANE_CODEC(HalfF16c);
  static void widen(const Storage* s, float* f, size_t n) { halfToFloatN(s, f, n); }
  static void narrow(const float* f, Storage* s, size_t n) { floatToHalfN(f, s, n); }
};

struct Bf16Codec {
  using Storage = uint16_t;
  MIXCCL_LANE_CODEC(Bf16);
  static void widen(const Storage* s, float* f, size_t n) { bf16ToFloatN(s, f, n); }
  static void narrow(const float* f, Storage* s, size_t n) { floatToBf16N(f, s, n); }
};

struct Fp8e4m3Codec {
  using Storage = uint8_t;
  MIXCCL_LANE_CODEC(Fp8e4m3);
  static void widen(const Storage* s, float* f, size_t n) { fp8e4m3ToFloatN(s, f, n); }
  static void narrow(const float* f, Storage* s, size_t n) { floatToFp8e4m3N(f, s, n); }
};

struct Fp8e5m2Codec {
  using Storage = uint8_t;
  MIXCCL_LANE_CODEC(Fp8e5m2);
  static void widen(const Storage* s, float* f, size_t n) { fp8e5m2ToFloatN(s, f, n); }
  static void narrow(const float* f, Storage* s, size_t n) { floatToFp8e5m2N(f, s, n); }
};

#undef MIXCCL_LANE_CODEC

// Small enough that the two float blocks stay in L1, large enough to amortise the calls.
constexpr size_t kFloatBlock = 512;

template <class Codec, class Op, size_t kVecBytes>
MIXCCL_ALWAYS_INLINE void reduceViaFloat(void* dst, const void* a, const void* b, size_t count) {
  using S = typename Codec::Storage;
  S* d = static_cast<S*>(dst);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
  float fx[kFloatBlock];
  float fy[kFloatBlock];
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(kFloatBlock, count - done);
    // Both inputs are read before dst is written, so dst == a or dst == b is fine.
    Codec::widen(x + done, fx, n);
    Codec::widen(y + done, fy, n);
    reduceSpan<float, Op, kVecBytes>(fx, fx, fy, n);
    Codec::narrow(fx, d + done, n);
    done += n;
  }
}

// ---- Kernels per ISA: the baseline (16-byte vectors: SSE2, NEON) and, on x86 CPUs that have
// it, AVX2 (32-byte vectors, F16C, fused narrow-type kernels) ----

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <typename T, class Op>
void nativeBaseline(void* dst, const void* a, const void* b, size_t count) {
  reduceSpan<T, Op, 16>(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b),
                        count);
}

template <class Codec, class Op>
void viaFloatBaseline(void* dst, const void* a, const void* b, size_t count) {
  reduceViaFloat<Codec, Op, 16>(dst, a, b, count);
}

#ifdef MIXCCL_REDUCE_AVX2
#define MIXCCL_AVX2 __attribute__((target("avx2,f16c")))

template <typename T, class Op>
MIXCCL_AVX2 void nativeAvx2(void* dst, const void* a, const void* b, size_t count) {
  reduceSpan<T, Op, 32>(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b),
                        count);
}

// Narrow types, fused: 8 elements are widened into registers, combined and rounded back, with
// no intermediate arrays. Codec is one of float_formats.h's lane codecs.
template <class Codec, class Op>
MIXCCL_AVX2 void viaFloatAvx2(void* dst, const void* a, const void* b, size_t count) {
  using S = typename Codec::Storage;
  constexpr size_t kN = lanes::kCount;
  S* d = static_cast<S*>(dst);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
  lanes::F32x8 fx, fy, fr;
  size_t i = 0;
  for (; i + kN <= count; i += kN) {
    Codec::load(x + i, fx);  // both inputs are loaded before dst is stored
    Codec::load(y + i, fy);
    Op::apply(fr, fx, fy);
    Codec::store(fr, d + i);
  }
  if (i == count) return;
  // The tail goes through the same code on zero-padded copies.
  S tx[kN] = {}, ty[kN] = {}, tr[kN];
  std::memcpy(tx, x + i, (count - i) * sizeof(S));
  std::memcpy(ty, y + i, (count - i) * sizeof(S));
  Codec::load(tx, fx);
  Codec::load(ty, fy);
  Op::apply(fr, fx, fy);
  Codec::store(fr, tr);
  std::memcpy(d + i, tr, (count - i) * sizeof(S));
}

#undef MIXCCL_AVX2
#endif

struct KernelTable {
  ReduceFn fn[mixcclNumTypes][mixcclNumOps];
};

// Sum and Prod on integers run in the unsigned type so that overflow wraps without UB.
template <typename T, bool = std::is_integral_v<T>>
struct Arith {
  using type = T;
};
template <typename T>
struct Arith<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using ArithType = typename Arith<T>::type;

template <typename T, bool kAvx2>
void fillNative(KernelTable& t, mixcclDataType_t type) {
  using A = ArithType<T>;
  ReduceFn* row = t.fn[type];
#ifdef MIXCCL_REDUCE_AVX2
  if (kAvx2) {
    row[mixcclSum] = nativeAvx2<A, SumOp>;
    row[mixcclProd] = nativeAvx2<A, ProdOp>;
    row[mixcclMax] = nativeAvx2<T, MaxOp<T>>;
    row[mixcclMin] = nativeAvx2<T, MinOp<T>>;
    row[mixcclAvg] = row[mixcclSum];
    return;
  }
#endif
  row[mixcclSum] = nativeBaseline<A, SumOp>;
  row[mixcclProd] = nativeBaseline<A, ProdOp>;
  row[mixcclMax] = nativeBaseline<T, MaxOp<T>>;
  row[mixcclMin] = nativeBaseline<T, MinOp<T>>;
  row[mixcclAvg] = row[mixcclSum];
}

template <class Codec, bool kAvx2>
void fillViaFloat(KernelTable& t, mixcclDataType_t type) {
  ReduceFn* row = t.fn[type];
#ifdef MIXCCL_REDUCE_AVX2
  if (kAvx2) {
    using Lanes = typename Codec::Lanes;
    row[mixcclSum] = viaFloatAvx2<Lanes, SumOp>;
    row[mixcclProd] = viaFloatAvx2<Lanes, ProdOp>;
    row[mixcclMax] = viaFloatAvx2<Lanes, MaxOp<float>>;
    row[mixcclMin] = viaFloatAvx2<Lanes, MinOp<float>>;
    row[mixcclAvg] = row[mixcclSum];
    return;
  }
#endif
  row[mixcclSum] = viaFloatBaseline<Codec, SumOp>;
  row[mixcclProd] = viaFloatBaseline<Codec, ProdOp>;
  row[mixcclMax] = viaFloatBaseline<Codec, MaxOp<float>>;
  row[mixcclMin] = viaFloatBaseline<Codec, MinOp<float>>;
  row[mixcclAvg] = row[mixcclSum];
}

template <bool kAvx2>
KernelTable makeKernelTable() {
  KernelTable t{};
  fillNative<int8_t, kAvx2>(t, mixcclInt8);
  fillNative<uint8_t, kAvx2>(t, mixcclUint8);
  fillNative<int32_t, kAvx2>(t, mixcclInt32);
  fillNative<uint32_t, kAvx2>(t, mixcclUint32);
  fillNative<int64_t, kAvx2>(t, mixcclInt64);
  fillNative<uint64_t, kAvx2>(t, mixcclUint64);
  fillNative<float, kAvx2>(t, mixcclFloat32);
  fillNative<double, kAvx2>(t, mixcclFloat64);
  fillViaFloat<HalfCodec, kAvx2>(t, mixcclFloat16);
  fillViaFloat<Bf16Codec, kAvx2>(t, mixcclBfloat16);
  fillViaFloat<Fp8e4m3Codec, kAvx2>(t, mixcclFloat8e4m3);
  fillViaFloat<Fp8e5m2Codec, kAvx2>(t, mixcclFloat8e5m2);
  return t;
}

// Chosen once, on first use (thread-safe function-local static).
const KernelTable& kernels() {
  static const KernelTable table =
      detail::cpuHasAvx2F16c() ? makeKernelTable<true>() : makeKernelTable<false>();
  return table;
}

// ---- divideBy ----

// Integers: divide in a 64-bit type of the same signedness, so n need not fit in T.
template <typename T>
void divideIntegers(void* buf, size_t count, int n) {
  using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  T* p = static_cast<T*>(buf);
  const Wide divisor = static_cast<Wide>(n);
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(static_cast<Wide>(p[i]) / divisor);
}

// A true division (not a multiplication by 1/n) so the result is correctly rounded.
template <typename T>
void divideFloats(T* p, size_t count, T divisor) {
  constexpr size_t kVecBytes = 16;
  typedef T Vec __attribute__((vector_size(kVecBytes)));
  constexpr size_t kLanes = kVecBytes / sizeof(T);
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    Vec v;
    std::memcpy(&v, p + i, sizeof(Vec));
    v = v / divisor;
    std::memcpy(p + i, &v, sizeof(Vec));
  }
  for (; i < count; ++i) p[i] = p[i] / divisor;
}

template <class Codec>
void divideViaFloat(void* buf, size_t count, int n) {
  using S = typename Codec::Storage;
  S* p = static_cast<S*>(buf);
  const float divisor = static_cast<float>(n);
  float f[kFloatBlock];
  for (size_t done = 0; done < count;) {
    const size_t len = std::min(kFloatBlock, count - done);
    Codec::widen(p + done, f, len);
    divideFloats<float>(f, len, divisor);
    Codec::narrow(f, p + done, len);
    done += len;
  }
}

template <typename T>
void scaleIntegers(void* dst, const void* src, size_t count, const void* scalar) {
  using U = std::make_unsigned_t<T>;
  U factor;
  std::memcpy(&factor, scalar, sizeof factor);
  const T* in = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  // Unsigned arithmetic wraps like Sum and Prod do, without signed overflow.
  for (size_t i = 0; i < count; ++i)
    out[i] = static_cast<T>(static_cast<U>(static_cast<U>(in[i]) * factor));
}

template <typename T>
void scaleFloats(void* dst, const void* src, size_t count, const void* scalar) {
  T factor;
  std::memcpy(&factor, scalar, sizeof factor);
  const T* in = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) out[i] = in[i] * factor;
}

template <typename Codec>
void scaleViaFloat(void* dst, const void* src, size_t count, const void* scalar) {
  using S = typename Codec::Storage;
  S factorBits;
  std::memcpy(&factorBits, scalar, sizeof factorBits);
  float factor;
  Codec::widen(&factorBits, &factor, 1);
  const S* in = static_cast<const S*>(src);
  S* out = static_cast<S*>(dst);
  float f[kFloatBlock];
  for (size_t done = 0; done < count;) {
    const size_t len = std::min(kFloatBlock, count - done);
    Codec::widen(in + done, f, len);
    for (size_t i = 0; i < len; ++i) f[i] *= factor;
    Codec::narrow(f, out + done, len);
    done += len;
  }
}

}  // namespace

size_t dataTypeSize(mixcclDataType_t type) {
  switch (type) {
    case mixcclInt8:
    case mixcclUint8:
    case mixcclFloat8e4m3:
    case mixcclFloat8e5m2:
      return 1;
    case mixcclFloat16:
    case mixcclBfloat16:
      return 2;
    case mixcclInt32:
    case mixcclUint32:
    case mixcclFloat32:
      return 4;
    case mixcclInt64:
    case mixcclUint64:
    case mixcclFloat64:
      return 8;
    default:
      return 0;
  }
}

void reduce(void* dst, const void* a, const void* b, size_t count, mixcclDataType_t type,
            mixcclRedOp_t op) {
  if (count == 0 || !isValidDataType(type) || !isValidRedOp(op)) return;
  kernels().fn[type][op](dst, a, b, count);
}

void detail::reduceBaseline(void* dst, const void* a, const void* b, size_t count,
                            mixcclDataType_t type, mixcclRedOp_t op) {
  static const KernelTable table = makeKernelTable<false>();
  if (count == 0 || !isValidDataType(type) || !isValidRedOp(op)) return;
  table.fn[type][op](dst, a, b, count);
}

void divideBy(void* buf, size_t count, mixcclDataType_t type, int n) {
  if (n < 1 || count == 0) return;
  switch (type) {
    case mixcclInt8:
      return divideIntegers<int8_t>(buf, count, n);
    case mixcclUint8:
      return divideIntegers<uint8_t>(buf, count, n);
    case mixcclInt32:
      return divideIntegers<int32_t>(buf, count, n);
    case mixcclUint32:
      return divideIntegers<uint32_t>(buf, count, n);
    case mixcclInt64:
      return divideIntegers<int64_t>(buf, count, n);
    case mixcclUint64:
      return divideIntegers<uint64_t>(buf, count, n);
    case mixcclFloat32:
      return divideFloats<float>(static_cast<float*>(buf), count, static_cast<float>(n));
    case mixcclFloat64:
      return divideFloats<double>(static_cast<double*>(buf), count, static_cast<double>(n));
    case mixcclFloat16:
      return divideViaFloat<HalfCodec>(buf, count, n);
    case mixcclBfloat16:
      return divideViaFloat<Bf16Codec>(buf, count, n);
    case mixcclFloat8e4m3:
      return divideViaFloat<Fp8e4m3Codec>(buf, count, n);
    case mixcclFloat8e5m2:
      return divideViaFloat<Fp8e5m2Codec>(buf, count, n);
    default:
      return;
  }
}

void scaleBy(void* dst, const void* src, size_t count, mixcclDataType_t type, const void* scalar) {
  if (count == 0) return;
  switch (type) {
    case mixcclInt8:
      return scaleIntegers<int8_t>(dst, src, count, scalar);
    case mixcclUint8:
      return scaleIntegers<uint8_t>(dst, src, count, scalar);
    case mixcclInt32:
      return scaleIntegers<int32_t>(dst, src, count, scalar);
    case mixcclUint32:
      return scaleIntegers<uint32_t>(dst, src, count, scalar);
    case mixcclInt64:
      return scaleIntegers<int64_t>(dst, src, count, scalar);
    case mixcclUint64:
      return scaleIntegers<uint64_t>(dst, src, count, scalar);
    case mixcclFloat32:
      return scaleFloats<float>(dst, src, count, scalar);
    case mixcclFloat64:
      return scaleFloats<double>(dst, src, count, scalar);
    case mixcclFloat16:
      return scaleViaFloat<HalfCodec>(dst, src, count, scalar);
    case mixcclBfloat16:
      return scaleViaFloat<Bf16Codec>(dst, src, count, scalar);
    case mixcclFloat8e4m3:
      return scaleViaFloat<Fp8e4m3Codec>(dst, src, count, scalar);
    case mixcclFloat8e5m2:
      return scaleViaFloat<Fp8e5m2Codec>(dst, src, count, scalar);
    default:
      return;
  }
}

}  // namespace mixccl
