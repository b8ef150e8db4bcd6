#include "placement.h"

namespace mixccl_torch {

Placement placementFor(TensorHome tensors, CommMemory memory) {
  using S = WorkerStep;
  Placement p;
  const bool cuda = tensors == TensorHome::kCuda;
  if (memory == CommMemory::kHost) {
    p.route = cuda ? Route::kHostStaged : Route::kHostDirect;
    p.buffersOnDevice = false;
  } else {
    p.route = cuda ? Route::kDeviceDirect : Route::kDeviceStaged;
    p.buffersOnDevice = true;
  }
  p.usesCuda = p.route != Route::kHostDirect;
  // Only a CUDA tensor has a caller's stream to order against; a CPU tensor is ready when the
  // call is made.
  p.orderedAfterCaller = cuda;
  p.hostCompletes = !cuda;
  if (!p.usesCuda) {
    p.workerSteps = {S::kRunOperation, S::kCompleteWork};
    return p;
  }
  p.workerSteps = {S::kUseInternalStream};
  if (p.orderedAfterCaller) p.workerSteps.push_back(S::kInternalWaitsReady);
  p.workerSteps.push_back(S::kRunOperation);
  p.workerSteps.push_back(S::kRecordEnd);
  // A CPU tensor's result must be on the host before its Work completes: the copy back ran on
  // the internal stream, so the worker waits for the end event (a CUDA tensor's caller waits
  // with its stream instead).
  if (p.hostCompletes) p.workerSteps.push_back(S::kHostWaitsEnd);
  p.workerSteps.push_back(S::kCompleteWork);
  return p;
}

std::vector<WaitStep> waitSteps(const Placement& p, bool timeoutGiven) {
  if (!p.orderedAfterCaller) return {WaitStep::kHostWaitsWorker};
  if (timeoutGiven) return {WaitStep::kHostWaitsWorker, WaitStep::kHostWaitsEnd};
  return {WaitStep::kHostWaitsWorker, WaitStep::kCurrentWaitsEnd};
}

std::vector<WaitStep> synchronizeSteps(const Placement& p) {
  // CPU tensors: nothing, as c10d::Work's (callers synchronize after is_completed() said so).
  if (!p.orderedAfterCaller) return {};
  return {WaitStep::kHostWaitsWorker, WaitStep::kCurrentWaitsEnd};
}

bool completionQueriesEnd(const Placement& p) { return p.orderedAfterCaller; }

const char* routeName(Route route) {
  switch (route) {
    case Route::kHostDirect: return "host-direct";
    case Route::kHostStaged: return "host-staged";
    case Route::kDeviceDirect: return "device-direct";
    case Route::kDeviceStaged: return "device-staged";
  }
  return "unknown";
}

}  // namespace mixccl_torch
