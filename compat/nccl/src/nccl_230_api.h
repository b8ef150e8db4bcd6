/* Functions NCCL 2.30 exports that the 2.28 nccl.h this shim compiles against does not declare.
 * Declared here with the signatures of NCCL 2.30.7's headers (nvidia-nccl-cu13 2.30.7 wheel:
 * nccl.h and nccl_device/core.h, gin_win_stub.h), so the compiler still checks the shim's
 * definitions against them. When the toolkit's nccl.h is 2.30 or newer these come from it. */
#ifndef MIXCCL_NCCL_230_API_H_
#define MIXCCL_NCCL_230_API_H_

#include <nccl.h>
#include <nccl_device.h>

#if NCCL_VERSION_CODE < 23000
#define MIXCCL_NCCL_DECLARES_230 1
#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ncclStatGpuMemSuspend = 0,
  ncclStatGpuMemSuspended = 1,
  ncclStatGpuMemPersist = 2,
  ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;

typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;

typedef struct ncclParamHandle* ncclParamHandle_t;
struct ncclCommProperties;
typedef struct ncclCommProperties ncclCommProperties_t;
struct ncclGinOutboxHandle;
struct ncclGinInboxA2AHandle;

#define MIXCCL_NCCL_DECLARE(ret, name, args) ret name args; ret p##name args;
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclCommGetUniqueId, (ncclComm_t comm, ncclUniqueId* uniqueId))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclCommGrow, (ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm, ncclConfig_t* config))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclCommSuspend, (ncclComm_t comm, int flags))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclCommResume, (ncclComm_t comm))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclCommMemStats, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclWinGetUserPtr, (ncclComm_t comm, ncclWindow_t win, void** outUserPtr))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclPutSignal, (const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclSignal, (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclWaitSignal, (int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamBind, (ncclParamHandle_t* out, const char* key))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetI8, (ncclParamHandle_t h, int8_t* out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetI16, (ncclParamHandle_t h, int16_t* out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetI32, (ncclParamHandle_t h, int32_t* out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetI64, (ncclParamHandle_t h, int64_t* out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetU8, (ncclParamHandle_t h, uint8_t* out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetU16, (ncclParamHandle_t h, uint16_t* out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetU32, (ncclParamHandle_t h, uint32_t* out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetU64, (ncclParamHandle_t h, uint64_t* out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetStr, (ncclParamHandle_t h, const char** out))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGet, (ncclParamHandle_t h, void* out, int maxLen, int* len))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetParameter, (const char* key, const char** value, int* valueLen))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclParamGetAllParameterKeys, (const char*** table, int* tableLen))
MIXCCL_NCCL_DECLARE(void, ncclParamDumpAll, (void))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclCommQueryProperties, (ncclComm_t comm, ncclCommProperties_t* props))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclGetLsaMultimemDevicePointer, (ncclWindow_t window, size_t offset, void** outPtr))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclGetMultimemDevicePointer, (ncclWindow_t window, size_t offset, ncclMultimemHandle_t multimem, void** outPtr))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclGetLsaDevicePointer, (ncclWindow_t window, size_t offset, int lsaRank, void** outPtr))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclGetPeerDevicePointer, (ncclWindow_t window, size_t offset, int peer, void** outPtr))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclGinOutboxCreateRequirement, (int nBlocks, int size_log2, struct ncclGinOutboxHandle* outHandle, ncclDevResourceRequirements_t* outReq))
MIXCCL_NCCL_DECLARE(ncclResult_t, ncclGinInboxA2ACreateRequirement, (ncclTeam_t peers, int nBlocks, int size_log2, struct ncclGinInboxA2AHandle* outHandle, ncclDevResourceRequirements_t* outReq))
#undef MIXCCL_NCCL_DECLARE

/* Exported by NCCL 2.30 without a profiling alias and declared in none of its headers. */
void ncclResetDebugInitInternal(void);

#ifdef __cplusplus
}
#endif
#endif /* NCCL_VERSION_CODE < 23000 */

#endif /* MIXCCL_NCCL_230_API_H_ */
