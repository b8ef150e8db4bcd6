#include "core/user_ops.h"

#include <cstring>

#include "adaptors/adaptor_loader.h"
#include "algo/reduce.h"
#include "base/error.h"
#include "core/comm.h"

namespace mixccl {

mixcclRedOp_t UserOps::add(const PreMulSumOp& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t slot = 0;
  while (slot < ops_.size() && ops_[slot].live) ++slot;
  if (slot == ops_.size()) ops_.emplace_back();
  ops_[slot] = op;
  ops_[slot].live = true;
  return static_cast<mixcclRedOp_t>(mixcclNumOps + static_cast<int>(slot));
}

Result UserOps::remove(const char* fn, mixcclRedOp_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  const long slot = static_cast<long>(handle) - mixcclNumOps;
  if (handle < mixcclNumOps)
    return raiseError(mixcclInvalidArgument, "%s: op %d is a built-in op, not one created by "
                      "mixcclRedOpCreatePreMulSum", fn, (int)handle);
  if (slot >= static_cast<long>(ops_.size()) || !ops_[slot].live)
    return raiseError(mixcclInvalidArgument, "%s: op %d is not a live op of this communicator",
                      fn, (int)handle);
  ops_[slot].live = false;
  return mixcclSuccess;
}

Result UserOps::find(const char* fn, mixcclRedOp_t handle, PreMulSumOp* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const long slot = static_cast<long>(handle) - mixcclNumOps;
  if (slot < 0 || slot >= static_cast<long>(ops_.size()) || !ops_[slot].live)
    return raiseError(mixcclInvalidArgument, "%s: invalid reduction op %d", fn, (int)handle);
  *out = ops_[slot];
  return mixcclSuccess;
}

Result resolveUserOp(mixcclComm* comm, CollCall* call, PreMulSumOp* preMul, bool* isPreMul) {
  *isPreMul = false;
  const CollKindSpec& s = call->spec();
  if (!s.reduces || (call->op >= 0 && call->op < mixcclNumOps)) return mixcclSuccess;
  MIXCCL_CHECK(comm->userOps.find(s.apiName, call->op, preMul));
  if (preMul->type != call->type)
    return raiseError(mixcclInvalidArgument,
                      "%s: op %d was created for datatype %s, the call is on %s", s.apiName,
                      (int)call->op, dataTypeName(preMul->type), dataTypeName(call->type));
  // Scaling is a host loop: on device memory the call is staged through host memory and
  // scaled there (runCollective), also where the vendor's library would run it otherwise (its
  // adaptor table has no pre-multiplied sum to hand it).
  call->op = mixcclSum;
  *isPreMul = true;
  return mixcclSuccess;
}

void applyPreMulSum(const PreMulSumOp& preMul, int rank, int nranks, CollCall* call,
                    std::vector<unsigned char>* storage) {
  size_t sendBytes = 0, recvBytes = 0;
  callBytes(*call, rank, nranks, &sendBytes, &recvBytes);
  storage->resize(sendBytes);
  const void* factor = preMul.residence == mixcclScalarDevice ? preMul.location : preMul.value;
  scaleBy(storage->data(), call->sendbuf, sendBytes / dataTypeSize(call->type), call->type,
          factor);
  call->sendbuf = storage->data();
}

}  // namespace mixccl
