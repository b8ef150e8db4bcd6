// The device-runtime half of the table for plugins whose buffers are ordinary host memory
// (gloo, mpi): every call completes before it returns, so streams and events are placeholders
// and a host function runs at once.
#pragma once

#include <cstdlib>
#include <cstring>

#include "plugin_support.h"

namespace mixccl_plugin {
namespace host_runtime {

inline mixcclResult_t getDeviceCount(int* count) { *count = 1; return mixcclSuccess; }
inline mixcclResult_t setDevice(int) { return mixcclSuccess; }
inline mixcclResult_t getDevice(int* device) { *device = 0; return mixcclSuccess; }
inline mixcclResult_t getPciBusId(int, char* busId, size_t len) {
  if (len > 0) busId[0] = '\0';
  return mixcclSuccess;
}
inline mixcclResult_t memAlloc(void** ptr, size_t bytes) {
  *ptr = std::malloc(bytes ? bytes : 1);
  return *ptr ? mixcclSuccess
              : setError(mixcclSystemError, "host memory", "malloc(%zu) failed", bytes);
}
inline mixcclResult_t memFree(void* ptr) { std::free(ptr); return mixcclSuccess; }
inline mixcclResult_t memcpyAsync(void* dst, const void* src, size_t bytes,
                                  mixcclAdaptorCopyKind_t, void*) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return mixcclSuccess;
}
inline char* placeholder() { static char tag; return &tag; }
inline mixcclResult_t handleCreate(void** h) { *h = placeholder(); return mixcclSuccess; }
inline mixcclResult_t handleDestroy(void*) { return mixcclSuccess; }
inline mixcclResult_t eventRecord(void*, void*) { return mixcclSuccess; }
inline mixcclResult_t eventQuery(void*, int* done) { *done = 1; return mixcclSuccess; }
inline mixcclResult_t streamWaitEvent(void*, void*) { return mixcclSuccess; }
inline mixcclResult_t launchHostFunc(void*, void (*fn)(void*), void* arg) {
  fn(arg);
  return mixcclSuccess;
}

}  // namespace host_runtime
}  // namespace mixccl_plugin

// Fills the runtime entries of a table (a designated-initialiser-free C++17 helper).
#define MIXCCL_HOST_RUNTIME_ENTRIES(t)                                  \
  do {                                                                  \
    namespace hr = ::mixccl_plugin::host_runtime;                       \
    (t).getDeviceCount = hr::getDeviceCount;                            \
    (t).setDevice = hr::setDevice;                                      \
    (t).getDevice = hr::getDevice;                                      \
    (t).getPciBusId = hr::getPciBusId;                                  \
    (t).memAlloc = hr::memAlloc;                                        \
    (t).memFree = hr::memFree;                                          \
    (t).hostAlloc = hr::memAlloc;                                       \
    (t).hostFree = hr::memFree;                                         \
    (t).memcpyAsync = hr::memcpyAsync;                                  \
    (t).streamCreate = hr::handleCreate;                                \
    (t).streamDestroy = hr::handleDestroy;                              \
    (t).streamSynchronize = hr::handleDestroy;                          \
    (t).eventCreate = hr::handleCreate;                                 \
    (t).eventDestroy = hr::handleDestroy;                               \
    (t).eventRecord = hr::eventRecord;                                  \
    (t).eventQuery = hr::eventQuery;                                    \
    (t).streamWaitEvent = hr::streamWaitEvent;                          \
    (t).launchHostFunc = hr::launchHostFunc;                            \
  } while (0)
