#include "nccl_reduce.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace standin {
namespace {

// A binary float narrower than float32: exponent and mantissa widths, and whether its
// all-ones exponent means infinity (fp16, bf16, e5m2) or only NaN at all-ones mantissa (e4m3,
// whose overflow saturates to its largest finite value, as NCCL's fp8 conversions do).
struct Format {
  int expBits, mantBits;
  bool hasInf;
};

Format formatOf(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return {5, 10, true};
    case ncclBfloat16: return {8, 7, true};
    case ncclFloat8e4m3: return {4, 3, false};
    default: return {5, 2, true};  // ncclFloat8e5m2
  }
}

float decode(uint32_t bits, Format f) {
  const uint32_t mantMask = (1u << f.mantBits) - 1, expMax = (1u << f.expBits) - 1;
  const bool negative = (bits >> (f.expBits + f.mantBits)) & 1u;
  const uint32_t e = (bits >> f.mantBits) & expMax, m = bits & mantMask;
  const int bias = (1 << (f.expBits - 1)) - 1;
  double v;
  if (e == expMax && (f.hasInf || m == mantMask)) {
    v = (f.hasInf && m == 0) ? INFINITY : NAN;
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - bias - f.mantBits);
  } else {
    v = std::ldexp(static_cast<double>(m | (1u << f.mantBits)), static_cast<int>(e) - bias - f.mantBits);
  }
  return static_cast<float>(negative ? -v : v);
}

uint32_t encode(float value, Format f) {
  const uint32_t expMax = (1u << f.expBits) - 1, mantMask = (1u << f.mantBits) - 1;
  const uint32_t sign = std::signbit(value) ? 1u << (f.expBits + f.mantBits) : 0u;
  const uint32_t largest = f.hasInf ? ((expMax - 1) << f.mantBits) | mantMask
                                    : (expMax << f.mantBits) | (mantMask - 1);
  if (std::isnan(value)) return sign | (expMax << f.mantBits) | mantMask;
  const double a = std::fabs(static_cast<double>(value));
  if (std::isinf(a)) return sign | (f.hasInf ? expMax << f.mantBits : largest);
  if (a == 0) return sign;
  const int bias = (1 << (f.expBits - 1)) - 1;
  int e2 = 0;
  std::frexp(a, &e2);
  int e = e2 - 1;                      // a = 1.x * 2^e
  if (e < 1 - bias) e = 1 - bias;      // subnormal: the smallest exponent, no implicit one
  // The significand as an integer with mantBits fraction bits, rounded to nearest-even
  // (the default rounding mode).
  double q = std::nearbyint(std::ldexp(a, f.mantBits - e));
  if (q >= std::ldexp(1.0, f.mantBits + 1)) {  // rounded up to the next binade
    q = std::ldexp(q, -1);
    ++e;
  }
  const uint32_t sig = static_cast<uint32_t>(q);
  uint32_t bits;
  if (sig < (1u << f.mantBits)) {
    bits = sig;  // subnormal (or rounded to zero)
  } else {
    const int field = e + bias;
    if (field > static_cast<int>(f.hasInf ? expMax - 1 : expMax)) {
      bits = f.hasInf ? expMax << f.mantBits : largest;
    } else {
      bits = (static_cast<uint32_t>(field) << f.mantBits) | (sig & mantMask);
      if (!f.hasInf && bits > largest) bits = largest;  // e4m3's NaN code: saturate
    }
  }
  return sign | bits;
}

template <class T>
T apply(T a, T b, ncclRedOp_t op) {
  switch (op) {
    case ncclProd:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;  // wraps, as the GPU's integer arithmetic
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      } else {
        return a * b;
      }
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      } else {
        return a + b;
      }
  }
}

template <class T>
void reduceTyped(void* dst, const void* a, const void* b, size_t count, ncclRedOp_t op) {
  for (size_t i = 0; i < count; ++i) {
    T x, y;
    std::memcpy(&x, static_cast<const char*>(a) + i * sizeof(T), sizeof(T));
    std::memcpy(&y, static_cast<const char*>(b) + i * sizeof(T), sizeof(T));
    const T r = apply(x, y, op);
    std::memcpy(static_cast<char*>(dst) + i * sizeof(T), &r, sizeof(T));
  }
}

