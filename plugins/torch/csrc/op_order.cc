#include "op_order.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

namespace {

TensorHome homeOf(const std::vector<at::Tensor>& tensors, const char* opName, int* cudaDevice) {
  TensorHome home = TensorHome::kNone;
  for (const at::Tensor& t : tensors) {
    if (!t.defined()) continue;
    TORCH_CHECK(t.is_cuda() || t.device().is_cpu(), "mixccl ", opName, ": tensors on ",
                t.device(), " are not supported (cpu and cuda are)");
    TensorHome h = t.is_cuda() ? TensorHome::kCuda : TensorHome::kCpu;
    TORCH_CHECK(home == TensorHome::kNone || home == h, "mixccl ", opName,
                ": CPU and CUDA tensors in one call; put them on one device");
    if (h == TensorHome::kCuda) {
      int index = t.device().index();
      TORCH_CHECK(*cudaDevice < 0 || *cudaDevice == index, "mixccl ", opName,
                  ": tensors on cuda:", *cudaDevice, " and cuda:", index,
                  " in one call; put them on one device");
      *cudaDevice = index;
    }
    home = h;
  }
  return home;
}

// Sets the communicator's buffers and stream for one operation, and clears them after.
class OpBuffersScope {
 public:
  OpBuffersScope(Comm& comm, const DeviceFence& fence) : comm_(comm) {
    comm_.setOpBuffers(fence.bufferDevice(), fence.commStream());
  }
  ~OpBuffersScope() { comm_.setOpBuffers(c10::Device(c10::kCPU), nullptr); }

 private:
  Comm& comm_;
};

}  // namespace

OpOrder FenceSource::issue(const std::vector<at::Tensor>& tensors, bool deviceMemory,
                           const char* opName) {
  int cudaDevice = -1;
  TensorHome home = homeOf(tensors, opName, &cudaDevice);
  OpOrder order;
  order.placement = placementFor(home, deviceMemory ? CommMemory::kDevice : CommMemory::kHost);
  if (!order.placement.usesCuda) return order;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cuda_) cuda_ = makeCudaStreams(opName);
  }
  order.fence = cuda_->fence(cudaDevice, order.placement.buffersOnDevice);
  if (order.placement.orderedAfterCaller) {
    order.fence->recordReady();
    order.fence->keepAlive(tensors);
  }
  return order;
}

void runOrdered(const OpOrder& order, MixcclWork& work, Comm& comm,
                const std::function<void(Comm&)>& body) {
  DeviceFence& fence = *order.fence;
  bool onInternal = false;
  try {
    for (WorkerStep step : order.placement.workerSteps) {
      switch (step) {
        case WorkerStep::kUseInternalStream:
          fence.useInternalStream();
          onInternal = true;
          break;
        case WorkerStep::kInternalWaitsReady: fence.internalWaitsReady(); break;
        case WorkerStep::kRunOperation: {
          OpBuffersScope scope(comm, fence);
          body(comm);
          break;
        }
        case WorkerStep::kRecordEnd: fence.recordEnd(); break;
        case WorkerStep::kHostWaitsEnd:
          TORCH_CHECK(fence.hostWaitsEnd(work.timeout()), "mixccl ", work.opName(),
                      ": the device did not finish the operation within ", work.timeout().count(),
                      " ms (its timeout)");
          break;
        case WorkerStep::kCompleteWork: work.markDone(); break;
      }
    }
  } catch (...) {
    work.markFailed(std::current_exception());
  }
  if (onInternal) fence.releaseInternalStream();
}

}  // namespace mixccl_torch
