// The stand-in NCCL-API library's arithmetic: every NCCL datatype and reduction op, on host
// memory (the shadow of device memory). The 16- and 8-bit floats are computed in float and
// rounded to nearest-even at each step, as NCCL's kernels round each pairwise result.
#pragma once

#include <nccl.h>

#include <cstddef>

namespace standin {

size_t typeBytes(ncclDataType_t t);  // 0 for a value outside ncclDataType_t

// dst[i] = a[i] op b[i] for Sum, Prod, Max and Min (Avg reduces as Sum; divideBy finishes it).
// dst may be a or b.
void reduceInto(void* dst, const void* a, const void* b, size_t count, ncclDataType_t t, ncclRedOp_t op);

// buf[i] /= n: Avg's last step (integers truncate, as NCCL's integer Avg does).
void divideBy(void* buf, size_t count, ncclDataType_t t, int n);

// The small floats' codecs, for the tests of this file's rounding.
float smallFloatToFloat(unsigned bits, ncclDataType_t t);
unsigned floatToSmallFloat(float v, ncclDataType_t t);

}  // namespace standin
