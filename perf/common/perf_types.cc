#include "perf_types.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mixperf {

namespace {

const TypeInfo kTypes[kNumTypes] = {
    {mixcclInt8, "int8", 1, false, true},
    {mixcclUint8, "uint8", 1, false, false},
    {mixcclInt32, "int32", 4, false, true},
    {mixcclUint32, "uint32", 4, false, false},
    {mixcclInt64, "int64", 8, false, true},
    {mixcclUint64, "uint64", 8, false, false},
    {mixcclFloat16, "half", 2, true, true},
    {mixcclFloat32, "float", 4, true, true},
    {mixcclFloat64, "double", 8, true, true},
    {mixcclBfloat16, "bfloat16", 2, true, true},
    {mixcclFloat8e4m3, "f8e4m3", 1, true, true},
    {mixcclFloat8e5m2, "f8e5m2", 1, true, true},
};

const OpInfo kOps[kNumOps] = {
    {mixcclSum, "sum"}, {mixcclProd, "prod"}, {mixcclMax, "max"},
    {mixcclMin, "min"}, {mixcclAvg, "avg"},
};

struct Alias {
  const char* name;
  int value;
};

const Alias kTypeAliases[] = {
    {"int8", mixcclInt8},       {"char", mixcclInt8},         {"uint8", mixcclUint8},
    {"int32", mixcclInt32},     {"int", mixcclInt32},         {"uint32", mixcclUint32},
    {"int64", mixcclInt64},     {"uint64", mixcclUint64},     {"half", mixcclFloat16},
    {"float16", mixcclFloat16}, {"fp16", mixcclFloat16},      {"float", mixcclFloat32},
    {"float32", mixcclFloat32}, {"fp32", mixcclFloat32},      {"double", mixcclFloat64},
    {"float64", mixcclFloat64}, {"fp64", mixcclFloat64},      {"bfloat16", mixcclBfloat16},
    {"bf16", mixcclBfloat16},   {"f8e4m3", mixcclFloat8e4m3}, {"fp8_e4m3", mixcclFloat8e4m3},
    {"f8e5m2", mixcclFloat8e5m2}, {"fp8_e5m2", mixcclFloat8e5m2},
};

struct MiniFormat {
  int ebits, mbits;
  bool fn;
};

bool miniFormat(mixcclDataType_t t, MiniFormat* f) {
  switch (t) {
    case mixcclFloat16: *f = {5, 10, false}; return true;
    case mixcclBfloat16: *f = {8, 7, false}; return true;
    case mixcclFloat8e4m3: *f = {4, 3, true}; return true;
    case mixcclFloat8e5m2: *f = {5, 2, false}; return true;
    default: return false;
  }
}

template <typename T>
T saturateCast(double v) {
  if (std::isnan(v)) return 0;
  double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

}  // namespace

const TypeInfo& typeInfo(mixcclDataType_t t) { return kTypes[static_cast<int>(t)]; }
const OpInfo& opInfo(mixcclRedOp_t op) { return kOps[static_cast<int>(op)]; }

bool parseTypeName(const std::string& s, mixcclDataType_t* out) {
  for (const Alias& a : kTypeAliases) {
    if (s == a.name) {
      *out = static_cast<mixcclDataType_t>(a.value);
      return true;
    }
  }
  return false;
}

bool parseOpName(const std::string& s, mixcclRedOp_t* out) {
  for (const OpInfo& o : kOps) {
    if (s == o.name) {
      *out = o.op;
      return true;
    }
  }
  return false;
}

int64_t maxExactInt(mixcclDataType_t t) {
  switch (t) {
    case mixcclInt8: return 127;
    case mixcclUint8: return 255;
    case mixcclInt32: return 2147483647LL;
    case mixcclUint32: return 4294967295LL;
    case mixcclInt64:
    case mixcclUint64: return int64_t(1) << 62;
    case mixcclFloat16: return 2048;
    case mixcclFloat32: return int64_t(1) << 24;
    case mixcclFloat64: return int64_t(1) << 53;
    case mixcclBfloat16: return 256;
    case mixcclFloat8e4m3: return 16;
    case mixcclFloat8e5m2: return 8;
    default: return 0;
  }
}

int maxExactPow2(mixcclDataType_t t) {
  switch (t) {
    case mixcclInt8: return 6;
    case mixcclUint8: return 7;
    case mixcclInt32: return 30;
    case mixcclUint32: return 31;
    case mixcclInt64:
    case mixcclUint64: return 62;
    case mixcclFloat16: return 15;
    case mixcclFloat32:
    case mixcclFloat64:
    case mixcclBfloat16: return 62;
    case mixcclFloat8e4m3: return 8;
    case mixcclFloat8e5m2: return 15;
    default: return 0;
  }
}

uint32_t encodeMinifloat(double v, int ebits, int mbits, bool fn) {
  const uint32_t signBit = 1u << (ebits + mbits);
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t expAllOnes = (1u << ebits) - 1;
  const uint32_t mantAllOnes = (1u << mbits) - 1;
  const uint32_t nanBits = fn ? (expAllOnes << mbits) | mantAllOnes
                              : (expAllOnes << mbits) | (1u << (mbits - 1));
  uint32_t sign = std::signbit(v) ? signBit : 0;
  if (std::isnan(v)) return sign | nanBits;
  double a = std::fabs(v);
  if (a == 0.0) return sign;
  const uint32_t maxExpField = fn ? expAllOnes : expAllOnes - 1;
  if (std::isinf(a)) return fn ? (sign | nanBits) : (sign | (expAllOnes << mbits));

  int e2;
  std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1)
  int ue = e2 - 1;     // unbiased exponent of the leading bit
  const int emin = 1 - bias;
  int qexp = (ue < emin ? emin : ue) - mbits;
  double n = std::nearbyint(std::ldexp(a, -qexp));  // round to nearest even
  uint32_t expField, mant;
  if (ue < emin) {
    if (n >= std::ldexp(1.0, mbits)) {
      expField = 1;
      mant = 0;
    } else {
      expField = 0;
      mant = static_cast<uint32_t>(n);
    }
  } else {
    if (n >= std::ldexp(1.0, mbits + 1)) {
      ue += 1;
      n = std::ldexp(1.0, mbits);
    }
    if (ue + bias > static_cast<int>(maxExpField)) {
      return fn ? (sign | nanBits) : (sign | (expAllOnes << mbits));
    }
    expField = static_cast<uint32_t>(ue + bias);
    mant = static_cast<uint32_t>(n) - (1u << mbits);
  }
  if (fn && expField == expAllOnes && mant == mantAllOnes) return sign | nanBits;
  return sign | (expField << mbits) | mant;
}

