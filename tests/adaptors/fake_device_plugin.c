/* A fake device-memory plugin whose native library serves one rank, for what mixccl does with
 * the entries a version 2 table leaves NULL. Its "device memory" is ordinary memory, so the
 * tests can check results; which path ran is told by fakeSendsMatched below.
 *   FAKE_NAME      the table's name (and the file's libmixccl-adaptor-<name>.so)
 *   FAKE_WITH_P2P  sets send, recv, groupStart, groupEnd
 * Native collectives: allReduce only (one rank: a copy). */
#include <stdlib.h>
#include <string.h>

#include "mixccl_adaptor.h"

#define MAYBE_UNUSED __attribute__((unused)) /* point to point, without FAKE_WITH_P2P */

static const char* lastErr = "";
static char commTag, streamTag, eventTag;

static mixcclResult_t fail(mixcclResult_t code, const char* msg) {
  lastErr = msg;
  return code;
}
static size_t typeSize(mixcclDataType_t t) {
  switch (t) {
    case mixcclInt8: case mixcclUint8: case mixcclFloat8e4m3: case mixcclFloat8e5m2: return 1;
    case mixcclFloat16: case mixcclBfloat16: return 2;
    case mixcclInt32: case mixcclUint32: case mixcclFloat32: return 4;
    default: return 8;
  }
}

static mixcclResult_t init(void) { return mixcclSuccess; }
static const char* lastError(void) { return lastErr; }

/* ---- runtime: ordinary memory, work done when a call returns ---- */
static mixcclResult_t getDeviceCount(int* c) { *c = 1; return mixcclSuccess; }
static mixcclResult_t setDevice(int d) { return d == 0 ? mixcclSuccess : fail(mixcclInvalidArgument, "no such device"); }
static mixcclResult_t getDevice(int* d) { *d = 0; return mixcclSuccess; }
static mixcclResult_t getPciBusId(int d, char* id, size_t len) { (void)d; if (len) id[0] = 0; return mixcclSuccess; }
static mixcclResult_t memAlloc(void** p, size_t n) { *p = malloc(n ? n : 1); return *p ? mixcclSuccess : fail(mixcclSystemError, "out of memory"); }
static mixcclResult_t memFree(void* p) { free(p); return mixcclSuccess; }
static mixcclResult_t memcpyAsync(void* d, const void* s, size_t n, mixcclAdaptorCopyKind_t k, void* st) {
  (void)k; (void)st;
  if (n) memmove(d, s, n);
  return mixcclSuccess;
}
static mixcclResult_t streamCreate(void** s) { *s = &streamTag; return mixcclSuccess; }
static mixcclResult_t nothing(void* h) { (void)h; return mixcclSuccess; }
static mixcclResult_t eventCreate(void** e) { *e = &eventTag; return mixcclSuccess; }
static mixcclResult_t eventRecord(void* e, void* s) { (void)e; (void)s; return mixcclSuccess; }
static mixcclResult_t eventQuery(void* e, int* done) { (void)e; *done = 1; return mixcclSuccess; }
static mixcclResult_t streamWaitEvent(void* s, void* e) { (void)s; (void)e; return mixcclSuccess; }
static mixcclResult_t launchHostFunc(void* s, void (*fn)(void*), void* arg) { (void)s; fn(arg); return mixcclSuccess; }

/* ---- native library of one rank ---- */
static int supports(mixcclAdaptorColl_t coll, mixcclDataType_t type, mixcclRedOp_t op) {
  (void)type; (void)op;
  return coll == mixcclCollAllReduce;
}
static mixcclResult_t getUniqueId(void* id) { memset(id, 0, MIXCCL_ADAPTOR_UNIQUE_ID_BYTES); return mixcclSuccess; }
static mixcclResult_t commInitRank(void** c, int n, const void* id, int r, int d,
                                   const mixcclAdaptorServices_t* s) {
  (void)id; (void)r; (void)d; (void)s;
  if (n != 1) return fail(mixcclInvalidUsage, "the fake device library has one rank");
  *c = &commTag;
  return mixcclSuccess;
}
static mixcclResult_t allReduce(const void* s, void* r, size_t n, mixcclDataType_t t,
                                mixcclRedOp_t op, void* c, void* st) {
  (void)op; (void)c; (void)st;
  if (n && s != r) memmove(r, s, n * typeSize(t));
  return mixcclSuccess;
}

