// ncclRedOpCreatePreMulSum / ncclRedOpDestroy: mixccl's pre-multiplied sum (mixccl.h).
#include "shim.h"

using namespace nccl_shim;

static_assert(ncclScalarDevice == (int)mixcclScalarDevice &&
                  ncclScalarHostImmediate == (int)mixcclScalarHostImmediate,
              "scalar residences must have NCCL's values");

NCCL_SHIM_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                                    ncclDataType_t datatype,
                                                    ncclScalarResidence_t residence,
                                                    ncclComm_t comm) {
  static_assert(sizeof(ncclRedOp_t) == sizeof(mixcclRedOp_t), "one op handle");
  return forward(mixcclRedOpCreatePreMulSum(reinterpret_cast<mixcclRedOp_t*>(op), scalar,
                                            static_cast<mixcclDataType_t>(datatype),
                                            static_cast<mixcclScalarResidence_t>(residence),
                                            inner(comm)));
}
NCCL_SHIM_PROFILING_ALIAS(ncclRedOpCreatePreMulSum)

NCCL_SHIM_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return forward(mixcclRedOpDestroy(static_cast<mixcclRedOp_t>(op), inner(comm)));
}
NCCL_SHIM_PROFILING_ALIAS(ncclRedOpDestroy)
