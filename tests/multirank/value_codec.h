/* Test-side encoding of exact values in every mixccl datatype, written independently of the
 * library's own converters so the tests check them rather than repeat them. Only values that
 * the format represents exactly may be stored, so no rounding is needed: storeValue aborts on
 * any other value, so a reference can never be silently truncated into agreement. */
#ifndef MIXCCL_TEST_VALUE_CODEC_H_
#define MIXCCL_TEST_VALUE_CODEC_H_

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixccl.h"

static inline size_t typeSize(mixcclDataType_t t) {
  switch (t) {
    case mixcclInt8: case mixcclUint8: case mixcclFloat8e4m3: case mixcclFloat8e5m2: return 1;
    case mixcclFloat16: case mixcclBfloat16: return 2;
    case mixcclInt32: case mixcclUint32: case mixcclFloat32: return 4;
    default: return 8;
  }
}

static inline int isFloatType(mixcclDataType_t t) {
  return t == mixcclFloat16 || t == mixcclFloat32 || t == mixcclFloat64 || t == mixcclBfloat16 ||
         t == mixcclFloat8e4m3 || t == mixcclFloat8e5m2;
}

static inline int isSignedType(mixcclDataType_t t) {
  return t == mixcclInt8 || t == mixcclInt32 || t == mixcclInt64 || isFloatType(t);
}

/* A normal binary float with the given exponent and mantissa widths. */
static inline uint32_t encodeMinifloat(double v, int expBits, int mantBits) {
  uint32_t sign = v < 0 ? 1u : 0u;
  double a = fabs(v);
  if (a == 0) return sign << (expBits + mantBits);
  int e;
  double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int bias = (1 << (expBits - 1)) - 1;
  uint32_t exponent = (uint32_t)(e - 1 + bias);
  uint32_t mant = (uint32_t)((m * 2 - 1) * (double)(1u << mantBits));
  return (sign << (expBits + mantBits)) | (exponent << mantBits) | mant;
}

static inline double decodeMinifloat(uint32_t bits, int expBits, int mantBits) {
  uint32_t sign = (bits >> (expBits + mantBits)) & 1u;
  uint32_t exponent = (bits >> mantBits) & ((1u << expBits) - 1);
  uint32_t mant = bits & ((1u << mantBits) - 1);
  int bias = (1 << (expBits - 1)) - 1;
  double v;
  if (exponent == 0) v = ldexp((double)mant, 1 - bias - mantBits);
  else v = ldexp(1.0 + (double)mant / (double)(1u << mantBits), (int)exponent - bias);
  return sign ? -v : v;
}

static inline double loadValue(const void* buf, size_t i, mixcclDataType_t t);

static inline void storeValue(void* buf, size_t i, mixcclDataType_t t, double v) {
  char* p = (char*)buf + i * typeSize(t);
  switch (t) {
    case mixcclInt8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case mixcclUint8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case mixcclInt32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case mixcclUint32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case mixcclInt64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case mixcclUint64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    case mixcclFloat16: { uint16_t x = (uint16_t)encodeMinifloat(v, 5, 10); memcpy(p, &x, 2); break; }
    case mixcclBfloat16: { uint16_t x = (uint16_t)encodeMinifloat(v, 8, 7); memcpy(p, &x, 2); break; }
    case mixcclFloat8e4m3: { uint8_t x = (uint8_t)encodeMinifloat(v, 4, 3); memcpy(p, &x, 1); break; }
    case mixcclFloat8e5m2: { uint8_t x = (uint8_t)encodeMinifloat(v, 5, 2); memcpy(p, &x, 1); break; }
    case mixcclFloat32: { float x = (float)v; memcpy(p, &x, 4); break; }
    default: { double x = v; memcpy(p, &x, 8); break; }
  }
  if (loadValue(buf, i, t) != v) {
    fprintf(stderr, "value_codec: %g is not exact in datatype %d: the test's reference is wrong\n",
            v, (int)t);
    abort();
  }
}

static inline double loadValue(const void* buf, size_t i, mixcclDataType_t t) {
  const char* p = (const char*)buf + i * typeSize(t);
  switch (t) {
    case mixcclInt8: { int8_t x; memcpy(&x, p, 1); return x; }
    case mixcclUint8: { uint8_t x; memcpy(&x, p, 1); return x; }
    case mixcclInt32: { int32_t x; memcpy(&x, p, 4); return x; }
    case mixcclUint32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case mixcclInt64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case mixcclUint64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case mixcclFloat16: { uint16_t x; memcpy(&x, p, 2); return decodeMinifloat(x, 5, 10); }
    case mixcclBfloat16: { uint16_t x; memcpy(&x, p, 2); return decodeMinifloat(x, 8, 7); }
    case mixcclFloat8e4m3: { uint8_t x; memcpy(&x, p, 1); return decodeMinifloat(x, 4, 3); }
    case mixcclFloat8e5m2: { uint8_t x; memcpy(&x, p, 1); return decodeMinifloat(x, 5, 2); }
    case mixcclFloat32: { float x; memcpy(&x, p, 4); return x; }
    default: { double x; memcpy(&x, p, 8); return x; }
  }
}

/* The k-th of 113 values (k in [0, 113)) that t holds exactly and all differ: k itself for
 * every type that holds the integers up to 112; for the fp8 types zero and then the normal
 * numbers in ascending order of their codes (e4m3 from 2^-6, e5m2 from 2^-14). */
static inline double distinctValue(mixcclDataType_t t, int k) {
  if (k == 0 || !(t == mixcclFloat8e4m3 || t == mixcclFloat8e5m2)) return k;
  return t == mixcclFloat8e4m3 ? decodeMinifloat((1u << 3) + (uint32_t)k - 1, 4, 3)
                               : decodeMinifloat((1u << 2) + (uint32_t)k - 1, 5, 2);
}

#endif
