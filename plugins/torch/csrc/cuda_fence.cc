// DeviceFence on CUDA, as ProcessGroupNCCL orders its work: an event of the caller's current
// stream, an internal stream per device that waits on it, an end event recorded there.
// Built only when torch has CUDA (plugins/torch/CMakeLists.txt); cuda_fence_absent.cc otherwise.
#include "device_fence.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace mixccl_torch {

namespace {

class CudaFence final : public DeviceFence {
 public:
  CudaFence(c10::cuda::CUDAStream internal, bool buffersOnDevice)
      : internal_(internal), onDevice_(buffersOnDevice) {}

  c10::Device bufferDevice() const override {
    return onDevice_ ? internal_.device() : c10::Device(c10::kCPU);
  }
  mixcclStream_t commStream() const override {
    return onDevice_ ? static_cast<mixcclStream_t>(internal_.stream()) : nullptr;
  }

  void recordReady() override {
    ready_.record(c10::cuda::getCurrentCUDAStream(internal_.device_index()));
  }

  void keepAlive(const std::vector<at::Tensor>& tensors) override {
    for (const at::Tensor& t : tensors) {
      // Memory the caching allocator did not hand out is left alone by recordStream.
      if (t.defined() && t.is_cuda() && t.has_storage())
        c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), internal_);
    }
  }

  void useInternalStream() override { guard_.emplace(internal_); }
  void releaseInternalStream() override { guard_.reset(); }
  // A no-op when nothing was recorded (CPU tensors): there is nothing of the caller's to wait for.
  void internalWaitsReady() override { ready_.block(internal_); }
  void recordEnd() override { end_.record(internal_); }

  bool hostWaitsEnd(std::chrono::milliseconds limit) override {
    // Polled rather than cudaEventSynchronize: every wait of mixccl is bounded.
    auto deadline = std::chrono::steady_clock::now() + limit;
    auto pause = std::chrono::microseconds(20);
    while (!end_.query()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
    return true;
  }
  void currentWaitsEnd() override {
    end_.block(c10::cuda::getCurrentCUDAStream(internal_.device_index()));
  }
  bool endPassed() override { return end_.query(); }

  c10::intrusive_ptr<c10::ivalue::Future> makeFuture() const override {
    return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                    std::vector<c10::Device>{internal_.device()});
  }

 private:
  c10::cuda::CUDAStream internal_;
  bool onDevice_;
  c10::cuda::CUDAEvent ready_;
  c10::cuda::CUDAEvent end_;
  std::optional<c10::cuda::CUDAStreamGuard> guard_;
};

class PooledCudaStreams final : public CudaStreams {
 public:
  std::unique_ptr<DeviceFence> fence(int device, bool buffersOnDevice) override {
    c10::DeviceIndex index =
        device < 0 ? c10::cuda::current_device() : static_cast<c10::DeviceIndex>(device);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(index);
    if (it == streams_.end())
      it = streams_.emplace(index, c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index))
               .first;
    return std::make_unique<CudaFence>(it->second, buffersOnDevice);
  }

 private:
  std::mutex mutex_;
  std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams_;
};

}  // namespace

bool cudaFenceBuilt() { return true; }

std::unique_ptr<CudaStreams> makeCudaStreams(const char* opName) {
  TORCH_CHECK(c10::cuda::device_count() > 0, "mixccl ", opName, ": this rank's adaptor takes ",
              "device memory, so its tensors go through CUDA memory, but torch sees no CUDA "
              "device here");
  return std::make_unique<PooledCudaStreams>();
}

}  // namespace mixccl_torch