template <class Bits>
void reduceSmall(void* dst, const void* a, const void* b, size_t count, Format f, ncclRedOp_t op) {
  for (size_t i = 0; i < count; ++i) {
    Bits x, y;
    std::memcpy(&x, static_cast<const char*>(a) + i * sizeof(Bits), sizeof(Bits));
    std::memcpy(&y, static_cast<const char*>(b) + i * sizeof(Bits), sizeof(Bits));
    const Bits r = static_cast<Bits>(encode(apply(decode(x, f), decode(y, f), op), f));
    std::memcpy(static_cast<char*>(dst) + i * sizeof(Bits), &r, sizeof(Bits));
  }
}

template <class T>
void divideTyped(void* buf, size_t count, int n) {
  for (size_t i = 0; i < count; ++i) {
    T x;
    std::memcpy(&x, static_cast<char*>(buf) + i * sizeof(T), sizeof(T));
    x = static_cast<T>(x / static_cast<T>(n));
    std::memcpy(static_cast<char*>(buf) + i * sizeof(T), &x, sizeof(T));
  }
}

template <class Bits>
void divideSmall(void* buf, size_t count, Format f, int n) {
  for (size_t i = 0; i < count; ++i) {
    Bits x;
    std::memcpy(&x, static_cast<char*>(buf) + i * sizeof(Bits), sizeof(Bits));
    x = static_cast<Bits>(encode(decode(x, f) / static_cast<float>(n), f));
    std::memcpy(static_cast<char*>(buf) + i * sizeof(Bits), &x, sizeof(Bits));
  }
}

}  // namespace

size_t typeBytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

void reduceInto(void* dst, const void* a, const void* b, size_t count, ncclDataType_t t, ncclRedOp_t op) {
  switch (t) {
    case ncclInt8: return reduceTyped<int8_t>(dst, a, b, count, op);
    case ncclUint8: return reduceTyped<uint8_t>(dst, a, b, count, op);
    case ncclInt32: return reduceTyped<int32_t>(dst, a, b, count, op);
    case ncclUint32: return reduceTyped<uint32_t>(dst, a, b, count, op);
    case ncclInt64: return reduceTyped<int64_t>(dst, a, b, count, op);
    case ncclUint64: return reduceTyped<uint64_t>(dst, a, b, count, op);
    case ncclFloat32: return reduceTyped<float>(dst, a, b, count, op);
    case ncclFloat64: return reduceTyped<double>(dst, a, b, count, op);
    case ncclFloat16: case ncclBfloat16: return reduceSmall<uint16_t>(dst, a, b, count, formatOf(t), op);
    default: return reduceSmall<uint8_t>(dst, a, b, count, formatOf(t), op);
  }
}

void divideBy(void* buf, size_t count, ncclDataType_t t, int n) {
  switch (t) {
    case ncclInt8: return divideTyped<int8_t>(buf, count, n);
    case ncclUint8: return divideTyped<uint8_t>(buf, count, n);
    case ncclInt32: return divideTyped<int32_t>(buf, count, n);
    case ncclUint32: return divideTyped<uint32_t>(buf, count, n);
    case ncclInt64: return divideTyped<int64_t>(buf, count, n);
    case ncclUint64: return divideTyped<uint64_t>(buf, count, n);
    case ncclFloat32: return divideTyped<float>(buf, count, n);
    case ncclFloat64: return divideTyped<double>(buf, count, n);
    case ncclFloat16: case ncclBfloat16: return divideSmall<uint16_t>(buf, count, formatOf(t), n);
    default: return divideSmall<uint8_t>(buf, count, formatOf(t), n);
  }
}

float smallFloatToFloat(unsigned bits, ncclDataType_t t) { return decode(bits, formatOf(t)); }
unsigned floatToSmallFloat(float v, ncclDataType_t t) { return encode(v, formatOf(t)); }

}  // namespace standin
