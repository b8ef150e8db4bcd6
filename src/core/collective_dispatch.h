// Where a collective runs: mixccl's own algorithms over the whole communicator (host adaptor,
// one domain), straight through to the adaptor's native library (one native domain), or the
// cross-domain algorithms (several domains), staging device memory through host buffers.
#pragma once

#include <cstddef>

#include "algo/algorithms.h"
#include "core/comm.h"
#include "core/result.h"
#include "mixccl.h"

namespace mixccl {

struct CollCall {
  enum class Kind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Gather, Scatter };
  Kind kind;
  const void* sendbuf;
  void* recvbuf;
  size_t count;  // as the API call counts it (per rank for AllGather, ReduceScatter, ...)
  mixcclDataType_t type;
  mixcclRedOp_t op;  // reductions only
  int root;          // rooted collectives only
  void* stream;
};

// Runs call on comm; c is the whole-communicator context of this call.
Result runCollective(Comm* comm, CollContext& c, const CollCall& call);

// mixccl's host-memory algorithm for call over the ranks of c.
Result runFlat(CollContext& c, const CollCall& call);

}  // namespace mixccl
