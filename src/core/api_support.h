// Shared prologue/epilogue of the public entry points.
#pragma once

#include "core/comm_registry.h"
#include "base/error.h"

namespace mixccl {

// The error for a comm argument that is NULL or not a live communicator.
inline Result badComm(const char* fn, const void* comm) {
  if (!comm) return raiseError(mixcclInvalidArgument, "%s: comm is NULL", fn);
  return raiseError(mixcclInvalidUsage,
                    "%s: %p is not a live communicator (destroyed or aborted?)", fn, comm);
}

// Copies the message of a failed call to the communicator for mixcclGetLastError(comm).
inline Result finishCall(Comm* comm, Result r) {
  if (r != mixcclSuccess && comm) comm->setLastError(threadLastError());
  return r;
}

}  // namespace mixccl

#define MIXCCL_API extern "C" __attribute__((visibility("default")))
