// Where one operation's bytes meet mixccl, and how its completion is ordered with the caller:
// the decisions of the backend's CUDA support, kept free of torch and CUDA so that they are
// unit-tested on any machine (tests/torch/placement_test.cc). device_fence.h carries them out.
//
// The model is ProcessGroupNCCL's. For CUDA tensors an event is recorded on the caller's
// current stream when the call is made; the backend's internal stream (one per device) waits on
// it, the operation is issued there, and an end event is recorded after it; wait() makes the
// caller's current stream wait on the end event without blocking the host. CPU tensors complete
// on the host, as before: wait() returns once the result is in place.
#pragma once

#include <vector>

namespace mixccl_torch {

// Where the tensors of one call live (a call whose tensors are on both is refused).
enum class TensorHome { kNone, kCpu, kCuda };
// Where the rank's adaptor takes its buffers (mixcclCommInspect "memory").
enum class CommMemory { kHost, kDevice };

enum class Route {
  kHostDirect,     // CPU tensors, host adaptor: host pointers, NULL stream (no CUDA at all)
  kHostStaged,     // CUDA tensors, host adaptor: copied to pinned host memory on the internal
                   // stream, reduced on the host, copied back on the internal stream
  kDeviceDirect,   // CUDA tensors, device adaptor: device pointers on the internal stream
  kDeviceStaged,   // CPU tensors (or none: barrier), device adaptor: copied to device memory,
                   // run as kDeviceDirect, copied back; the host waits for the end
};

// What the worker thread does around the mixccl calls of one operation, in this order.
enum class WorkerStep {
  kUseInternalStream,   // the internal stream becomes the worker's current stream (copies and
                        // temporaries of the operation run on it), until the operation ends
  kInternalWaitsReady,  // the internal stream waits on the event recorded on the caller's stream
  kRunOperation,        // staging copies and mixccl calls (on the internal stream where a device
                        // adaptor takes one)
  kRecordEnd,           // the end event, on the internal stream, after the last copy back
  kHostWaitsEnd,        // the worker blocks until the end event has passed
  kCompleteWork,        // the Work and its Future complete (a CUDA-aware Future records its
                        // events on the internal stream, still current)
};

// What Work::wait() does.
enum class WaitStep {
  kHostWaitsWorker,     // block until the worker ran the operation (its errors surface here)
  kCurrentWaitsEnd,     // the caller's current stream waits on the end event (no host block)
  kHostWaitsEnd,        // block until the end event has passed (wait with a timeout)
};

struct Placement {
  Route route = Route::kHostDirect;
  // mixccl gets device pointers and the internal stream (else host pointers, NULL stream).
  bool buffersOnDevice = false;
  // An event of the caller's current stream orders the operation after the caller's earlier
  // work, and the tensors are recorded on the internal stream until the work completes.
  bool orderedAfterCaller = false;
  // The result is in place on the host when the Work completes (CPU tensors).
  bool hostCompletes = true;
  // Whether any CUDA call is made: never for CPU tensors on a host adaptor.
  bool usesCuda = false;
  std::vector<WorkerStep> workerSteps;
};

Placement placementFor(TensorHome tensors, CommMemory memory);

// wait(): timeoutGiven is true when the caller passed its own timeout (as ProcessGroupNCCL,
// which then blocks the host until the GPU is done).
std::vector<WaitStep> waitSteps(const Placement& p, bool timeoutGiven);
// synchronize(): for CUDA tensors the caller's stream waits (the host only for the worker to
// have issued the operation); for CPU tensors nothing, as c10d::Work's.
std::vector<WaitStep> synchronizeSteps(const Placement& p);
// is_completed(): also asks the end event when true.
bool completionQueriesEnd(const Placement& p);

const char* routeName(Route route);

}  // namespace mixccl_torch
