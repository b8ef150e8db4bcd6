/* A fake plugin built against ABI version 1 (every entry set, collectives named by strings in
 * supports()), which mixccl must still load; compiled once per FAKE_* variant:
 *   FAKE_NAME        the table's name (and the file's libmixccl-adaptor-<name>.so)
 *   FAKE_NULL_ENTRY  leaves allGather NULL (version 1 requires every entry)
 *   FAKE_ABI         abiVersion to export (default MIXCCL_ADAPTOR_ABI_VERSION_V1)
 * supports() says yes to "allreduce" only; getDeviceCount reports 11; getDevice reports how
 * many times init() ran. */
#include <string.h>

#include "mixccl_adaptor.h"

#ifndef FAKE_ABI
#define FAKE_ABI MIXCCL_ADAPTOR_ABI_VERSION_V1
#endif

static int initCalls = 0;
static const char* lastErr = "";

static mixcclResult_t init(void) {
  ++initCalls;
  return mixcclSuccess;
}
static const char* lastError(void) { return lastErr; }
static mixcclResult_t getDeviceCount(int* c) { *c = 11; return mixcclSuccess; }
static mixcclResult_t getDevice(int* d) { *d = initCalls; return mixcclSuccess; }
static int supports(const char* coll, mixcclDataType_t type, mixcclRedOp_t op) {
  (void)type; (void)op;
  return strcmp(coll, "allreduce") == 0;
}
/* Every other entry: one stub per signature shape is enough for a table check. */
static mixcclResult_t stub(void) { return mixcclInternalError; }
#define STUB(type) ((type)(void (*)(void))stub)

#define F(field) STUB(__typeof__(((mixcclAdaptor_v1_t*)0)->field))
const mixcclAdaptor_v1_t mixcclAdaptor_v1 = {
    FAKE_ABI, FAKE_NAME, MIXCCL_ADAPTOR_HOST_MEMORY, init, lastError, getDeviceCount,
    F(setDevice), getDevice, F(getPciBusId), F(memAlloc), F(memFree), F(hostAlloc), F(hostFree),
    F(memcpyAsync), F(streamCreate), F(streamDestroy), F(streamSynchronize), F(eventCreate),
    F(eventDestroy), F(eventRecord), F(eventQuery), F(streamWaitEvent), F(launchHostFunc),
    supports, F(getUniqueId), F(commInitRank), F(commDestroy), F(commAbort), F(allReduce),
#ifdef FAKE_NULL_ENTRY
    NULL,
#else
    F(allGather),
#endif
    F(reduceScatter), F(broadcast), F(reduce), F(send), F(recv), F(groupStart), F(groupEnd)};
