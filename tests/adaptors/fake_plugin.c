/* A fake adaptor plugin for the loader tests, compiled once per FAKE_* variant:
 *   FAKE_NAME        the table's name (and the file's libmixccl-adaptor-<name>.so)
 *   FAKE_NULL_ENTRY  leaves allGather NULL
 *   FAKE_ABI         abiVersion to export (default MIXCCL_ADAPTOR_ABI_VERSION)
 *   FAKE_NO_SYMBOL   exports no table at all
 *   FAKE_INIT_FAILS  init() fails with "fake init failure"
 *   FAKE_TAG         what getDeviceCount reports, so a test can tell two copies apart
 * getDevice reports how many times init() ran (the loader must call it once). */
#include <string.h>

#include "mixccl_adaptor.h"

#ifndef FAKE_ABI
#define FAKE_ABI MIXCCL_ADAPTOR_ABI_VERSION
#endif
#ifndef FAKE_TAG
#define FAKE_TAG 1
#endif

static int initCalls = 0;
static const char* lastErr = "";

#define MAYBE_UNUSED __attribute__((unused)) /* all of them, in the FAKE_NO_SYMBOL variant */
MAYBE_UNUSED static mixcclResult_t init(void) {
  ++initCalls;
#ifdef FAKE_INIT_FAILS
  lastErr = "fake init failure";
  return mixcclSystemError;
#else
  return mixcclSuccess;
#endif
}
MAYBE_UNUSED static const char* lastError(void) { return lastErr; }
MAYBE_UNUSED static mixcclResult_t getDeviceCount(int* c) { *c = FAKE_TAG; return mixcclSuccess; }
MAYBE_UNUSED static mixcclResult_t getDevice(int* d) { *d = initCalls; return mixcclSuccess; }
/* Every other entry: one stub per signature shape is enough for a table check. */
MAYBE_UNUSED static mixcclResult_t stub(void) { return mixcclInternalError; }
#define STUB(type) ((type)(void (*)(void))stub)

#ifndef FAKE_NO_SYMBOL
#define F(field) STUB(__typeof__(((mixcclAdaptor_v1_t*)0)->field))
const mixcclAdaptor_v1_t mixcclAdaptor_v1 = {
    FAKE_ABI, FAKE_NAME, MIXCCL_ADAPTOR_HOST_MEMORY, init, lastError, getDeviceCount,
    F(setDevice), getDevice, F(getPciBusId), F(memAlloc), F(memFree), F(hostAlloc), F(hostFree),
    F(memcpyAsync), F(streamCreate), F(streamDestroy), F(streamSynchronize), F(eventCreate),
    F(eventDestroy), F(eventRecord), F(eventQuery), F(streamWaitEvent), F(launchHostFunc),
    F(supports), F(getUniqueId), F(commInitRank), F(commDestroy), F(commAbort), F(allReduce),
#ifdef FAKE_NULL_ENTRY
    NULL,
#else
    F(allGather),
#endif
    F(reduceScatter), F(broadcast), F(reduce), F(send), F(recv), F(groupStart), F(groupEnd)};
#else
const int notTheTable = 1;
#endif
