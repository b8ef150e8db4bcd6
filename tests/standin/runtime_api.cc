// The stand-in CUDA runtime's entry points, defined against the real cuda_runtime_api.h so
// the compiler checks each signature. Every entry checks its arguments as CUDA does
// (cudaErrorInvalidValue, cudaErrorInvalidResourceHandle, ...) and records failures for
// cudaGetLastError. Test-only: docs/adaptors.md, "The stand-in GPU".
#include <cuda_runtime_api.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device_memory.h"
#include "runtime_state.h"
#include "standin_bridge.h"
#include "standin_export.h"

using standin::DeviceMemory;
using standin::enter;
using standin::fail;

namespace {

thread_local int tDevice = 0;

#define ENTER(name)                                   \
  do {                                                \
    if (cudaError_t enter_rc_ = enter(name)) return enter_rc_; \
  } while (0)

int deviceCount() {
  const char* env = std::getenv("MIXCCL_STANDIN_DEVICES");
  return env ? std::atoi(env) : 1;
}

// Where a copy's pointers are, as the copy kind must describe them.
struct CopyEnds {
  void* dst;
  const void* src;
  bool pageable;  // a host end in memory not from cudaMallocHost: the call is synchronous
};

cudaError_t resolveCopy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, CopyEnds* ends) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  DeviceMemory& mem = DeviceMemory::get();
  const bool dstDev = mem.isDevice(dst), srcDev = mem.isDevice(src);
  if (kind == cudaMemcpyDefault)
    kind = srcDev ? (dstDev ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                  : (dstDev ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  const bool wantDst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool wantSrc = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  // Strict where CUDA's unified addressing may be lenient: a kind that does not describe the
  // pointers is the bug the stand-in exists to catch.
  if (dst == nullptr || src == nullptr || dstDev != wantDst || srcDev != wantSrc) return cudaErrorInvalidValue;
  ends->dst = wantDst ? mem.shadowOf(dst, n) : dst;
  ends->src = wantSrc ? mem.shadowOf(src, n) : src;
  if (ends->dst == nullptr || ends->src == nullptr) return cudaErrorInvalidValue;  // past the end
  ends->pageable = (!wantDst && !mem.isPinned(dst, n)) || (!wantSrc && !mem.isPinned(src, n));
  return cudaSuccess;
}

// Enqueues the copy; with pageable host memory it returns only once the copy has run, as
// CUDA's cudaMemcpyAsync does (the stream's earlier work included).
cudaError_t enqueueCopy(const CopyEnds& e, size_t n, cudaStream_t stream, bool wait) {
  std::shared_ptr<standin::StreamWorker> worker;
  uint64_t ticket = 0;
  void* d = e.dst;
  const void* s = e.src;
  cudaError_t rc = standin::enqueueOp(
      stream, "memcpy", [d, s, n](bool skipped) { if (!skipped) std::memmove(d, s, n); }, &worker,
      &ticket);
  if (rc != cudaSuccess) return fail(rc);
  if (wait || e.pageable) {
    worker->waitFinished(ticket);
    if (cudaError_t sticky = standin::stickyError()) return fail(sticky);
  }
  return cudaSuccess;
}

cudaError_t copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream,
                 bool wait) {
  if (!standin::streamOf(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (n == 0) return cudaSuccess;
  CopyEnds ends{};
  if (cudaError_t rc = resolveCopy(dst, src, n, kind, &ends)) return fail(rc);
  return enqueueCopy(ends, n, stream, wait);
}

cudaError_t fill(void* dev, int value, size_t n, cudaStream_t stream, bool wait) {
  if (!standin::streamOf(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (n == 0) return cudaSuccess;
  void* shadow = DeviceMemory::get().shadowOf(dev, n);
  if (dev == nullptr || shadow == nullptr) return fail(cudaErrorInvalidValue);
  std::shared_ptr<standin::StreamWorker> worker;
  uint64_t ticket = 0;
  cudaError_t rc = standin::enqueueOp(
      stream, "memset", [shadow, value, n](bool skipped) { if (!skipped) std::memset(shadow, value, n); },
      &worker, &ticket);
  if (rc != cudaSuccess) return fail(rc);
  if (wait) worker->waitFinished(ticket);
  return wait ? fail(standin::stickyError()) : cudaSuccess;
}

}  // namespace

extern "C" {

// ---- devices ----
STANDIN_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  ENTER("cudaGetDeviceCount");
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = 0;
  int n = deviceCount();
  if (n <= 0) return fail(cudaErrorNoDevice);
  *count = n;
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaSetDevice(int device) {
  ENTER("cudaSetDevice");
  if (device < 0 || device >= deviceCount()) return fail(cudaErrorInvalidDevice);
  tDevice = device;
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaGetDevice(int* device) {
  ENTER("cudaGetDevice");
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = tDevice;
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* busId, int len, int device) {
  ENTER("cudaDeviceGetPCIBusId");
  if (busId == nullptr || len <= 0) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= deviceCount()) return fail(cudaErrorInvalidDevice);
  // A bus no real machine of ours has, so a topology lookup finds nothing rather than a NIC.
  std::snprintf(busId, static_cast<size_t>(len), "0000:%02x:00.0", 0xe0 + device);
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  ENTER("cudaDeviceSynchronize");
  standin::synchronizeAll();
  return fail(standin::stickyError());
}
STANDIN_EXPORT cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

// ---- memory ----
STANDIN_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  ENTER("cudaMalloc");
  if (devPtr == nullptr) return fail(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (size == 0) return cudaSuccess;  // CUDA: success and a NULL pointer
  int err = DeviceMemory::get().allocate(size, devPtr);
  return err == 0 ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
STANDIN_EXPORT cudaError_t cudaFree(void* devPtr) {
  ENTER("cudaFree");
  if (devPtr == nullptr) return cudaSuccess;
  // CUDA synchronises the device before freeing: no stream can still be using the memory.
  standin::synchronizeAll();
  return DeviceMemory::get().release(devPtr) ? cudaSuccess : fail(cudaErrorInvalidValue);
}
STANDIN_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) {
  ENTER("cudaMallocHost");
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  *ptr = nullptr;
  return DeviceMemory::get().allocatePinned(size, ptr) == 0 ? cudaSuccess
                                                              : fail(cudaErrorMemoryAllocation);
}
STANDIN_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  ENTER("cudaFreeHost");
  if (ptr == nullptr) return cudaSuccess;
  standin::synchronizeAll();  // as cudaFree: a copy may still be reading it
  return DeviceMemory::get().releasePinned(ptr) ? cudaSuccess : fail(cudaErrorInvalidValue);
}
STANDIN_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                           cudaMemcpyKind kind, cudaStream_t stream) {
  ENTER("cudaMemcpyAsync");
  return copy(dst, src, count, kind, stream, false);
}
STANDIN_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  ENTER("cudaMemcpy");
  return copy(dst, src, count, kind, nullptr, true);
}
STANDIN_EXPORT cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  ENTER("cudaMemsetAsync");
  return fill(devPtr, value, count, stream, false);
}
STANDIN_EXPORT cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  ENTER("cudaMemset");
  return fill(devPtr, value, count, nullptr, true);
}
STANDIN_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  ENTER("cudaPointerGetAttributes");
  if (attributes == nullptr) return fail(cudaErrorInvalidValue);
  std::memset(attributes, 0, sizeof *attributes);
  DeviceMemory& mem = DeviceMemory::get();
  if (mem.isDevice(ptr)) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->devicePointer = const_cast<void*>(ptr);
  } else if (mem.isPinned(ptr, 0)) {
    attributes->type = cudaMemoryTypeHost;
    attributes->devicePointer = const_cast<void*>(ptr);
    attributes->hostPointer = const_cast<void*>(ptr);
  } else {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;  // what CUDA reports for memory it does not know
  }
  return cudaSuccess;
}

