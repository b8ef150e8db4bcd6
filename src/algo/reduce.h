/*
 * Element-wise reduction kernels for every mixccl datatype and reduction op, plus the
 * datatype/op tables (sizes, names, validity) the rest of the library needs.
 *
 * Semantics:
 *  - Integer Sum and Prod wrap modulo 2^bits (computed in the unsigned type, so no UB).
 *  - Max/Min on floating types propagate NaN: if either operand is NaN the result is NaN.
 *    Which zero Max(-0, +0) returns is unspecified.
 *  - Float16, Bfloat16 and the Float8 types are widened to float32, combined in float32 and
 *    rounded once to the type (see float_formats.h for rounding and overflow).
 *  - Avg is computed as Sum by reduce(); the caller divides once at the end with divideBy().
 */
#ifndef MIXCCL_ALGO_REDUCE_H_
#define MIXCCL_ALGO_REDUCE_H_

#include <cstddef>

#include "base/type_names.h"
#include "mixccl.h"

namespace mixccl {

// Bytes per element; 0 for an invalid type.
size_t dataTypeSize(mixcclDataType_t type);

// dst[i] = a[i] op b[i] for i < count (mixcclAvg performs Sum). dst may be the same pointer as
// a and/or b; partially overlapping buffers are not supported. Invalid type or op: no-op.
void reduce(void* dst, const void* a, const void* b, size_t count, mixcclDataType_t type,
            mixcclRedOp_t op);

// buf[i] = buf[i] / n, the final step of Avg. Integers truncate toward zero like C integer
// division; float and double divide in their own precision; the narrow float types widen
// to float32, divide, and round once. n < 1 (or an invalid type) leaves buf unchanged.
void divideBy(void* buf, size_t count, mixcclDataType_t type, int n);

// dst[i] = src[i] * scalar for i < count, the input step of a pre-multiplied sum; scalar points
// to one element of type. Integers multiply modulo 2^bits (in the unsigned type); float and double
// in their own precision; the narrow float types widen to float32, multiply and round once.
// dst may be src. An invalid type leaves dst unchanged.
void scaleBy(void* dst, const void* src, size_t count, mixcclDataType_t type, const void* scalar);

namespace detail {
// reduce() with the baseline-ISA kernels, skipping run-time CPU dispatch; lets tests cover
// the kernels that CPUs without AVX2 run.
void reduceBaseline(void* dst, const void* a, const void* b, size_t count, mixcclDataType_t type,
                    mixcclRedOp_t op);
}  // namespace detail

}  // namespace mixccl

#endif  // MIXCCL_ALGO_REDUCE_H_
