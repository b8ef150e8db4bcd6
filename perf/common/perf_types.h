// Datatype and reduction-op tables of the perf tools, and the small-float encoders they need.
//
// The perf tools never link the library's internals: the conversions here only have to be exact
// for the small integers and powers of two that the data generator produces (perf_data.h), but
// they round to nearest-even in general so that a value out of that set is still meaningful.
#ifndef MIXCCL_PERF_TYPES_H_
#define MIXCCL_PERF_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "mixccl.h"

namespace mixperf {

struct TypeInfo {
  mixcclDataType_t type;
  const char* name;  // nccl-tests' spelling: int8 uint8 int32 ... float double bfloat16 f8e4m3 f8e5m2
  size_t size;       // bytes per element
  bool isFloat;      // a floating-point format (compared numerically, +0 == -0)
  bool isSigned;     // holds negative values
};

struct OpInfo {
  mixcclRedOp_t op;
  const char* name;  // sum prod max min avg
};

constexpr int kNumTypes = mixcclNumTypes;
constexpr int kNumOps = mixcclNumOps;

// Indexed by mixcclDataType_t / mixcclRedOp_t.
const TypeInfo& typeInfo(mixcclDataType_t t);
const OpInfo& opInfo(mixcclRedOp_t op);

// Parses a type or op name (nccl-tests' names; a few aliases such as "fp32", "half", "char" are
// accepted). Returns false for an unknown name.
bool parseTypeName(const std::string& s, mixcclDataType_t* out);
bool parseOpName(const std::string& s, mixcclRedOp_t* out);

// Largest M such that every integer in [-M, M] (or [0, M] for unsigned types) is exactly
// representable in t. For 64-bit integers this is capped at 2^62 to keep host arithmetic simple.
int64_t maxExactInt(mixcclDataType_t t);
// Largest k such that +-2^k (2^k for unsigned types) is exactly representable, capped at 62.
int maxExactPow2(mixcclDataType_t t);

// Encodes the real number v as one element of type t at out (round to nearest even, saturating to
// the largest finite value for integer types). Decodes one element of t at in to a double.
void encodeValue(mixcclDataType_t t, double v, void* out);
double decodeValue(mixcclDataType_t t, const void* in);

// Generic minifloat codec used for half, bfloat16 and the two fp8 formats.
// ebits/mbits: exponent and mantissa field widths; fn: the "finite" e4m3 variant (no infinity, only
// S.1111.111 is NaN, so the top exponent holds normal numbers).
uint32_t encodeMinifloat(double v, int ebits, int mbits, bool fn);
double decodeMinifloat(uint32_t bits, int ebits, int mbits, bool fn);

// Element equality the checker uses: bitwise for integers; for floating-point types, bitwise or
// both zeros of either sign.
bool elementsEqual(mixcclDataType_t t, const void* a, const void* b);

}  // namespace mixperf

#endif  // MIXCCL_PERF_TYPES_H_
