// ncclMemAlloc / ncclMemFree. With a CUDA device, device memory from the CUDA runtime (opened
// at the first call, so the shim needs no CUDA to load); without one, page-aligned host
// memory, which is what mixccl's host path moves (docs/nccl-compat.md).
#include <dlfcn.h>
#include <stdlib.h>

#include <mutex>
#include <set>

#include "shim.h"

using namespace nccl_shim;

namespace {

constexpr size_t kHostAlignment = 4096;

struct CudaRuntime {
  int (*getDeviceCount)(int*) = nullptr;
  int (*mallocDevice)(void**, size_t) = nullptr;
  int (*freeDevice)(void*) = nullptr;
  bool hasDevice = false;

  CudaRuntime() {
    for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
      void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) continue;
      getDeviceCount = reinterpret_cast<int (*)(int*)>(dlsym(h, "cudaGetDeviceCount"));
      mallocDevice = reinterpret_cast<int (*)(void**, size_t)>(dlsym(h, "cudaMalloc"));
      freeDevice = reinterpret_cast<int (*)(void*)>(dlsym(h, "cudaFree"));
      int n = 0;
      hasDevice = getDeviceCount && mallocDevice && freeDevice && getDeviceCount(&n) == 0 && n > 0;
      return;  // the runtime stays loaded for the process, like CUDA itself
    }
  }
};

const CudaRuntime& cuda() {
  static const CudaRuntime* rt = new CudaRuntime;
  return *rt;
}

// Host allocations, so that ncclMemFree frees each pointer the way it was allocated.
std::mutex gHostMutex;
std::set<void*>& hostBlocks() {
  static std::set<void*>* s = new std::set<void*>;
  return *s;
}

}  // namespace

NCCL_SHIM_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  const char* fn = "ncclMemAlloc";
  if (ptr == nullptr) return refuse(ncclInvalidArgument, "%s: ptr is NULL", fn);
  if (size == 0) return refuse(ncclInvalidArgument, "%s: size is 0", fn);
  if (cuda().hasDevice) {
    int e = cuda().mallocDevice(ptr, size);
    if (e != 0)
      return refuse(ncclUnhandledCudaError, "%s: cudaMalloc of %zu bytes failed (CUDA error %d)",
                    fn, size, e);
    return ncclSuccess;
  }
  void* p = nullptr;
  if (posix_memalign(&p, kHostAlignment, size) != 0)
    return refuse(ncclSystemError, "%s: cannot allocate %zu bytes of host memory", fn, size);
  std::lock_guard<std::mutex> lock(gHostMutex);
  hostBlocks().insert(p);
  *ptr = p;
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclMemAlloc)

NCCL_SHIM_API ncclResult_t ncclMemFree(void* ptr) {
  const char* fn = "ncclMemFree";
  if (ptr == nullptr) return refuse(ncclInvalidArgument, "%s: ptr is NULL", fn);
  {
    std::lock_guard<std::mutex> lock(gHostMutex);
    if (hostBlocks().erase(ptr) == 1) {
      free(ptr);
      return ncclSuccess;
    }
  }
  if (!cuda().hasDevice)
    return refuse(ncclInvalidArgument, "%s: %p was not allocated by ncclMemAlloc", fn, ptr);
  int e = cuda().freeDevice(ptr);
  if (e != 0)
    return refuse(ncclUnhandledCudaError, "%s: cudaFree(%p) failed (CUDA error %d)", fn, ptr, e);
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclMemFree)
