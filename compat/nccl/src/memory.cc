// ncclMemAlloc / ncclMemFree through the adaptor this process's communicators take
// (mixcclGetProcessAdaptor: MIXCCL_ADAPTOR, else detection): device memory from its memAlloc on a
// device adaptor (cudaMalloc on nccl), so the buffers are what that adaptor's collectives take,
// also when the program allocates before ncclCommInitRank; page-aligned host memory on a
// host-memory adaptor, which is what mixccl's host path moves (docs/nccl-compat.md).
#include <stdlib.h>

#include <map>
#include <mutex>

#include <mixccl_adaptor.h>

#include "shim.h"

using namespace nccl_shim;

namespace {

constexpr size_t kHostAlignment = 4096;

// Every live block and how it was allocated (nullptr: host memory), so that ncclMemFree frees
// each pointer the way it was allocated and refuses any other.
struct Blocks {
  std::mutex mutex;
  std::map<void*, const mixcclAdaptor_v2_t*> live;
};
Blocks& blocks() {
  static Blocks* b = new Blocks;  // outlives static destructors of programs that exit
  return *b;
}

}  // namespace

NCCL_SHIM_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  const char* fn = "ncclMemAlloc";
  if (ptr == nullptr) return refuse(ncclInvalidArgument, "%s: ptr is NULL", fn);
  if (size == 0) return refuse(ncclInvalidArgument, "%s: size is 0", fn);
  const mixcclAdaptor_v2_t* adaptor = nullptr;
  // The loader's failure (logged once by mixccl, its message for ncclGetLastError).
  if (mixcclResult_t r = mixcclGetProcessAdaptor(&adaptor); r != mixcclSuccess) return forward(r);
  void* p = nullptr;
  if (adaptor->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY) {
    if (adaptor->memAlloc(&p, size) != mixcclSuccess)
      return refuse(ncclUnhandledCudaError, "%s: %zu bytes from the %s adaptor failed: %s", fn,
                    size, adaptor->name, adaptor->lastError());
  } else {
    adaptor = nullptr;
    if (posix_memalign(&p, kHostAlignment, size) != 0)
      return refuse(ncclSystemError, "%s: cannot allocate %zu bytes of host memory", fn, size);
  }
  std::lock_guard<std::mutex> lock(blocks().mutex);
  blocks().live.emplace(p, adaptor);
  *ptr = p;
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclMemAlloc)

NCCL_SHIM_API ncclResult_t ncclMemFree(void* ptr) {
  const char* fn = "ncclMemFree";
  if (ptr == nullptr) return refuse(ncclInvalidArgument, "%s: ptr is NULL", fn);
  const mixcclAdaptor_v2_t* adaptor = nullptr;
  {
    std::lock_guard<std::mutex> lock(blocks().mutex);
    auto it = blocks().live.find(ptr);
    if (it == blocks().live.end())
      return refuse(ncclInvalidArgument, "%s: %p was not allocated by ncclMemAlloc", fn, ptr);
    adaptor = it->second;
    blocks().live.erase(it);
  }
  if (adaptor == nullptr) {
    free(ptr);
  } else if (adaptor->memFree(ptr) != mixcclSuccess) {
    return refuse(ncclUnhandledCudaError, "%s: freeing %p with the %s adaptor failed: %s", fn,
                  ptr, adaptor->name, adaptor->lastError());
  }
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclMemFree)
