// Ring ReduceScatter: n-1 steps; at step s a rank sends its partial sum of block r-1-s and
// receives block r-2-s, so that after the last step it holds block r fully reduced. Chunks
// of a block move on as soon as they are reduced.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algo/algorithms.h"
#include "algo/chunking.h"
#include "algo/reduce.h"
#include "algo/slot_ring.h"

namespace mixccl {
namespace {
constexpr size_t kWindow = 4;
}

Result ringReduceScatter(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                         mixcclDataType_t type, mixcclRedOp_t op) {
  const int n = c.nranks, r = c.rank;
  const size_t es = dataTypeSize(type);
  const size_t blockBytes = count * es;
  const char* in = static_cast<const char*>(sendbuf);
  char* out = static_cast<char*>(recvbuf);
  if (n == 1) {
    if (blockBytes && in != out) memcpy(out, in, blockBytes);
    return mixcclSuccess;
  }
  if (count == 0) return mixcclSuccess;
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const size_t chunkElems = chunkElemsFor(c.chunkBytes, es);
  const Chunks chunks{count, chunkElems};
  const size_t nchunks = chunks.count();
  const size_t units = (size_t)(n - 1) * nchunks;
  Transfers& t = c.transfers;

  for (size_t ch = 0; ch < nchunks; ++ch)
    t.send(next, in + (size_t)modRank(r - 1, n) * blockBytes + chunks.start(ch) * es,
           chunks.size(ch) * es);
  const size_t slotBytes = std::min(chunkElems, count) * es;  // uninitialized, chunk-sized
  std::unique_ptr<char[]> recvSlots(new char[kWindow * slotBytes]);
  std::vector<Transfer> recvOps(kWindow);
  // One partial slot per chunk of a block: a slot is reused one step later for the same
  // chunk, whose earlier send the next rank consumes at about the same point of its own loop.
  // Fewer slots would make each rank wait for the next one to be nchunks units ahead, which
  // around a ring is a deadlock once the socket buffers are full.
  SlotRing partials(nchunks, slotBytes);
  size_t posted = 0;
  for (size_t u = 0; u < units; ++u) {
    for (; posted < units && posted < u + kWindow; ++posted)
      recvOps[posted % kWindow] =
          t.recv(prev, recvSlots.get() + (posted % kWindow) * slotBytes,
                 chunks.size(posted % nchunks) * es);
    int s = (int)(u / nchunks);
    size_t ch = u % nchunks;
    size_t len = chunks.size(ch);
    int block = modRank(r - 2 - s, n);
    const char* mine = in + (size_t)block * blockBytes + chunks.start(ch) * es;
    MIXCCL_CHECK(t.wait(recvOps[u % kWindow]));
    const char* got = recvSlots.get() + (u % kWindow) * slotBytes;
    if (s == n - 2) {  // block r: the final result
      char* dst = out + chunks.start(ch) * es;
      reduce(dst, mine, got, len, type, op);
      if (op == mixcclAvg) divideBy(dst, len, type, n);
    } else {
      char* partial;
      MIXCCL_CHECK(partials.acquire(t, u, &partial));
      reduce(partial, mine, got, len, type, op);
      partials.releaseAfter(u, t.send(next, partial, len * es));
    }
  }
  return t.waitAll();
}

}  // namespace mixccl
