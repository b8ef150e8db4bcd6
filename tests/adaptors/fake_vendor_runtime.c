/* A fake device runtime for the nccl adaptor's library tests (nccl_library_test.cc): the
 * functions the adaptor binds, under CUDA's names or HIP's (FAKE_PREFIX), each answering
 * enough to show which library the adaptor called. FAKE_DROP_HOST_FUNC leaves
 * <prefix>LaunchHostFunc out, to test the missing-symbol message. Not a runtime: there is no
 * device memory; the stand-in runtime that runs collectives is tests/standin (docs/adaptors.md). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) __attribute__((visibility("default"))) int CAT(FAKE_PREFIX, name)

enum { kOk = 0, kOutOfMemory = 2, kNoDriver = 35, kUnsupported = 801 };

/* FAKE_VENDOR_DEVICES: the device count (default 1); negative: the call fails (no driver). */
FN(GetDeviceCount)(int* count) {
  const char* env = getenv("FAKE_VENDOR_DEVICES");
  int n = env ? atoi(env) : 1;
  if (n < 0) return kNoDriver;
  *count = n;
  return kOk;
}
FN(SetDevice)(int device) { return device == 0 ? kOk : kUnsupported; }
FN(GetDevice)(int* device) { *device = 0; return kOk; }
FN(DeviceGetPCIBusId)(char* bus, int len, int device) {
  snprintf(bus, (size_t)len, "0000:%02x:00.0", device);
  return kOk;
}
FN(Malloc)(void** p, size_t n) { *p = NULL; return kOutOfMemory; }
FN(Free)(void* p) { return kUnsupported; }
FN(MallocHost)(void** p, size_t n) { *p = NULL; return kOutOfMemory; }
FN(FreeHost)(void* p) { return kUnsupported; }
FN(MemcpyAsync)(void* d, const void* s, size_t n, int kind, void* stream) { return kUnsupported; }
FN(StreamCreateWithFlags)(void** s, unsigned flags) { return kUnsupported; }
FN(StreamDestroy)(void* s) { return kUnsupported; }
FN(StreamSynchronize)(void* s) { return kUnsupported; }
FN(EventCreateWithFlags)(void** e, unsigned flags) { return kUnsupported; }
FN(EventDestroy)(void* e) { return kUnsupported; }
FN(EventRecord)(void* e, void* s) { return kUnsupported; }
FN(EventQuery)(void* e) { return kUnsupported; }
FN(StreamWaitEvent)(void* s, void* e, unsigned flags) { return kUnsupported; }
#ifndef FAKE_DROP_HOST_FUNC
FN(LaunchHostFunc)(void* s, void (*fn)(void*), void* arg) { return kUnsupported; }
#endif
__attribute__((visibility("default"))) const char* CAT(FAKE_PREFIX, GetErrorString)(int e) {
  switch (e) {
    case kOutOfMemory: return FAKE_LABEL ": out of memory";
    case kNoDriver: return FAKE_LABEL ": no driver";
    default: return FAKE_LABEL ": not supported";
  }
}
