// Pipelined chain Reduce toward the root: the rank farthest from the root sends its data,
// every rank on the way adds its own chunk and passes it on, the root writes the result.
#include <cstring>
#include <vector>

#include "algo/algorithms.h"
#include "algo/chunking.h"
#include "algo/reduce.h"
#include "algo/slot_ring.h"

namespace mixccl {
namespace {
constexpr size_t kWindow = 4;
}

Result chainReduce(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                   mixcclDataType_t type, mixcclRedOp_t op, int root) {
  const int n = c.nranks, r = c.rank;
  const size_t es = dataTypeSize(type);
  const char* in = static_cast<const char*>(sendbuf);
  char* out = static_cast<char*>(recvbuf);
  if (n == 1) {
    if (count && in != out) memcpy(out, in, count * es);
    return mixcclSuccess;
  }
  if (count == 0) return mixcclSuccess;
  // Positions count from the root: data flows from position n-1 down to 0.
  const int pos = modRank(r - root, n);
  const int towardRoot = modRank(r - 1, n), fromFar = modRank(r + 1, n);
  const size_t chunkElems = chunkElemsFor(c.chunkBytes, es);
  const Chunks chunks{count, chunkElems};
  const size_t nchunks = chunks.count();
  Transfers& t = c.transfers;
  if (pos == n - 1) {
    for (size_t ch = 0; ch < nchunks; ++ch)
      t.send(towardRoot, in + chunks.start(ch) * es, chunks.size(ch) * es);
    return t.waitAll();
  }
  std::vector<char> recvSlots(kWindow * chunkElems * es);
  std::vector<Transfer> recvOps(kWindow);
  SlotRing partials(kWindow, chunkElems * es);
  size_t posted = 0;
  for (size_t ch = 0; ch < nchunks; ++ch) {
    for (; posted < nchunks && posted < ch + kWindow; ++posted)
      recvOps[posted % kWindow] = t.recv(
          fromFar, recvSlots.data() + (posted % kWindow) * chunkElems * es, chunks.size(posted) * es);
    MIXCCL_CHECK(t.wait(recvOps[ch % kWindow]));
    const char* got = recvSlots.data() + (ch % kWindow) * chunkElems * es;
    const char* mine = in + chunks.start(ch) * es;
    size_t len = chunks.size(ch);
    if (pos == 0) {
      char* dst = out + chunks.start(ch) * es;
      reduce(dst, mine, got, len, type, op);
      if (op == mixcclAvg) divideBy(dst, len, type, n);
    } else {
      char* partial;
      MIXCCL_CHECK(partials.acquire(t, ch, &partial));
      reduce(partial, mine, got, len, type, op);
      partials.releaseAfter(ch, t.send(towardRoot, partial, len * es));
    }
  }
  return t.waitAll();
}

}  // namespace mixccl
