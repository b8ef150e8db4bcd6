// The staged route of a collective (collective_dispatch.h): device memory in a job of several
// domains, and any pre-multiplied sum on device memory (mixccl scales in host memory).
#pragma once

#include "base/result.h"
#include "core/coll_call.h"
#include "core/comm.h"
#include "core/user_ops.h"

namespace mixccl {

// Enqueues call on its stream around a job for the staged executor and returns; preMul (or
// nullptr) scales the staged input, its scalar read in stream order.
Result runStaged(Comm* comm, const CollCall& call, const PreMulSumOp* preMul);

}  // namespace mixccl
