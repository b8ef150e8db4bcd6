// The extension built against a torch without CUDA: CPU tensors on host adaptors only.
#include "device_fence.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

bool cudaFenceBuilt() { return false; }

std::unique_ptr<CudaStreams> makeCudaStreams(const char* opName) {
  TORCH_CHECK(false, "mixccl ", opName, ": this build of mixccl's torch extension has no CUDA ",
              "support (the torch it was built against had none); CUDA tensors and device-memory "
              "adaptors need it rebuilt against a torch with CUDA");
}

}  // namespace mixccl_torch
