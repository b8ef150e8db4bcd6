// The stand-in runtime's process-wide state: the live streams and events behind the opaque
// handles, the calling thread's last error, the sticky error an asynchronous fault leaves (as
// a CUDA context that hit one: every later call returns it), and the fault plans.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>

#include "fault_plan.h"
#include "stream_worker.h"

namespace standin {

// MIXCCL_STANDIN_CUDA_FAIL: runtime calls that fail (cudaMalloc=2@3: the third cudaMalloc
// returns cudaErrorMemoryAllocation).
FaultPlan& callFaults();
// MIXCCL_STANDIN_CUDA_ASYNC_FAIL: stream operations that fail when the stream reaches them,
// by kind: memcpy, memset, hostfunc, nccl (a collective of the stand-in NCCL library).
FaultPlan& asyncFaults();

// Records e (unless cudaSuccess) as the calling thread's last error (cudaGetLastError) and
// returns it.
cudaError_t fail(cudaError_t e);
cudaError_t takeLastError();  // and resets it to cudaSuccess, unless the error is sticky
cudaError_t peekLastError();
cudaError_t stickyError();

// cudaSuccess, or why the runtime cannot take work: the sticky error, or a forked child.
cudaError_t usable();

// Every entry starts here: refuses calls from a host function (CUDA forbids them there),
// returns the sticky error, then the injected fault of `name`, else cudaSuccess.
cudaError_t enter(const char* name);

std::shared_ptr<StreamWorker> streamOf(cudaStream_t s);  // nullptr: not a live stream
cudaStream_t addStream(StreamWorker::Kind kind);
bool removeStream(cudaStream_t s);
std::shared_ptr<EventState> eventOf(cudaEvent_t e);
cudaEvent_t addEvent();
bool removeEvent(cudaEvent_t e);

// Enqueues op on stream s after the work it must follow (the legacy stream's implicit
// ordering). When the stream reaches it, `kind` (if not null) is checked against the async
// fault plan; op(true) runs instead of op(false) when the runtime is poisoned by then.
// *ticket (optional) gets the op's ticket on its stream.
cudaError_t enqueueOp(cudaStream_t s, const char* kind, std::function<void(bool skipped)> op,
                      std::shared_ptr<StreamWorker>* worker = nullptr, uint64_t* ticket = nullptr);

// Blocks until every stream has run the work enqueued before this call.
void synchronizeAll();

// True on a stream's worker while it runs a host function.
bool inHostFunction();
void setInHostFunction(bool on);

}  // namespace standin