// ---- streams ----
STANDIN_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  ENTER("cudaStreamCreateWithFlags");
  if (pStream == nullptr || (flags != cudaStreamDefault && flags != cudaStreamNonBlocking))
    return fail(cudaErrorInvalidValue);
  *pStream = standin::addStream(flags == cudaStreamNonBlocking ? standin::StreamWorker::Kind::NonBlocking
                                                               : standin::StreamWorker::Kind::Blocking);
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  ENTER("cudaStreamCreate");
  if (pStream == nullptr) return fail(cudaErrorInvalidValue);
  *pStream = standin::addStream(standin::StreamWorker::Kind::Blocking);
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  ENTER("cudaStreamDestroy");
  return standin::removeStream(stream) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}
STANDIN_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  ENTER("cudaStreamSynchronize");
  auto w = standin::streamOf(stream);
  if (!w) return fail(cudaErrorInvalidResourceHandle);
  w->waitFinished(w->lastTicket());
  return fail(standin::stickyError());
}
STANDIN_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  ENTER("cudaStreamQuery");
  auto w = standin::streamOf(stream);
  if (!w) return fail(cudaErrorInvalidResourceHandle);
  return w->finished(w->lastTicket()) ? cudaSuccess : cudaErrorNotReady;
}
STANDIN_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  ENTER("cudaStreamWaitEvent");
  if (flags != cudaEventWaitDefault && flags != cudaEventWaitExternal) return fail(cudaErrorInvalidValue);
  auto ev = standin::eventOf(event);
  if (!ev) return fail(cudaErrorInvalidResourceHandle);
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(ev->m);
    target = ev->recorded;  // the record most recent at this call, as CUDA
  }
  cudaError_t rc = standin::enqueueOp(stream, nullptr, [ev, target](bool) {
    std::unique_lock<std::mutex> lock(ev->m);
    ev->cv.wait(lock, [&] { return ev->reached >= target; });
  });
  return rc == cudaSuccess ? rc : fail(rc);
}
STANDIN_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  ENTER("cudaLaunchHostFunc");
  if (fn == nullptr) return fail(cudaErrorInvalidValue);
  cudaError_t rc = standin::enqueueOp(stream, "hostfunc", [fn, userData](bool skipped) {
    if (skipped) return;  // a poisoned context runs no more work
    standin::setInHostFunction(true);
    fn(userData);
    standin::setInHostFunction(false);
  });
  return rc == cudaSuccess ? rc : fail(rc);
}

