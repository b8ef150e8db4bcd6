// Where a collective runs: mixccl's own algorithms over the whole communicator (host adaptor,
// one domain), straight through to the adaptor's native library (one native domain), or the
// cross-domain algorithms (several domains), staging device memory through host buffers.
#pragma once

#include <cstddef>

#include "algo/algorithms.h"
#include "core/coll_call.h"
#include "core/comm.h"
#include "core/user_ops.h"
#include "base/result.h"
#include "mixccl.h"

namespace mixccl {

// Where runCollective sends a collective of comm (the same for every kind): the adaptor's
// library (one native domain), mixccl's algorithms over every rank (one host domain), the
// cross-domain algorithms (several domains), staged through host memory (device memory there).
enum class CollRoute { Native, Flat, AcrossDomains, Staged };
CollRoute routeOf(const Comm* comm);

// The algorithm runCollective runs for kind on comm with `bytes` (AllReduce: the per-rank
// message; AllGather: the whole result, as the rh threshold counts it): "native",
// "hierarchical", "hierarchical-host" (ranks on several hosts), "ring", "rd", "rh", "chain",
// "pairwise", "direct", "slots". mixcclCommInspect's answer, so what tests assert is what dispatch does.
const char* algorithmName(const Comm* comm, CollKind kind, size_t bytes);

// Whether the shared-memory slots (algo/slot_collectives.h) take call: one host domain whose
// pairs all run on shared memory, MIXCCL_ALGO not forcing an algorithm, and the largest part
// any rank publishes within a slot. runOnSlots then runs it in the calling thread.
bool slotsTake(const Comm* comm, const CollCall& call);
Result runOnSlots(Comm* comm, const CollCall& call);

// Runs call on comm; c is the whole-communicator context of this call.
// preMul: the call is a pre-multiplied sum (call.op is already Sum) whose inputs are on device
// memory; the staged job scales them in host memory. Host memory was scaled by the caller.
Result runCollective(Comm* comm, CollContext& c, const CollCall& call,
                     const PreMulSumOp* preMul = nullptr);

// mixccl's host-memory algorithm for call over the ranks of c.
Result runFlat(CollContext& c, const CollCall& call);
// Several domains: each domain's part by its library (useNative) or by mixccl, and the
// exchange between domains (hierarchical.h).
Result runAcrossDomains(Comm* comm, CollContext& c, const CollCall& call, bool useNative);

}  // namespace mixccl
