/* A fake version 2 adaptor plugin for the loader tests, compiled once per FAKE_* variant. By
 * default it is a host-memory plugin with no native library that sets only init, lastError,
 * getDeviceCount and getDevice: the loader must fill the rest of the runtime with its own.
 *   FAKE_NAME        the table's name (and the file's libmixccl-adaptor-<name>.so)
 *   FAKE_TAG         what getDeviceCount reports, so a test can tell two copies apart
 *   FAKE_ABI         abiVersion to export (default MIXCCL_ADAPTOR_ABI_VERSION)
 *   FAKE_SIZE        size to export (default sizeof(mixcclAdaptor_v2_t))
 *   FAKE_NO_SYMBOL   exports no table at all
 *   FAKE_INIT_FAILS  init() fails with "fake init failure"
 *   FAKE_NO_RUNTIME  leaves getDeviceCount and getDevice NULL too: no runtime entry at all
 *   FAKE_NULL_LAST_ERROR        leaves lastError (required) NULL
 *   FAKE_DEVICE_MEMORY          says device memory, with the runtime above (incomplete)
 *   FAKE_HALF_LIBRARY           sets commInitRank but not the rest of the native library
 *   FAKE_COLLECTIVE_NO_LIBRARY  sets allReduce without a native library
 * getDevice reports how many times init() ran (the loader must call it once). */
#include <string.h>

#include "mixccl_adaptor.h"

#ifndef FAKE_ABI
#define FAKE_ABI MIXCCL_ADAPTOR_ABI_VERSION
#endif
#ifndef FAKE_SIZE
#define FAKE_SIZE sizeof(mixcclAdaptor_v2_t)
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
MAYBE_UNUSED static mixcclResult_t commInitRank(void** c, int n, const void* id, int r, int d,
                                                const mixcclAdaptorServices_t* s) {
  (void)c; (void)n; (void)id; (void)r; (void)d; (void)s;
  return mixcclInternalError;
}
MAYBE_UNUSED static mixcclResult_t allReduce(const void* s, void* r, size_t n, mixcclDataType_t t,
                                             mixcclRedOp_t op, void* c, void* st) {
  (void)s; (void)r; (void)n; (void)t; (void)op; (void)c; (void)st;
  return mixcclInternalError;
}

#ifndef FAKE_NO_SYMBOL
const mixcclAdaptor_v2_t mixcclAdaptor_v2 = {
    .size = FAKE_SIZE,
    .abiVersion = FAKE_ABI,
    .name = FAKE_NAME,
#ifdef FAKE_DEVICE_MEMORY
    .memoryKind = MIXCCL_ADAPTOR_DEVICE_MEMORY,
#else
    .memoryKind = MIXCCL_ADAPTOR_HOST_MEMORY,
#endif
    .init = init,
#ifndef FAKE_NULL_LAST_ERROR
    .lastError = lastError,
#endif
#ifndef FAKE_NO_RUNTIME
    .getDeviceCount = getDeviceCount,
    .getDevice = getDevice,
#endif
#ifdef FAKE_HALF_LIBRARY
    .commInitRank = commInitRank,
#endif
#ifdef FAKE_COLLECTIVE_NO_LIBRARY
    .allReduce = allReduce,
#endif
};
#else
const int notTheTable = 1;
#endif