/* ---- point to point: every peer is this rank; sends meet receives at groupEnd ---- */
#define FAKE_MAX_OPS 64
struct FakeOp {
  void* buf;
  size_t bytes;
};
static struct FakeOp sends[FAKE_MAX_OPS], recvs[FAKE_MAX_OPS];
static int nsends, nrecvs, depth;
/* Pairs matched so far: the test reads it to see that the library's send/recv ran. */
int fakeSendsMatched = 0;

static mixcclResult_t post(struct FakeOp* ops, int* n, const void* buf, size_t bytes, int peer) {
  if (peer != 0) return fail(mixcclInvalidArgument, "the fake device library has one rank");
  if (depth == 0) return fail(mixcclInvalidUsage, "the fake device library needs a group");
  if (*n == FAKE_MAX_OPS) return fail(mixcclInternalError, "too many sends or receives in a group");
  ops[(*n)++] = (struct FakeOp){(void*)buf, bytes};
  return mixcclSuccess;
}
MAYBE_UNUSED static mixcclResult_t send(const void* b, size_t n, mixcclDataType_t t, int peer, void* c, void* st) {
  (void)c; (void)st;
  return post(sends, &nsends, b, n * typeSize(t), peer);
}
MAYBE_UNUSED static mixcclResult_t recv(void* b, size_t n, mixcclDataType_t t, int peer, void* c, void* st) {
  (void)c; (void)st;
  return post(recvs, &nrecvs, b, n * typeSize(t), peer);
}
MAYBE_UNUSED static mixcclResult_t groupStart(void) { ++depth; return mixcclSuccess; }
MAYBE_UNUSED static mixcclResult_t groupEnd(void) {
  if (depth == 0 || --depth > 0) return mixcclSuccess;
  mixcclResult_t r = mixcclSuccess;
  if (nsends != nrecvs) r = fail(mixcclInvalidUsage, "sends and receives to self do not pair up");
  for (int i = 0; r == mixcclSuccess && i < nsends; ++i) {
    if (sends[i].bytes != recvs[i].bytes) r = fail(mixcclInvalidUsage, "sizes differ");
    else if (sends[i].bytes) memmove(recvs[i].buf, sends[i].buf, sends[i].bytes);
    if (r == mixcclSuccess) ++fakeSendsMatched;
  }
  nsends = nrecvs = 0;
  return r;
}

const mixcclAdaptor_v2_t mixcclAdaptor_v2 = {
    .size = sizeof(mixcclAdaptor_v2_t),
    .abiVersion = MIXCCL_ADAPTOR_ABI_VERSION,
    .name = FAKE_NAME,
    .memoryKind = MIXCCL_ADAPTOR_DEVICE_MEMORY,
    .init = init,
    .lastError = lastError,
    .getDeviceCount = getDeviceCount,
    .setDevice = setDevice,
    .getDevice = getDevice,
    .getPciBusId = getPciBusId,
    .memAlloc = memAlloc,
    .memFree = memFree,
    .hostAlloc = memAlloc,
    .hostFree = memFree,
    .memcpyAsync = memcpyAsync,
    .streamCreate = streamCreate,
    .streamDestroy = nothing,
    .streamSynchronize = nothing,
    .eventCreate = eventCreate,
    .eventDestroy = nothing,
    .eventRecord = eventRecord,
    .eventQuery = eventQuery,
    .streamWaitEvent = streamWaitEvent,
    .launchHostFunc = launchHostFunc,
    .supports = supports,
    .getUniqueId = getUniqueId,
    .commInitRank = commInitRank,
    .commDestroy = nothing,
    .commAbort = nothing,
    .allReduce = allReduce,
#ifdef FAKE_WITH_P2P
    .send = send,
    .recv = recv,
    .groupStart = groupStart,
    .groupEnd = groupEnd,
#endif
};
