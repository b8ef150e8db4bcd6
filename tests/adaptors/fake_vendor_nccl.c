/* A fake NCCL-API library for the nccl adaptor's library tests (nccl_library_test.cc): every
 * function the adaptor binds, answering enough to show that the adaptor called this library.
 * FAKE_DROP_GROUP_END leaves ncclGroupEnd out, to test the missing-symbol message. */
#include <stddef.h>

#define FN(name) __attribute__((visibility("default"))) int name

enum { kOk = 0, kInternalError = 3 };

FN(ncclGetVersion)(int* v) { *v = 22809; return kOk; }
FN(ncclGetUniqueId)(void* id) { return kInternalError; }
struct UniqueId { char internal[128]; };
FN(ncclCommInitRank)(void** c, int n, struct UniqueId id, int r) { return kInternalError; }
FN(ncclCommDestroy)(void* c) { return kInternalError; }
FN(ncclCommAbort)(void* c) { return kInternalError; }
FN(ncclAllReduce)(const void* s, void* r, size_t n, int t, int op, void* c, void* st) { return kInternalError; }
FN(ncclAllGather)(const void* s, void* r, size_t n, int t, void* c, void* st) { return kInternalError; }
FN(ncclReduceScatter)(const void* s, void* r, size_t n, int t, int op, void* c, void* st) { return kInternalError; }
FN(ncclBroadcast)(const void* s, void* r, size_t n, int t, int root, void* c, void* st) { return kInternalError; }
FN(ncclReduce)(const void* s, void* r, size_t n, int t, int op, int root, void* c, void* st) { return kInternalError; }
FN(ncclSend)(const void* s, size_t n, int t, int peer, void* c, void* st) { return kInternalError; }
FN(ncclRecv)(void* r, size_t n, int t, int peer, void* c, void* st) { return kInternalError; }
FN(ncclGroupStart)(void) { return kOk; }
#ifndef FAKE_DROP_GROUP_END
FN(ncclGroupEnd)(void) { return kOk; }
#endif
__attribute__((visibility("default"))) const char* ncclGetErrorString(int r) {
  return r == kInternalError ? "fake nccl: internal error" : "fake nccl: unknown";
}
