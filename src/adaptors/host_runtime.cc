#include "adaptors/host_runtime.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace mixccl {
namespace {

// Cleared by every call, so a message is always from the latest call (AdaptorTable::lastError
// relies on it to tell the runtime's failures from the plugin's).
thread_local std::string tLastError;

mixcclResult_t ok() {
  tLastError.clear();
  return mixcclSuccess;
}
mixcclResult_t fail(mixcclResult_t code, const std::string& msg) {
  tLastError = "host runtime: " + msg;
  return code;
}

// Streams and events are placeholders: everything is complete when the call returns, so a
// handle only has to be non-NULL and distinct enough for callers that compare them.
char gStreamTag;
char gEventTag;

mixcclResult_t getDeviceCount(int* count) {
  *count = 1;  // the host itself
  return ok();
}
mixcclResult_t setDevice(int device) {
  if (device != 0)
    return fail(mixcclInvalidArgument,
                "device " + std::to_string(device) + " does not exist (only 0)");
  return ok();
}
mixcclResult_t getDevice(int* device) {
  *device = 0;
  return ok();
}
mixcclResult_t getPciBusId(int, char* busId, size_t len) {
  if (len > 0) busId[0] = '\0';
  return ok();
}
mixcclResult_t memAlloc(void** ptr, size_t bytes) {
  *ptr = std::malloc(bytes ? bytes : 1);
  if (*ptr == nullptr) return fail(mixcclSystemError, "malloc(" + std::to_string(bytes) + ") failed");
  return ok();
}
mixcclResult_t memFree(void* ptr) {
  std::free(ptr);
  return ok();
}
mixcclResult_t memcpyAsync(void* dst, const void* src, size_t bytes, mixcclAdaptorCopyKind_t,
                           void*) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return ok();
}
mixcclResult_t streamCreate(void** stream) {
  *stream = &gStreamTag;
  return ok();
}
mixcclResult_t nothing(void*) { return ok(); }
mixcclResult_t eventCreate(void** event) {
  *event = &gEventTag;
  return ok();
}
mixcclResult_t eventRecord(void*, void*) { return ok(); }
mixcclResult_t eventQuery(void*, int* done) {
  *done = 1;
  return ok();
}
mixcclResult_t streamWaitEvent(void*, void*) { return ok(); }
mixcclResult_t launchHostFunc(void*, void (*fn)(void*), void* arg) {
  tLastError.clear();
  fn(arg);  // the "stream" has already reached this point
  return mixcclSuccess;
}

template <typename F>
bool fill(F*& entry, F* host) {
  if (entry != nullptr) return false;
  entry = host;
  return true;
}

}  // namespace

bool fillHostRuntime(AdaptorTable* t) {
  bool any = false;
  any |= fill(t->getDeviceCount, &getDeviceCount);
  any |= fill(t->setDevice, &setDevice);
  any |= fill(t->getDevice, &getDevice);
  any |= fill(t->getPciBusId, &getPciBusId);
  any |= fill(t->memAlloc, &memAlloc);
  any |= fill(t->memFree, &memFree);
  any |= fill(t->hostAlloc, &memAlloc);
  any |= fill(t->hostFree, &memFree);
  any |= fill(t->memcpyAsync, &memcpyAsync);
  any |= fill(t->streamCreate, &streamCreate);
  any |= fill(t->streamDestroy, &nothing);
  any |= fill(t->streamSynchronize, &nothing);
  any |= fill(t->eventCreate, &eventCreate);
  any |= fill(t->eventDestroy, &nothing);
  any |= fill(t->eventRecord, &eventRecord);
  any |= fill(t->eventQuery, &eventQuery);
  any |= fill(t->streamWaitEvent, &streamWaitEvent);
  any |= fill(t->launchHostFunc, &launchHostFunc);
  return any;
}

const char* hostRuntimeLastError() { return tLastError.c_str(); }

}  // namespace mixccl
