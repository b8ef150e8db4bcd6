// Shared prologue/epilogue of the public entry points.
#pragma once

#include <mutex>
#include <string>

#include "core/comm.h"
#include "core/comm_registry.h"
#include "base/error.h"

namespace mixccl {

// The error for a comm argument that is NULL or not a live communicator.
inline Result badComm(const char* fn, const void* comm) {
  if (!comm) return raiseError(mixcclInvalidArgument, "%s: comm is NULL", fn);
  return raiseError(mixcclInvalidUsage,
                    "%s: %p is not a live communicator (destroyed or aborted?)", fn, comm);
}

// Stops everything working for comm on this rank (its native library, the staged executor, the
// connections made on first use, the proxy), failing its pending work with why. comm stays
// registered: mixcclCommAbort then releases it, a shrink with the abort flag keeps it.
inline void stopCommWork(Comm* comm, const std::string& why) {
  if (comm->domainComm) comm->domainComm->abort();
  {
    std::lock_guard<std::mutex> lock(comm->stagedMutex);
    if (comm->staged) comm->staged->abort();
  }
  if (comm->connector) comm->connector->stop();
  if (comm->proxy) comm->proxy->abort(why);
}

// Copies the message of a failed call to the communicator for mixcclGetLastError(comm).
inline Result finishCall(Comm* comm, Result r) {
  if (r != mixcclSuccess && comm) comm->setLastError(threadLastError());
  return r;
}

}  // namespace mixccl

#define MIXCCL_API extern "C" __attribute__((visibility("default")))
