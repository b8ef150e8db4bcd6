// Exactly predictable test data.
//
// Every element a rank contributes is a pure function of (seed, rank, global element index), so any
// rank can compute what any other rank sent, and the expected output of a collective, on the host.
//
// Data-movement collectives (broadcast, gathers, scatter, alltoall, sendrecv) carry arbitrary bit
// patterns, compared bit for bit. Reductions carry small integers (and +-2^k for prod) chosen per
// (type, op, nranks) so that every partial result of every reduction order is exactly
// representable, also in fp8 (see DataPlan); the expected result is therefore exact and the checker
// compares for equality, never with a tolerance:
//   sum     : values in [-K, K] ([0, K] unsigned); at most nnz = min(n, M) ranks hold non-zero values
//             for a given element and nnz*K <= M, M = maxExactInt(type).
//   avg     : floating types: every value is a multiple of n (sum scheme scaled by n), so both
//             sum-then-divide and pre-multiply-by-1/n are exact. Integer types: the sum scheme, and
//             the expected value truncates like C division (the header's contract).
//   prod    : values in {1, 2} (and sign flips for signed types) with at most maxExactPow2(type)
//             twos per element, plus an occasional 0.
//   max/min : values in [-K, K] ([0, K] unsigned).
#ifndef MIXCCL_PERF_DATA_H_
#define MIXCCL_PERF_DATA_H_

#include <cstddef>
#include <cstdint>

#include "mixccl.h"

namespace mixperf {

struct DataPlan {
  mixcclDataType_t type = mixcclFloat32;
  mixcclRedOp_t op = mixcclSum;
  bool reduction = false;  // false: raw bit patterns (data movement)
  int nranks = 1;
  uint64_t seed = 0;
  // Reduction parameters derived by makePlan.
  int64_t k = 0;        // value magnitude bound (sum/avg/max/min) or 1 (prod)
  int nnz = 0;          // ranks holding a non-neutral value per element
  int64_t scale = 1;    // avg on floating types: every value is a multiple of scale (= nranks)
  bool zeros = false;   // no exact scheme exists (fp8 avg with too many ranks): all values are 0
};

DataPlan makePlan(mixcclDataType_t type, mixcclRedOp_t op, bool reduction, int nranks,
                  uint64_t seed);

// The exact integer value of element j of rank r's reduction input (reduction plans only).
int64_t inputValue(const DataPlan& p, int rank, size_t j);
// The exact reduced value of element j over all ranks, as a double (exact: the plan guarantees it).
double reducedValue(const DataPlan& p, size_t j);

// Writes count elements of rank's input, global indices first..first+count-1.
void fillInput(const DataPlan& p, int rank, size_t first, size_t count, void* out);
// Writes count elements of the expected reduction result, indices first..first+count-1.
void fillReduced(const DataPlan& p, size_t first, size_t count, void* out);

// Number of elements of got that differ from expected (see elementsEqual).
size_t countMismatches(mixcclDataType_t type, const void* got, const void* expected, size_t count);

// Fills a buffer with a byte pattern that no plan produces on purpose (0xA5..), used to poison
// receive buffers before a checked run so stale data cannot pass.
void poison(void* buf, size_t bytes);

// nccl-tests' rounding for per-rank counts: count/nranks, rounded down so that every rank's chunk
// is a multiple of 16 bytes.
size_t perRankCount(size_t count, size_t eltSize, int nranks);

// Stores an exact integer as one element of type t (fast path for the generator).
void encodeInt(mixcclDataType_t t, int64_t v, void* out);

}  // namespace mixperf

#endif  // MIXCCL_PERF_DATA_H_
