// Reduction ops a communicator creates at run time (mixcclRedOpCreatePreMulSum): their handles
// continue NCCL's numbering after the built-in ops, and they are valid on their communicator only.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "base/result.h"
#include "core/coll_call.h"
#include "mixccl.h"

namespace mixccl {

// A pre-multiplied sum: the scalar's bytes (read at creation) or where to read them per call.
struct PreMulSumOp {
  bool live = false;
  mixcclDataType_t type = mixcclFloat32;
  mixcclScalarResidence_t residence = mixcclScalarHostImmediate;
  unsigned char value[8] = {};     // mixcclScalarHostImmediate: the scalar, copied
  const void* location = nullptr;  // mixcclScalarDevice: read when each call runs
};

class UserOps {
 public:
  // Registers op and returns its handle (>= mixcclNumOps); slots of destroyed ops are reused.
  mixcclRedOp_t add(const PreMulSumOp& op);
  // fn names the caller in messages. Removes a live op of this communicator.
  Result remove(const char* fn, mixcclRedOp_t handle);
  // The op behind handle, or an error naming fn when handle is no live op of this communicator.
  Result find(const char* fn, mixcclRedOp_t handle, PreMulSumOp* out) const;

 private:
  mutable std::mutex mutex_;
  std::vector<PreMulSumOp> ops_;  // index i is handle mixcclNumOps + i
};

// A collective whose op is a user op becomes a Sum: checked and rewritten when it is called
// (*call's op becomes mixcclSum, *preMul the op, *isPreMul true); built-in ops pass unchanged.
Result resolveUserOp(::mixcclComm* comm, CollCall* call, PreMulSumOp* preMul, bool* isPreMul);

// Where the call runs (so the input and a per-call scalar are read then, as NCCL reads them on
// the stream): scales the send buffer into *storage and points call->sendbuf at it.
void applyPreMulSum(const PreMulSumOp& preMul, int rank, int nranks, CollCall* call,
                    std::vector<unsigned char>* storage);

}  // namespace mixccl
