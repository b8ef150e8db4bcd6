// mixccl's NCCL shim: NVIDIA's libnccl.so.2 ABI (compiled against the real nccl.h) on top of
// mixccl's public C API only. Shared by the shim's files; one concept per file.
#pragma once

#include <mixccl.h>

#include "nccl_230_api.h"

// An exported NCCL entry point and its profiling twin (pnccl*), which NCCL exports as the same
// function: the alias gets the declared type of the original, so nccl.h checks both.
#define NCCL_SHIM_API extern "C" __attribute__((visibility("default")))
#define NCCL_SHIM_PROFILING_ALIAS(name) \
  NCCL_SHIM_API decltype(name) p##name __attribute__((alias(#name)));
// The same for a name C++ overloads (the device API's host and device versions): the exported
// C function's type is spelt out.
#define NCCL_SHIM_PROFILING_ALIAS_TYPED(ret, name, args) \
  NCCL_SHIM_API ret p##name args __attribute__((alias(#name)));

namespace nccl_shim {

// The NCCL version the shim reports (ncclGetVersion) and whose exports it provides.
constexpr int kReportedVersion = 23007;  // NCCL 2.30.7

// mixccl's result as NCCL's: the same values, except mixcclTimeout (NCCL has none), which
// becomes ncclRemoteError (a peer did not answer in time).
ncclResult_t toNccl(mixcclResult_t r);

// The result of a mixccl call made for the caller: a failure's message (mixccl logged it and
// keeps it for mixcclGetLastError) becomes the one ncclGetLastError reports.
ncclResult_t forward(mixcclResult_t r);

// A call the shim refuses itself: logs fmt once (unless MIXCCL_DEBUG=NONE), keeps it for
// ncclGetLastError and returns code.
ncclResult_t refuse(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Records a refusal in a call that has no result to return (void, int or ncclTeam_t results).
void refuseQuietly(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// The message ncclGetLastError(comm) reports.
const char* lastError(ncclComm_t comm);

// ncclComm_t is mixccl's communicator handle itself: mixccl validates it on every call.
inline mixcclComm_t inner(ncclComm_t c) { return reinterpret_cast<mixcclComm_t>(c); }
inline ncclComm_t outer(mixcclComm_t c) { return reinterpret_cast<ncclComm_t>(c); }

// A live communicator (mixcclCommCount refuses NULL and destroyed handles with a message).
ncclResult_t checkComm(ncclComm_t comm);

// "returns ncclInvalidUsage": what mixccl does not have, named with the reason.
ncclResult_t unsupported(const char* fn, const char* what);

}  // namespace nccl_shim
