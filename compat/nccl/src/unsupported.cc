// NCCL calls mixccl cannot honour: each returns ncclInvalidUsage with a message naming what is
// missing (ncclGetLastError), and never touches its arguments.
#include "shim.h"

using namespace nccl_shim;

namespace {
constexpr const char* kSuspend = "suspend and resume of a communicator's GPU memory";
constexpr const char* kWindows = "symmetric memory windows";
constexpr const char* kSignals = "one-sided signals on windows";
constexpr const char* kDevice = "the device API (device communicators, GIN, LSA, multimem)";
constexpr const char* kParams = "NCCL's parameter registry (mixccl reads MIXCCL_* variables, "
                                "docs/environment.md)";
}  // namespace

// ---- communicator changes (shrink, revoke and grow: fault_tolerance.cc) ----
NCCL_SHIM_API ncclResult_t ncclCommSuspend(ncclComm_t, int) { return unsupported("ncclCommSuspend", kSuspend); }
NCCL_SHIM_PROFILING_ALIAS(ncclCommSuspend)
NCCL_SHIM_API ncclResult_t ncclCommResume(ncclComm_t) { return unsupported("ncclCommResume", kSuspend); }
NCCL_SHIM_PROFILING_ALIAS(ncclCommResume)
NCCL_SHIM_API ncclResult_t ncclCommMemStats(ncclComm_t, ncclCommMemStat_t, uint64_t*) {
  return unsupported("ncclCommMemStats", "GPU memory statistics of NCCL's own allocations");
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommMemStats)
NCCL_SHIM_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t*) {
  return unsupported("ncclGroupSimulateEnd", "simulating a group with NCCL's performance model");
}
NCCL_SHIM_PROFILING_ALIAS(ncclGroupSimulateEnd)

// ---- windows and signals ----
NCCL_SHIM_API ncclResult_t ncclCommWindowRegister(ncclComm_t, void*, size_t, ncclWindow_t*, int) {
  return unsupported("ncclCommWindowRegister", kWindows);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommWindowRegister)
NCCL_SHIM_API ncclResult_t ncclCommWindowDeregister(ncclComm_t, ncclWindow_t) {
  return unsupported("ncclCommWindowDeregister", kWindows);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommWindowDeregister)
NCCL_SHIM_API ncclResult_t ncclWinGetUserPtr(ncclComm_t, ncclWindow_t, void**) {
  return unsupported("ncclWinGetUserPtr", kWindows);
}
NCCL_SHIM_PROFILING_ALIAS(ncclWinGetUserPtr)
NCCL_SHIM_API ncclResult_t ncclPutSignal(const void*, size_t, ncclDataType_t, int, ncclWindow_t,
                                         size_t, int, int, unsigned int, ncclComm_t, cudaStream_t) {
  return unsupported("ncclPutSignal", kSignals);
}
NCCL_SHIM_PROFILING_ALIAS(ncclPutSignal)
NCCL_SHIM_API ncclResult_t ncclSignal(int, int, int, unsigned int, ncclComm_t, cudaStream_t) {
  return unsupported("ncclSignal", kSignals);
}
NCCL_SHIM_PROFILING_ALIAS(ncclSignal)
NCCL_SHIM_API ncclResult_t ncclWaitSignal(int, ncclWaitSignalDesc_t*, ncclComm_t, cudaStream_t) {
  return unsupported("ncclWaitSignal", kSignals);
}
NCCL_SHIM_PROFILING_ALIAS(ncclWaitSignal)