double decodeMinifloat(uint32_t bits, int ebits, int mbits, bool fn) {
  const uint32_t signBit = 1u << (ebits + mbits);
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t expAllOnes = (1u << ebits) - 1;
  const uint32_t mantAllOnes = (1u << mbits) - 1;
  double s = (bits & signBit) ? -1.0 : 1.0;
  uint32_t expField = (bits >> mbits) & expAllOnes;
  uint32_t mant = bits & mantAllOnes;
  if (!fn && expField == expAllOnes) {
    return mant ? std::numeric_limits<double>::quiet_NaN()
                : s * std::numeric_limits<double>::infinity();
  }
  if (fn && expField == expAllOnes && mant == mantAllOnes) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (expField == 0) return s * std::ldexp(static_cast<double>(mant), 1 - bias - mbits);
  return s * std::ldexp(static_cast<double>(mant + (1u << mbits)),
                        static_cast<int>(expField) - bias - mbits);
}

void encodeValue(mixcclDataType_t t, double v, void* out) {
  MiniFormat f;
  if (miniFormat(t, &f)) {
    uint32_t bits = encodeMinifloat(v, f.ebits, f.mbits, f.fn);
    if (typeInfo(t).size == 1) {
      uint8_t b = static_cast<uint8_t>(bits);
      std::memcpy(out, &b, 1);
    } else {
      uint16_t b = static_cast<uint16_t>(bits);
      std::memcpy(out, &b, 2);
    }
    return;
  }
  switch (t) {
    case mixcclInt8: { int8_t x = saturateCast<int8_t>(v); std::memcpy(out, &x, 1); break; }
    case mixcclUint8: { uint8_t x = saturateCast<uint8_t>(v); std::memcpy(out, &x, 1); break; }
    case mixcclInt32: { int32_t x = saturateCast<int32_t>(v); std::memcpy(out, &x, 4); break; }
    case mixcclUint32: { uint32_t x = saturateCast<uint32_t>(v); std::memcpy(out, &x, 4); break; }
    case mixcclInt64: { int64_t x = saturateCast<int64_t>(v); std::memcpy(out, &x, 8); break; }
    case mixcclUint64: { uint64_t x = saturateCast<uint64_t>(v); std::memcpy(out, &x, 8); break; }
    case mixcclFloat32: { float x = static_cast<float>(v); std::memcpy(out, &x, 4); break; }
    case mixcclFloat64: std::memcpy(out, &v, 8); break;
    default: break;
  }
}

double decodeValue(mixcclDataType_t t, const void* in) {
  MiniFormat f;
  if (miniFormat(t, &f)) {
    uint32_t bits;
    if (typeInfo(t).size == 1) {
      uint8_t b;
      std::memcpy(&b, in, 1);
      bits = b;
    } else {
      uint16_t b;
      std::memcpy(&b, in, 2);
      bits = b;
    }
    return decodeMinifloat(bits, f.ebits, f.mbits, f.fn);
  }
  switch (t) {
    case mixcclInt8: { int8_t x; std::memcpy(&x, in, 1); return x; }
    case mixcclUint8: { uint8_t x; std::memcpy(&x, in, 1); return x; }
    case mixcclInt32: { int32_t x; std::memcpy(&x, in, 4); return x; }
    case mixcclUint32: { uint32_t x; std::memcpy(&x, in, 4); return x; }
    case mixcclInt64: { int64_t x; std::memcpy(&x, in, 8); return static_cast<double>(x); }
    case mixcclUint64: { uint64_t x; std::memcpy(&x, in, 8); return static_cast<double>(x); }
    case mixcclFloat32: { float x; std::memcpy(&x, in, 4); return x; }
    case mixcclFloat64: { double x; std::memcpy(&x, in, 8); return x; }
    default: return 0.0;
  }
}

bool elementsEqual(mixcclDataType_t t, const void* a, const void* b) {
  const TypeInfo& ti = typeInfo(t);
  if (std::memcmp(a, b, ti.size) == 0) return true;
  if (!ti.isFloat) return false;
  // +0 and -0: every bit but the sign bit (the top bit of the element) is zero in both.
  const unsigned char* pa = static_cast<const unsigned char*>(a);
  const unsigned char* pb = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < ti.size; ++i) {
    unsigned char mask = (i == ti.size - 1) ? 0x7f : 0xff;  // little-endian: sign in last byte
    if ((pa[i] & mask) != 0 || (pb[i] & mask) != 0) return false;
  }
  return true;
}

}  // namespace mixperf
