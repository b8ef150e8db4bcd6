// Pipelined chain Broadcast: root -> root+1 -> ... -> root-1, chunk by chunk, so for large
// messages every link carries the data once and all links are busy at the same time.
#include <cstring>
#include <vector>

#include "algo/algorithms.h"
#include "algo/chunking.h"
#include "algo/reduce.h"

namespace mixccl {

Result chainBroadcast(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                      mixcclDataType_t type, int root) {
  const int n = c.nranks, r = c.rank;
  const size_t es = dataTypeSize(type);
  char* out = static_cast<char*>(recvbuf);
  if (r == root && count && sendbuf != out) memcpy(out, sendbuf, count * es);
  if (n == 1 || count == 0) return mixcclSuccess;
  const int pos = modRank(r - root, n);
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const bool last = pos == n - 1;
  const Chunks chunks{count, chunkElemsFor(c.chunkBytes, es)};
  Transfers& t = c.transfers;
  if (pos == 0) {
    for (size_t ch = 0; ch < chunks.count(); ++ch)
      t.send(next, out + chunks.start(ch) * es, chunks.size(ch) * es);
    return t.waitAll();
  }
  std::vector<Transfer> recvs(chunks.count());
  for (size_t ch = 0; ch < chunks.count(); ++ch)
    recvs[ch] = t.recv(prev, out + chunks.start(ch) * es, chunks.size(ch) * es);
  for (size_t ch = 0; ch < chunks.count(); ++ch) {
    MIXCCL_CHECK(t.wait(recvs[ch]));
    if (!last) t.send(next, out + chunks.start(ch) * es, chunks.size(ch) * es);
  }
  return t.waitAll();
}

}  // namespace mixccl
