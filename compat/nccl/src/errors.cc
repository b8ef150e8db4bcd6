// Result codes, messages and the last error: NCCL's values, mixccl's messages.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "shim.h"

namespace nccl_shim {
namespace {

static_assert(ncclSuccess == (int)mixcclSuccess && ncclUnhandledCudaError == (int)mixcclUnhandledDeviceError &&
                  ncclSystemError == (int)mixcclSystemError && ncclInternalError == (int)mixcclInternalError &&
                  ncclInvalidArgument == (int)mixcclInvalidArgument &&
                  ncclInvalidUsage == (int)mixcclInvalidUsage && ncclRemoteError == (int)mixcclRemoteError &&
                  ncclInProgress == (int)mixcclInProgress,
              "mixccl's result codes must have NCCL's values");

// The shim's own last refusal on this thread, and whether it is newer than mixccl's last error
// (a failed mixccl call clears the flag, so the newest message wins).
thread_local std::string tlsRefusal;
thread_local bool tlsRefusalIsLatest = false;

const char* ncclResultName(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "unknown result";
  }
}

void record(ncclResult_t code, const char* fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  tlsRefusal = msg;
  tlsRefusalIsLatest = true;
  // Logged like mixccl's own warnings: on by default, silenced by MIXCCL_DEBUG=NONE.
  const char* level = getenv("MIXCCL_DEBUG");
  if (level == nullptr || strcmp(level, "NONE") != 0)
    fprintf(stderr, "mixccl-nccl WARN %s (%s)\n", msg, ncclResultName(code));
}

}  // namespace

ncclResult_t toNccl(mixcclResult_t r) {
  if (r == mixcclTimeout) return ncclRemoteError;
  if (r >= mixcclSuccess && r < mixcclTimeout) return static_cast<ncclResult_t>(r);
  return ncclInternalError;
}

ncclResult_t forward(mixcclResult_t r) {
  if (r != mixcclSuccess && r != mixcclInProgress) tlsRefusalIsLatest = false;
  return toNccl(r);
}

ncclResult_t refuse(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(code, fmt, ap);
  va_end(ap);
  return code;
}

void refuseQuietly(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(ncclInvalidUsage, fmt, ap);
  va_end(ap);
}

const char* lastError(ncclComm_t comm) {
  if (tlsRefusalIsLatest) return tlsRefusal.c_str();
  return mixcclGetLastError(inner(comm));
}

ncclResult_t checkComm(ncclComm_t comm) {
  int n = 0;
  return forward(mixcclCommCount(inner(comm), &n));
}

ncclResult_t unsupported(const char* fn, const char* what) {
  return refuse(ncclInvalidUsage, "%s: not supported by mixccl's NCCL shim: %s "
                "(docs/nccl-compat.md)", fn, what);
}

}  // namespace nccl_shim

using namespace nccl_shim;

NCCL_SHIM_API const char* ncclGetErrorString(ncclResult_t result) {
  // mixccl's strings for the codes both have; NCCL's count has no mixcclTimeout.
  if (result < ncclSuccess || result >= ncclNumResults) return mixcclGetErrorString(mixcclNumResults);
  return mixcclGetErrorString(static_cast<mixcclResult_t>(result));
}
NCCL_SHIM_PROFILING_ALIAS(ncclGetErrorString)

NCCL_SHIM_API const char* ncclGetLastError(ncclComm_t comm) { return lastError(comm); }
NCCL_SHIM_PROFILING_ALIAS(ncclGetLastError)
