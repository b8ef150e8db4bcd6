// The stream and event calls of one operation (placement.h says which are made, and when).
// HostFence is the CPU's: no streams, nothing to order. cuda_fence.cc implements it on CUDA
// (built when torch has CUDA); the backend code above it never names CUDA.
#pragma once

#include "placement.h"

#include <mixccl.h>

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <chrono>
#include <memory>
#include <vector>

namespace mixccl_torch {

class DeviceFence {
 public:
  virtual ~DeviceFence() = default;

  // Where mixccl's buffers of the operation live: kCPU, or the CUDA device.
  virtual c10::Device bufferDevice() const = 0;
  // The stream mixccl calls are issued on (NULL on host memory).
  virtual mixcclStream_t commStream() const = 0;

  // Caller's thread, when the call is made.
  virtual void recordReady() = 0;
  // Caller's thread: the allocator keeps these tensors' memory from reuse until the internal
  // stream is past the operation (CUDACachingAllocator::recordStream).
  virtual void keepAlive(const std::vector<at::Tensor>& tensors) = 0;

  // Worker thread.
  virtual void useInternalStream() = 0;   // until releaseInternalStream
  virtual void releaseInternalStream() = 0;
  virtual void internalWaitsReady() = 0;
  virtual void recordEnd() = 0;

  // Any thread, after recordEnd. hostWaitsEnd returns false when the limit passed first.
  virtual bool hostWaitsEnd(std::chrono::milliseconds limit) = 0;
  virtual void currentWaitsEnd() = 0;
  virtual bool endPassed() = 0;

  // The Work's future: for CUDA tensors a CUDA-aware one (its waiters' streams wait on events
  // recorded where it completes).
  virtual c10::intrusive_ptr<c10::ivalue::Future> makeFuture() const = 0;
};

// CPU tensors on a host adaptor: nothing to order.
class HostFence final : public DeviceFence {
 public:
  c10::Device bufferDevice() const override { return c10::Device(c10::kCPU); }
  mixcclStream_t commStream() const override { return nullptr; }
  void recordReady() override {}
  void keepAlive(const std::vector<at::Tensor>&) override {}
  void useInternalStream() override {}
  void releaseInternalStream() override {}
  void internalWaitsReady() override {}
  void recordEnd() override {}
  bool hostWaitsEnd(std::chrono::milliseconds) override { return true; }
  void currentWaitsEnd() override {}
  bool endPassed() override { return true; }
  c10::intrusive_ptr<c10::ivalue::Future> makeFuture() const override;
};

// One operation's decisions (on the caller's thread) and the fence that carries them out.
struct OpOrder {
  Placement placement;                  // default: CPU tensors on a host adaptor
  std::shared_ptr<DeviceFence> fence = std::make_shared<HostFence>();
};

// One worker thread's internal CUDA streams: one per device, from c10::cuda's pool, created on
// first use. Each worker (the group's collectives, each point-to-point lane) has its own, so a
// transfer that waits for its peer never holds up another worker's work on the GPU.
class CudaStreams {
 public:
  virtual ~CudaStreams() = default;
  // A fence on CUDA device `device` (-1: the current device). buffersOnDevice: mixccl's
  // buffers are on that device (a device adaptor), else in pinned host memory.
  virtual std::unique_ptr<DeviceFence> fence(int device, bool buffersOnDevice) = 0;
};

// Whether this build of the extension has CUDA support (torch had CUDA when it was built).
bool cudaFenceBuilt();
// Throws "mixccl <opName>: ..." when this build or this machine has no CUDA.
std::unique_ptr<CudaStreams> makeCudaStreams(const char* opName);

}  // namespace mixccl_torch
