// Ring AllGather: in n-1 steps every block travels once around the ring; chunks of a block
// are forwarded as soon as they arrive.
#include <cstring>
#include <vector>

#include "algo/algorithms.h"
#include "algo/chunking.h"
#include "algo/reduce.h"

namespace mixccl {

Result ringAllGather(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                     mixcclDataType_t type) {
  const int n = c.nranks, r = c.rank;
  const size_t es = dataTypeSize(type);
  const size_t blockBytes = count * es;
  char* out = static_cast<char*>(recvbuf);
  if (blockBytes && sendbuf != out + (size_t)r * blockBytes)
    memcpy(out + (size_t)r * blockBytes, sendbuf, blockBytes);
  if (n == 1 || count == 0) return mixcclSuccess;
  const int next = modRank(r + 1, n), prev = modRank(r - 1, n);
  const Chunks chunks{count, chunkElemsFor(c.chunkBytes, es)};
  const size_t nchunks = chunks.count();
  Transfers& t = c.transfers;

  // Step s sends block r-s and receives block r-s-1; every region is written once, so all
  // receives can be posted up front.
  std::vector<Transfer> recvs((size_t)(n - 1) * nchunks);
  for (int s = 0; s < n - 1; ++s) {
    char* block = out + (size_t)modRank(r - s - 1, n) * blockBytes;
    for (size_t ch = 0; ch < nchunks; ++ch)
      recvs[(size_t)s * nchunks + ch] =
          t.recv(prev, block + chunks.start(ch) * es, chunks.size(ch) * es);
  }
  for (size_t ch = 0; ch < nchunks; ++ch)
    t.send(next, out + (size_t)r * blockBytes + chunks.start(ch) * es, chunks.size(ch) * es);
  for (int s = 0; s + 1 < n - 1; ++s) {
    char* block = out + (size_t)modRank(r - s - 1, n) * blockBytes;
    for (size_t ch = 0; ch < nchunks; ++ch) {
      MIXCCL_CHECK(t.wait(recvs[(size_t)s * nchunks + ch]));
      t.send(next, block + chunks.start(ch) * es, chunks.size(ch) * es);
    }
  }
  return t.waitAll();
}

}  // namespace mixccl
