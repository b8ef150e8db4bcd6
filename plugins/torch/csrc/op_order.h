// How an operation of the backend is ordered (placement.h): decided and begun on the caller's
// thread by a worker's FenceSource, run on that worker by runOrdered.
#pragma once

#include "comm.h"
#include "device_fence.h"
#include "work.h"

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace mixccl_torch {

// One per worker thread (its internal CUDA streams are created on the first CUDA tensor, so a
// job of CPU tensors on host adaptors never initialises CUDA).
class FenceSource {
 public:
  // Caller's thread, when the call is made: the route for these tensors on a communicator whose
  // buffers are device memory or not; for CUDA tensors, records the event of the caller's
  // current stream and keeps the tensors' memory for the internal stream. Throws on tensors of
  // several devices, or on devices other than CPU and CUDA.
  OpOrder issue(const std::vector<at::Tensor>& tensors, bool deviceMemory, const char* opName);

 private:
  std::mutex mutex_;
  std::unique_ptr<CudaStreams> cuda_;
};

// Worker thread: runs body (the staging copies and mixccl calls) on comm in the order the
// placement says, then completes work (or fails it with what was thrown).
void runOrdered(const OpOrder& order, MixcclWork& work, Comm& comm,
                const std::function<void(Comm&)>& body);

}  // namespace mixccl_torch
