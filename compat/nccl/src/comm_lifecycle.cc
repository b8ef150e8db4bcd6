// Finalize, destroy, abort, asynchronous errors and the communicator queries.
#include "shim.h"
#include "vendor_caller.h"

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

// NVIDIA's NCCL asking about its own communicator (vendor_caller.h): its own answer.
#define NCCL_SHIM_VENDOR_OWN(name, ...)                                                       \
  if (auto own = reinterpret_cast<decltype(&name)>(                                          \
          vendorOwnDefinition(#name, __builtin_return_address(0))))                           \
    return own(__VA_ARGS__);

NCCL_SHIM_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  NCCL_SHIM_VENDOR_OWN(ncclCommGetAsyncError, comm, asyncError)
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
  NCCL_SHIM_VENDOR_OWN(ncclCommCount, comm, count)
  return forward(mixcclCommCount(inner(comm), count));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommCount)

NCCL_SHIM_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  NCCL_SHIM_VENDOR_OWN(ncclCommUserRank, comm, rank)
  return forward(mixcclCommUserRank(inner(comm), rank));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommUserRank)

// The rank's device as its adaptor numbers it: the CUDA device on the nccl adaptor, -1 on host
// memory adaptors (mixcclCommDevice).
NCCL_SHIM_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  NCCL_SHIM_VENDOR_OWN(ncclCommCuDevice, comm, device)
  return forward(mixcclCommDevice(inner(comm), device));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommCuDevice)
