// ncclGetVersion, and the marker that tells mixccl's nccl adaptor this library is the shim
// (plugins/adaptors/nccl/nccl_library.h), so the adaptor never loads it as NVIDIA's NCCL.
#include "shim.h"

NCCL_SHIM_API const char mixcclNcclShimMarker[] =
    "mixccl NCCL shim: NCCL 2.30.7 ABI over mixccl's C API";

NCCL_SHIM_API ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return nccl_shim::refuse(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  // The NCCL release whose exported functions the shim provides (docs/nccl-compat.md); callers
  // compare it against the NCCL they were built for.
  *version = nccl_shim::kReportedVersion;
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclGetVersion)
