// The built-in host adaptor: ordinary memory and a runtime whose work is done by the time a
// call returns. It has no native collectives (those pointers are NULL): on host ranks mixccl
// runs its own algorithms over its transports.
#include <cstdlib>
#include <cstring>
#include <string>

#include "adaptors/adaptor_loader.h"

namespace mixccl {
namespace {

thread_local std::string tLastError;

mixcclResult_t fail(mixcclResult_t code, const std::string& msg) {
  tLastError = "host adaptor: " + msg;
  return code;
}

// Streams and events are placeholders: everything is complete when the call returns, so a
// handle only has to be non-NULL and distinct enough for callers that compare them.
char gStreamTag;
char gEventTag;

mixcclResult_t init() { return mixcclSuccess; }
const char* lastError() { return tLastError.c_str(); }

mixcclResult_t getDeviceCount(int* count) {
  *count = 1;  // the host itself
  return mixcclSuccess;
}
mixcclResult_t setDevice(int device) {
  return device == 0 ? mixcclSuccess
                     : fail(mixcclInvalidArgument, "device " + std::to_string(device) +
                                                       " does not exist (only 0)");
}
mixcclResult_t getDevice(int* device) {
  *device = 0;
  return mixcclSuccess;
}
mixcclResult_t getPciBusId(int device, char* busId, size_t len) {
  if (len > 0) busId[0] = '\0';
  return mixcclSuccess;
}
mixcclResult_t memAlloc(void** ptr, size_t bytes) {
  *ptr = std::malloc(bytes ? bytes : 1);
  return *ptr ? mixcclSuccess
              : fail(mixcclSystemError, "malloc(" + std::to_string(bytes) + ") failed");
}
mixcclResult_t memFree(void* ptr) {
  std::free(ptr);
  return mixcclSuccess;
}
mixcclResult_t memcpyAsync(void* dst, const void* src, size_t bytes, mixcclAdaptorCopyKind_t,
                           void*) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return mixcclSuccess;
}
mixcclResult_t streamCreate(void** stream) {
  *stream = &gStreamTag;
  return mixcclSuccess;
}
mixcclResult_t nothing(void*) { return mixcclSuccess; }
mixcclResult_t eventCreate(void** event) {
  *event = &gEventTag;
  return mixcclSuccess;
}
mixcclResult_t eventRecord(void*, void*) { return mixcclSuccess; }
mixcclResult_t eventQuery(void*, int* done) {
  *done = 1;
  return mixcclSuccess;
}
mixcclResult_t streamWaitEvent(void*, void*) { return mixcclSuccess; }
mixcclResult_t launchHostFunc(void*, void (*fn)(void*), void* arg) {
  fn(arg);  // the "stream" has already reached this point
  return mixcclSuccess;
}

mixcclAdaptor_v1_t makeTable() {
  mixcclAdaptor_v1_t t;
  std::memset(&t, 0, sizeof t);  // collectives stay NULL
  t.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  t.name = "host";
  t.memoryKind = MIXCCL_ADAPTOR_HOST_MEMORY;
  t.init = init;
  t.lastError = lastError;
  t.getDeviceCount = getDeviceCount;
  t.setDevice = setDevice;
  t.getDevice = getDevice;
  t.getPciBusId = getPciBusId;
  t.memAlloc = memAlloc;
  t.memFree = memFree;
  t.hostAlloc = memAlloc;
  t.hostFree = memFree;
  t.memcpyAsync = memcpyAsync;
  t.streamCreate = streamCreate;
  t.streamDestroy = nothing;
  t.streamSynchronize = nothing;
  t.eventCreate = eventCreate;
  t.eventDestroy = nothing;
  t.eventRecord = eventRecord;
  t.eventQuery = eventQuery;
  t.streamWaitEvent = streamWaitEvent;
  t.launchHostFunc = launchHostFunc;
  return t;
}

}  // namespace

const mixcclAdaptor_v1_t* hostAdaptorTable() {
  static const mixcclAdaptor_v1_t table = makeTable();
  return &table;
}

}  // namespace mixccl
