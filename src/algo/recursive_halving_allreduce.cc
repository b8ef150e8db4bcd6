// Recursive halving then doubling AllReduce (Rabenseifner's scheme) for power-of-two rank
// counts: log2(n) pairwise exchanges reduce-scatter the buffer (each step swaps half of the
// range still held with the partner rank ^ mask and reduces the half kept), then log2(n)
// exchanges all-gather it back. Each rank sends 2(n-1)/n of the buffer like the ring, in
// 2 log2(n) steps instead of 2(n-1): fewer hand-offs between processes, which is what counts
// when ranks outnumber cores. Every element is reduced by one owner, so all ranks get the
// same bits.
#include <algorithm>
#include <cstring>
#include <memory>

#include "algo/algorithms.h"
#include "algo/chunking.h"
#include "algo/pairwise_exchange.h"
#include "algo/reduce.h"

namespace mixccl {

Result recursiveHalvingAllReduce(CollContext& c, const void* sendbuf, void* recvbuf,
                                 size_t count, mixcclDataType_t type, mixcclRedOp_t op) {
  const int n = c.nranks, r = c.rank;
  const size_t es = dataTypeSize(type);
  char* out = static_cast<char*>(recvbuf);
  if (count && sendbuf != recvbuf) memcpy(out, sendbuf, count * es);
  if (n == 1 || count == 0) return mixcclSuccess;
  const Segments seg{count, n};
  const size_t chunkElems = chunkElemsFor(c.chunkBytes, es);
  // First element of block b (b == n: the end of the buffer).
  auto start = [&](size_t b) { return b == (size_t)n ? count : seg.start((int)b); };
  auto len = [&](BlockRange b) { return start(b.last) - start(b.first); };

  // Reduce-scatter: the range held halves each step until only block r is left. The first
  // step keeps the largest range; scratch is sized for it once and never zero-filled (a
  // memset of half the buffer per call cost more than the exchange's bookkeeping).
  BlockRange held{0, (size_t)n};
  const BlockRange firstKeep = (r & (n / 2)) ? BlockRange{(size_t)n / 2, (size_t)n}
                                             : BlockRange{0, (size_t)n / 2};
  std::unique_ptr<char[]> scratch(new char[std::max<size_t>(1, len(firstKeep) * es)]);
  for (int mask = n / 2; mask >= 1; mask /= 2) {
    const size_t mid = held.first + (size_t)mask;
    BlockRange lower{held.first, mid}, upper{mid, held.last};
    BlockRange keep = (r & mask) ? upper : lower, give = (r & mask) ? lower : upper;
    char* keepAt = out + start(keep.first) * es;
    const bool last = mask == 1;
    MIXCCL_CHECK(exchange(c.transfers, r ^ mask, out + start(give.first) * es, len(give),
                          scratch.get(), len(keep), es, chunkElems, [&](size_t off, size_t n2) {
      char* dst = keepAt + off * es;
      reduce(dst, dst, scratch.get() + off * es, n2, type, op);
      if (last && op == mixcclAvg) divideBy(dst, n2, type, n);
    }));
    held = keep;
  }

  // All-gather: the range held doubles each step, swapped with the same partners in reverse.
  return gatherByDoubling(c.transfers, r, n, held, out, es, chunkElems, start);
}

}  // namespace mixccl
