// Recursive doubling AllGather for power-of-two rank counts: log2(n) pairwise exchanges, the
// range of blocks held doubling each step (partner rank ^ mask). The same bytes as the ring in
// log2(n) hand-offs instead of n-1, which pays when ranks outnumber cores (docs/performance.md).
#include <cstring>

#include "algo/algorithms.h"
#include "algo/pairwise_exchange.h"
#include "algo/reduce.h"

namespace mixccl {

Result recursiveDoublingAllGather(CollContext& c, const void* sendbuf, void* recvbuf,
                                  size_t count, mixcclDataType_t type) {
  const int n = c.nranks, r = c.rank;
  const size_t es = dataTypeSize(type), blockBytes = count * es;
  char* out = static_cast<char*>(recvbuf);
  if (blockBytes && sendbuf != out + (size_t)r * blockBytes)
    memcpy(out + (size_t)r * blockBytes, sendbuf, blockBytes);
  if (n == 1 || count == 0) return mixcclSuccess;
  const size_t chunkElems = chunkElemsFor(c.chunkBytes, es);
  return gatherByDoubling(c.transfers, r, n, BlockRange{(size_t)r, (size_t)r + 1}, out, es,
                          chunkElems, [count](size_t b) { return b * count; });
}

}  // namespace mixccl
