// The step of the recursive halving/doubling algorithms: swap ranges with one partner, cut
// into chunks, handing each received chunk on as soon as it is in.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "algo/chunking.h"
#include "algo/transfers.h"
#include "base/error.h"

namespace mixccl {

struct BlockRange {
  size_t first, last;  // blocks [first, last)
};

// Sends [sendOff, +sendLen) and receives the peer's [recvOff, +recvLen) elements, cut into
// chunks; each received chunk is handed to onChunk as soon as it is in.
template <typename OnChunk>
inline Result exchange(Transfers& t, int peer, const char* sendBase, size_t sendLen, char* recvBase,
                size_t recvLen, size_t es, size_t chunkElems, OnChunk onChunk) {
  Chunks rc{recvLen, chunkElems}, sc{sendLen, chunkElems};
  std::vector<Transfer> recvs(rc.count());
  for (size_t i = 0; i < rc.count(); ++i)
    recvs[i] = t.recv(peer, recvBase + rc.start(i) * es, rc.size(i) * es);
  std::vector<Transfer> sends(sc.count());
  for (size_t i = 0; i < sc.count(); ++i)
    sends[i] = t.send(peer, sendBase + sc.start(i) * es, sc.size(i) * es);
  for (size_t i = 0; i < rc.count(); ++i) {
    MIXCCL_CHECK(t.wait(recvs[i]));
    onChunk(rc.start(i), rc.size(i));
  }
  // The regions sent are written again by a later step: they must have left first (the
  // partner posted its receives at the start of this step, so waiting cannot deadlock).
  for (Transfer s : sends) MIXCCL_CHECK(t.wait(s));
  return mixcclSuccess;
}

// The all-gather half of the recursive algorithms: the range of blocks held doubles each step,
// swapped with rank ^ mask, until all n blocks are held in out. start(b) is the first element
// of block b (start(n): the end of the buffer).
template <typename StartOf>
Result gatherByDoubling(Transfers& t, int r, int n, BlockRange held, char* out, size_t es,
                        size_t chunkElems, StartOf start) {
  for (int mask = 1; mask < n; mask *= 2) {
    const size_t width = held.last - held.first;
    BlockRange theirs = (r & mask) ? BlockRange{held.first - width, held.first}
                                   : BlockRange{held.last, held.last + width};
    MIXCCL_CHECK(exchange(t, r ^ mask, out + start(held.first) * es,
                          start(held.last) - start(held.first), out + start(theirs.first) * es,
                          start(theirs.last) - start(theirs.first), es, chunkElems,
                          [](size_t, size_t) {}));
    held = BlockRange{std::min(held.first, theirs.first), std::max(held.last, theirs.last)};
  }
  return mixcclSuccess;
}

}  // namespace mixccl
