// Small helpers the nine *_perf tools share to describe their data.
#ifndef MIXCCL_PERF_COLLS_H_
#define MIXCCL_PERF_COLLS_H_

#include "perf_driver.h"
#include "perf_types.h"

namespace mixperf {

inline size_t eltSize(const DataJob& j) { return typeInfo(j.plan->type).size; }
inline char* at(void* base, size_t elements, const DataJob& j) {
  return static_cast<char*>(base) + elements * eltSize(j);
}
inline double factorOne(int) { return 1.0; }
inline double factorN(int n) { return static_cast<double>(n); }
inline double factorNm1OverN(int n) { return static_cast<double>(n - 1) / n; }

// count per rank, rounded like nccl-tests; the whole buffer holds nranks chunks.
inline void countsGatherLike(size_t count, size_t es, int n, Counts* c) {
  size_t base = perRankCount(count, es, n);
  c->send = base;
  c->recv = base * static_cast<size_t>(n);
  c->param = base;
  c->sendInplaceOffset = base;
  c->recvInplaceOffset = 0;
}
inline void countsScatterLike(size_t count, size_t es, int n, Counts* c) {
  size_t base = perRankCount(count, es, n);
  c->send = base * static_cast<size_t>(n);
  c->recv = base;
  c->param = base;
  c->sendInplaceOffset = 0;
  c->recvInplaceOffset = base;
}
inline void countsWhole(size_t count, size_t, int, Counts* c) {
  c->send = c->recv = c->param = count;
  c->sendInplaceOffset = c->recvInplaceOffset = 0;
}

}  // namespace mixperf

#endif  // MIXCCL_PERF_COLLS_H_
