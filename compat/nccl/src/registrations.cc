// ncclCommRegister / ncclCommDeregister: mixcclCommRegister / mixcclCommDeregister, which
// register the buffer with the vendor library of this rank's domain where its adaptor can (the
// nccl adaptor on device memory: the library's own ncclCommRegister) and otherwise record it;
// mixccl checks the arguments and the handle, and frees the handles with the communicator.
#include "shim.h"

using namespace nccl_shim;

NCCL_SHIM_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                                            void** handle) {
  return forward(mixcclCommRegister(inner(comm), buff, size, handle));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommRegister)

NCCL_SHIM_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return forward(mixcclCommDeregister(inner(comm), handle));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommDeregister)
