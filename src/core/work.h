// One communication call as recorded for execution: a point-to-point send or receive, or a
// collective (its descriptor, run by runCollective).
#pragma once

#include <cstddef>
#include <vector>

#include "algo/algorithms.h"
#include "core/comm.h"
#include "core/coll_call.h"
#include "core/user_ops.h"

namespace mixccl {

struct WorkItem {
  enum class Kind { Send, Recv, Collective };
  Comm* comm = nullptr;
  Kind kind = Kind::Collective;
  const char* name = "";
  int peer = -1;
  void* buf = nullptr;
  size_t bytes = 0;
  // Point-to-point on a device adaptor goes to its native library with these.
  size_t count = 0;
  mixcclDataType_t type = mixcclUint8;
  void* stream = nullptr;
  CollCall call{};  // collectives: what runs, and what MIXCCL_CHECK_MISMATCH compares
  // A pre-multiplied sum (call.op is then mixcclSum): scaled into `scaled` when the item runs.
  bool isPreMul = false;
  PreMulSumOp preMul;
  std::vector<unsigned char> scaled;
};

// Executes the items of one communicator: all point-to-point items in flight together, the
// collectives in order, then waits for everything. Returns the first error.
Result executeOnComm(Comm* comm, const std::vector<WorkItem*>& items);
// One collective outside a group, the common case: the same, without the bookkeeping a group
// needs (no point-to-point transfers to start, no list).
Result executeCollective(Comm* comm, WorkItem* w);

}  // namespace mixccl
