// mixcclRedOpCreatePreMulSum and mixcclRedOpDestroy: ops a communicator creates at run time
// (core/user_ops.h).
#include <cstring>

#include "adaptors/adaptor_loader.h"
#include "algo/reduce.h"
#include "core/api_support.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/user_ops.h"

using namespace mixccl;

namespace {

Result createPreMulSum(Comm* comm, mixcclRedOp_t* op, void* scalar, mixcclDataType_t type,
                       mixcclScalarResidence_t residence) {
  const char* fn = "mixcclRedOpCreatePreMulSum";
  MIXCCL_CHECK(checkCommUsable(fn, comm));
  if (op == nullptr) return raiseError(mixcclInvalidArgument, "%s: op is NULL", fn);
  if (scalar == nullptr) return raiseError(mixcclInvalidArgument, "%s: scalar is NULL", fn);
  MIXCCL_CHECK(checkDataType(fn, type));
  PreMulSumOp made;
  made.type = type;
  made.residence = residence;
  switch (residence) {
    case mixcclScalarHostImmediate:
      std::memcpy(made.value, scalar, dataTypeSize(type));
      break;
    case mixcclScalarDevice:
      // Read when each call runs: on host memory by the caller, on device memory copied on
      // the call's stream ahead of its staged job (collective_dispatch.cc).
      made.location = scalar;
      break;
    default:
      return raiseError(mixcclInvalidArgument, "%s: invalid scalar residence %d", fn,
                        (int)residence);
  }
  *op = comm->userOps.add(made);
  return mixcclSuccess;
}

}  // namespace

MIXCCL_API mixcclResult_t mixcclRedOpCreatePreMulSum(mixcclRedOp_t* op, void* scalar,
                                                     mixcclDataType_t datatype,
                                                     mixcclScalarResidence_t residence,
                                                     mixcclComm_t comm) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclRedOpCreatePreMulSum", comm);
  return finishCall(ref.get(), createPreMulSum(ref.get(), op, scalar, datatype, residence));
}

MIXCCL_API mixcclResult_t mixcclRedOpDestroy(mixcclRedOp_t op, mixcclComm_t comm) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclRedOpDestroy", comm);
  return finishCall(ref.get(), ref.get()->userOps.remove("mixcclRedOpDestroy", op));
}
