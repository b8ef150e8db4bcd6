// Cross-domain Broadcast (see hierarchical.h): the root sends every rank of every other
// domain its shard of the buffer (each byte crosses to each other domain once), those domains
// all-gather the shards, and the root's own domain broadcasts natively.
#include <cstring>
#include <vector>

#include "algo/hierarchical.h"
#include "algo/reduce.h"

namespace mixccl {

Result hierarchicalBroadcast(HierContext& h, const void* sendbuf, void* recvbuf, size_t count,
                             mixcclDataType_t type, int root) {
  if (count == 0) return mixcclSuccess;
  const size_t es = dataTypeSize(type);
  const int rootDomain = h.map.domainOf[root];
  const int myDomain = h.map.domainOf[h.rank];

  if (myDomain == rootDomain) {
    if (h.rank == root) {
      const char* in = static_cast<const char*>(sendbuf);
      for (size_t e = 0; e < h.map.domains.size(); ++e) {
        if ((int)e == rootDomain) continue;
        const std::vector<int>& ranks = h.map.domains[e].ranks;
        for (size_t j = 0; j < ranks.size(); ++j) {
          OwnedRange part = ownedRange(count, (int)ranks.size(), (int)j);
          if (part.size()) h.cross.send(ranks[j], in + part.begin * es, part.size() * es);
        }
      }
    }
    Result r = h.local.broadcast(sendbuf, recvbuf, count, type, h.map.indexInDomain[root]);
    Result w = h.cross.waitAll();
    return r != mixcclSuccess ? r : w;
  }

  const int n = h.local.size(), me = h.local.rank();
  const size_t s = shardElems(count, n);
  OwnedRange mine = ownedRange(count, n, me);
  std::vector<char> shard(s * es);
  if (mine.size()) {
    Transfer op = h.cross.recv(root, shard.data(), mine.size() * es);
    MIXCCL_CHECK(h.cross.wait(op));
  }
  char* out = static_cast<char*>(recvbuf);
  if (s * n == count) return h.local.allGather(shard.data(), out, s, type);
  std::vector<char> padded(s * n * es);
  MIXCCL_CHECK(h.local.allGather(shard.data(), padded.data(), s, type));
  memcpy(out, padded.data(), count * es);
  return mixcclSuccess;
}

}  // namespace mixccl
