// Ring AllReduce: a reduce-scatter around the ring followed by an all-gather, 2(n-1) steps.
// Every segment is cut into chunks and each chunk moves on as soon as it is reduced, so
// sending, receiving and reducing overlap. Bandwidth-optimal: each rank sends 2(n-1)/n of the
// buffer.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algo/algorithms.h"
#include "algo/chunking.h"
#include "algo/reduce.h"

namespace mixccl {
namespace {
// Receives posted ahead of the one being processed; also the number of scratch chunk slots.
constexpr size_t kWindow = 4;
}

Result ringAllReduce(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                     mixcclDataType_t type, mixcclRedOp_t op) {
  const int n = c.nranks, r = c.rank;
  const size_t es = dataTypeSize(type);
  const char* in = static_cast<const char*>(sendbuf);
  char* out = static_cast<char*>(recvbuf);
  if (n == 1) {
    if (count && in != out) memcpy(out, in, count * es);
    return mixcclSuccess;
  }
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const Segments seg{count, n};
  const size_t chunkElems = chunkElemsFor(c.chunkBytes, es);
  const size_t nchunks = Chunks{seg.size(0), chunkElems}.count();
  const int steps = 2 * (n - 1);
  const size_t units = (size_t)steps * nchunks;

  // Step s receives segment recvSeg(s): reduce-scatter for s < n-1, all-gather after.
  auto recvSeg = [&](int s) { return s < n - 1 ? modRank(r - s - 1, n) : modRank(r - (s - (n - 1)), n); };
  struct Range { size_t off, len; };
  auto chunkOf = [&](int segIdx, size_t ch) {
    Chunks cs{seg.size(segIdx), chunkElems};
    if (ch >= cs.count()) return Range{0, 0};
    return Range{seg.start(segIdx) + cs.start(ch), cs.size(ch)};
  };

  Transfers& t = c.transfers;
  // The all-gather receives into regions this rank sent during the reduce-scatter. No wait
  // for those sends is needed: the final value of a chunk can only exist once every rank's
  // contribution, this one's included, has been received, so the earlier send has left.
  // (Waiting here could deadlock: the peer may hold our bytes unread behind a receive it has
  // not posted yet.)
  for (size_t ch = 0; ch < nchunks; ++ch) {
    Range rg = chunkOf(r, ch);
    if (rg.len) t.send(next, in + rg.off * es, rg.len * es);
  }

  // Uninitialized (no memset per call) and no larger than the largest chunk.
  const size_t slotBytes = std::min(chunkElems, seg.size(0)) * es;
  std::unique_ptr<char[]> scratch(new char[kWindow * slotBytes]);
  std::vector<Transfer> recvOps(kWindow);
  size_t posted = 0;
  auto postRecv = [&](size_t u) {
    int s = (int)(u / nchunks);
    size_t ch = u % nchunks;
    Range rg = chunkOf(recvSeg(s), ch);
    if (!rg.len) return;
    char* buf = s < n - 1 ? scratch.get() + (u % kWindow) * slotBytes : out + rg.off * es;
    recvOps[u % kWindow] = t.recv(prev, buf, rg.len * es);
  };

  for (size_t u = 0; u < units; ++u) {
    while (posted < units && posted < u + kWindow) postRecv(posted++);
    int s = (int)(u / nchunks);
    size_t ch = u % nchunks;
    Range rg = chunkOf(recvSeg(s), ch);
    if (!rg.len) continue;
    MIXCCL_CHECK(t.wait(recvOps[u % kWindow]));
    char* dst = out + rg.off * es;
    if (s < n - 1) {
      const char* slot = scratch.get() + (u % kWindow) * slotBytes;
      reduce(dst, in + rg.off * es, slot, rg.len, type, op);
      if (s == n - 2 && op == mixcclAvg) divideBy(dst, rg.len, type, n);
    }
    if (s + 1 < steps) t.send(next, dst, rg.len * es);
  }
  return t.waitAll();
}

}  // namespace mixccl
