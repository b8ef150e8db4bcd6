// The staged route of a collective (collective_dispatch.h): device memory in a job of several
// domains, and any pre-multiplied sum on device memory (mixccl scales in host memory).
#pragma once

#include <memory>
#include <vector>

#include "base/result.h"
#include "core/coll_call.h"
#include "core/comm.h"
#include "core/staged_executor.h"
#include "core/user_ops.h"

namespace mixccl {

// One stream copy around a staged job: before it (its input) or after it (its result).
struct StreamCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  mixcclAdaptorCopyKind_t kind = mixcclCopyDeviceToHost;
};

// The communicator's staged executor, made on first use.
void ensureExecutor(Comm* comm);
// The job's pinned staging (sendBytes and recvBytes, either may be 0; from the executor's
// spares) and its completion event.
Result takeJobStaging(Comm* comm, StagedJob* job, size_t sendBytes, size_t recvBytes);
// Hands job to the executor and enqueues on stream: the copies before, the hand-over, the
// hold, the copies after, the event; then returns (see staged_executor.h). A failed stream
// step fails the communicator (its peers are already inside the operation).
Result enqueueStagedJob(Comm* comm, void* stream, std::shared_ptr<StagedJob> job,
                        const std::vector<StreamCopy>& before, const std::vector<StreamCopy>& after);

// Enqueues call on its stream around a job for the staged executor and returns; preMul (or
// nullptr) scales the staged input, its scalar read in stream order.
Result runStaged(Comm* comm, const CollCall& call, const PreMulSumOp* preMul);

}  // namespace mixccl