// ---- device API (host side) ----
NCCL_SHIM_API ncclResult_t ncclDevCommCreate(ncclComm_t, ncclDevCommRequirements_t const*, ncclDevComm_t*) {
  return unsupported("ncclDevCommCreate", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclDevCommCreate)
NCCL_SHIM_API ncclResult_t ncclDevCommDestroy(ncclComm_t, ncclDevComm_t const*) {
  return unsupported("ncclDevCommDestroy", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclDevCommDestroy)
NCCL_SHIM_API ncclResult_t ncclCommQueryProperties(ncclComm_t, ncclCommProperties_t*) {
  return unsupported("ncclCommQueryProperties", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommQueryProperties)
NCCL_SHIM_API ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t, size_t, void**) {
  return unsupported("ncclGetLsaMultimemDevicePointer", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclGetLsaMultimemDevicePointer)
NCCL_SHIM_API ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t, size_t, ncclMultimemHandle_t, void**) {
  return unsupported("ncclGetMultimemDevicePointer", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclGetMultimemDevicePointer)
NCCL_SHIM_API ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t, size_t, int, void**) {
  return unsupported("ncclGetLsaDevicePointer", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclGetLsaDevicePointer)
NCCL_SHIM_API ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t, size_t, int, void**) {
  return unsupported("ncclGetPeerDevicePointer", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclGetPeerDevicePointer)
NCCL_SHIM_API ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t, ncclTeam_t, int,
                                                           ncclGinBarrierHandle_t*,
                                                           ncclDevResourceRequirements_t*) {
  return unsupported("ncclGinBarrierCreateRequirement", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclGinBarrierCreateRequirement)
NCCL_SHIM_API ncclResult_t ncclGinOutboxCreateRequirement(int, int, struct ncclGinOutboxHandle*,
                                                          ncclDevResourceRequirements_t*) {
  return unsupported("ncclGinOutboxCreateRequirement", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclGinOutboxCreateRequirement)
NCCL_SHIM_API ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t, int, int,
                                                            struct ncclGinInboxA2AHandle*,
                                                            ncclDevResourceRequirements_t*) {
  return unsupported("ncclGinInboxA2ACreateRequirement", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclGinInboxA2ACreateRequirement)
NCCL_SHIM_API ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t, int, ncclLsaBarrierHandle_t*,
                                                           ncclDevResourceRequirements_t*) {
  return unsupported("ncclLsaBarrierCreateRequirement", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclLsaBarrierCreateRequirement)
NCCL_SHIM_API ncclResult_t ncclLLA2ACreateRequirement(int, int, ncclLLA2AHandle_t*,
                                                      ncclDevResourceRequirements_t*) {
  return unsupported("ncclLLA2ACreateRequirement", kDevice);
}
NCCL_SHIM_PROFILING_ALIAS(ncclLLA2ACreateRequirement)
// Sizing for a requirement that cannot be created: no slots, and the refusal recorded.
NCCL_SHIM_API int ncclLLA2ACalcSlots(int, int) {
  refuseQuietly("ncclLLA2ACalcSlots: not supported by mixccl's NCCL shim: %s "
                "(docs/nccl-compat.md)", kDevice);
  return 0;
}
NCCL_SHIM_PROFILING_ALIAS(ncclLLA2ACalcSlots)

// ---- parameters ----
NCCL_SHIM_API ncclResult_t ncclParamBind(ncclParamHandle_t*, const char*) { return unsupported("ncclParamBind", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamBind)
NCCL_SHIM_API ncclResult_t ncclParamGetI8(ncclParamHandle_t, int8_t*) { return unsupported("ncclParamGetI8", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetI8)
NCCL_SHIM_API ncclResult_t ncclParamGetI16(ncclParamHandle_t, int16_t*) { return unsupported("ncclParamGetI16", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetI16)
NCCL_SHIM_API ncclResult_t ncclParamGetI32(ncclParamHandle_t, int32_t*) { return unsupported("ncclParamGetI32", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetI32)
NCCL_SHIM_API ncclResult_t ncclParamGetI64(ncclParamHandle_t, int64_t*) { return unsupported("ncclParamGetI64", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetI64)
NCCL_SHIM_API ncclResult_t ncclParamGetU8(ncclParamHandle_t, uint8_t*) { return unsupported("ncclParamGetU8", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetU8)
NCCL_SHIM_API ncclResult_t ncclParamGetU16(ncclParamHandle_t, uint16_t*) { return unsupported("ncclParamGetU16", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetU16)
NCCL_SHIM_API ncclResult_t ncclParamGetU32(ncclParamHandle_t, uint32_t*) { return unsupported("ncclParamGetU32", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetU32)
NCCL_SHIM_API ncclResult_t ncclParamGetU64(ncclParamHandle_t, uint64_t*) { return unsupported("ncclParamGetU64", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetU64)
NCCL_SHIM_API ncclResult_t ncclParamGetStr(ncclParamHandle_t, const char**) { return unsupported("ncclParamGetStr", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetStr)
NCCL_SHIM_API ncclResult_t ncclParamGet(ncclParamHandle_t, void*, int, int*) { return unsupported("ncclParamGet", kParams); }
NCCL_SHIM_PROFILING_ALIAS(ncclParamGet)
NCCL_SHIM_API ncclResult_t ncclParamGetParameter(const char*, const char**, int*) {
  return unsupported("ncclParamGetParameter", kParams);
}
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetParameter)
NCCL_SHIM_API ncclResult_t ncclParamGetAllParameterKeys(const char***, int*) {
  return unsupported("ncclParamGetAllParameterKeys", kParams);
}
NCCL_SHIM_PROFILING_ALIAS(ncclParamGetAllParameterKeys)
NCCL_SHIM_API void ncclParamDumpAll(void) {
  refuseQuietly("ncclParamDumpAll: not supported by mixccl's NCCL shim: %s (docs/nccl-compat.md)",
                kParams);
}
NCCL_SHIM_PROFILING_ALIAS(ncclParamDumpAll)

// ---- logging ----
// NCCL re-reads its logging variables here. mixccl reads MIXCCL_DEBUG once per process, so
// there is nothing to redo: the call is accepted and has no effect.
// nccl.h marks it deprecated; the shim still has to export it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NCCL_SHIM_API void ncclResetDebugInit() {}
NCCL_SHIM_PROFILING_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
NCCL_SHIM_API void ncclResetDebugInitInternal(void) {}
