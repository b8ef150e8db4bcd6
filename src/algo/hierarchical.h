// Collectives across domains. Inside each domain the domain's own collectives run (native
// library or mixccl's algorithms, DomainColl); between domains every rank exchanges the part
// it owns directly with the ranks of the other domains that own the same elements, all in
// parallel (no leader per domain). Buffers are host memory.
#pragma once

#include <algorithm>
#include <cstddef>

#include "algo/domain_coll.h"
#include "algo/transfers.h"
#include "topology/domains.h"
#include "base/result.h"
#include "mixccl.h"

namespace mixccl {

struct HierContext {
  const DomainMap& map;
  int rank;             // communicator rank
  DomainColl& local;    // collectives inside this rank's domain
  Transfers& cross;     // sends/receives to any communicator rank
  size_t pieceBytes;    // pipelining unit: phases of consecutive pieces overlap
};

// Native reduce-scatter in each domain, exchange of each shard with the ranks of the other
// domains that own overlapping elements, reduction in domain order (so every owner of an
// element computes it bit-identically), native all-gather in each domain; the exchanges of
// two pieces stay on the wire while the next piece is reduce-scattered. Avg: Sum, divided by the
// communicator's rank count once.
Result hierarchicalAllReduce(HierContext& h, const void* sendbuf, void* recvbuf, size_t count,
                             mixcclDataType_t type, mixcclRedOp_t op);

// The root sends each other domain's ranks their share of the buffer directly; each domain
// then all-gathers it natively; the root's own domain broadcasts natively.
Result hierarchicalBroadcast(HierContext& h, const void* sendbuf, void* recvbuf, size_t count,
                             mixcclDataType_t type, int root);

// The elements [begin, end) of a piece of len elements that domain rank j of an n-rank domain
// owns: blocks of ceil(len / n); the last ones may be short or empty.
struct OwnedRange {
  size_t begin, end;
  size_t size() const { return end - begin; }
};
inline size_t shardElems(size_t len, int n) { return (len + n - 1) / n; }
inline OwnedRange ownedRange(size_t len, int n, int j) {
  size_t s = shardElems(len, n);
  size_t b = std::min(len, s * (size_t)j), e = std::min(len, s * (size_t)(j + 1));
  return {b, e};
}

}  // namespace mixccl
