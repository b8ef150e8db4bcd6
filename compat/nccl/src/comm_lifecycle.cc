// Finalize, destroy, abort, asynchronous errors and the communicator queries.
#include "shim.h"

using namespace nccl_shim;

NCCL_SHIM_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return forward(mixcclCommFinalize(inner(comm)));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommFinalize)

NCCL_SHIM_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  // NCCL accepts a NULL communicator here (nothing to free).
  if (comm == nullptr) return ncclSuccess;
  return forward(mixcclCommDestroy(inner(comm)));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommDestroy)

NCCL_SHIM_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  return forward(mixcclCommAbort(inner(comm)));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommAbort)

NCCL_SHIM_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (asyncError == nullptr)
    return refuse(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  mixcclResult_t state = mixcclSuccess;
  mixcclResult_t r = mixcclCommGetAsyncError(inner(comm), &state);
  if (r != mixcclSuccess) return forward(r);
  // A failure of the communicator is the newest message for ncclGetLastError(comm).
  *asyncError = forward(state);
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommGetAsyncError)

NCCL_SHIM_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return forward(mixcclCommCount(inner(comm), count));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommCount)

NCCL_SHIM_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return forward(mixcclCommUserRank(inner(comm), rank));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommUserRank)

// The rank's device as its adaptor numbers it: the CUDA device on the nccl adaptor, -1 on host
// memory adaptors (mixcclCommDevice).
NCCL_SHIM_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return forward(mixcclCommDevice(inner(comm), device));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommCuDevice)