// ---- events ----
STANDIN_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  ENTER("cudaEventCreateWithFlags");
  const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (event == nullptr || (flags & ~known) != 0) return fail(cudaErrorInvalidValue);
  *event = standin::addEvent();
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* event) {
  ENTER("cudaEventCreate");
  if (event == nullptr) return fail(cudaErrorInvalidValue);
  *event = standin::addEvent();
  return cudaSuccess;
}
STANDIN_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  ENTER("cudaEventDestroy");
  return standin::removeEvent(event) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}
STANDIN_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  ENTER("cudaEventRecord");
  auto ev = standin::eventOf(event);
  if (!ev) return fail(cudaErrorInvalidResourceHandle);
  if (!standin::streamOf(stream)) return fail(cudaErrorInvalidResourceHandle);
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(ev->m);
    n = ++ev->recorded;
  }
  cudaError_t rc = standin::enqueueOp(stream, nullptr, [ev, n](bool) {
    std::lock_guard<std::mutex> lock(ev->m);
    if (ev->reached < n) ev->reached = n;
    ev->cv.notify_all();
  });
  return rc == cudaSuccess ? rc : fail(rc);
}
STANDIN_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  ENTER("cudaEventQuery");
  auto ev = standin::eventOf(event);
  if (!ev) return fail(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(ev->m);
  return ev->reached >= ev->recorded ? cudaSuccess : cudaErrorNotReady;
}
STANDIN_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  ENTER("cudaEventSynchronize");
  auto ev = standin::eventOf(event);
  if (!ev) return fail(cudaErrorInvalidResourceHandle);
  std::unique_lock<std::mutex> lock(ev->m);
  const uint64_t target = ev->recorded;
  ev->cv.wait(lock, [&] { return ev->reached >= target || standin::stickyError() != cudaSuccess; });
  return fail(standin::stickyError());
}

// ---- errors ----
STANDIN_EXPORT cudaError_t cudaGetLastError(void) { return standin::takeLastError(); }
STANDIN_EXPORT cudaError_t cudaPeekAtLastError(void) { return standin::peekLastError(); }

// ---- for the stand-in NCCL-API library (standin_bridge.h) ----
STANDIN_EXPORT cudaError_t mixcclStandinStreamEnqueue(cudaStream_t stream,
                                                      void (*fn)(void* arg, int skipped), void* arg) {
  if (cudaError_t e = standin::usable()) return e;
  return standin::enqueueOp(stream, "nccl", [fn, arg](bool skipped) { fn(arg, skipped ? 1 : 0); });
}
STANDIN_EXPORT void* mixcclStandinHostView(const void* ptr, size_t bytes) {
  DeviceMemory& mem = DeviceMemory::get();
  if (void* shadow = mem.shadowOf(ptr, bytes)) return shadow;
  return mem.isPinned(ptr, bytes) ? const_cast<void*>(ptr) : nullptr;
}

}  // extern "C"
