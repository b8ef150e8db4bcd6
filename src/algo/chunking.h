// How a buffer is cut into per-rank segments and pipelining chunks. Both sides of every
// transfer compute the same cuts from (count, nranks, chunk size), so message sizes match.
#pragma once

#include <algorithm>
#include <cstddef>

namespace mixccl {

// count elements split into n segments as evenly as possible; the first count % n get one more.
struct Segments {
  size_t count;
  int n;
  size_t start(int i) const {
    size_t base = count / n, rem = count % n;
    return base * i + std::min((size_t)i, rem);
  }
  size_t size(int i) const { return count / n + ((size_t)i < count % n ? 1 : 0); }
};

// A range of elements cut into chunks of at most chunkElems.
struct Chunks {
  size_t elems;
  size_t chunkElems;
  size_t count() const { return elems == 0 ? 0 : (elems + chunkElems - 1) / chunkElems; }
  size_t start(size_t c) const { return c * chunkElems; }
  size_t size(size_t c) const { return std::min(chunkElems, elems - c * chunkElems); }
};

inline int modRank(long long r, int n) { return (int)(((r % n) + n) % n); }

inline size_t chunkElemsFor(size_t chunkBytes, size_t elemSize) {
  return std::max<size_t>(1, chunkBytes / elemSize);
}

}  // namespace mixccl
