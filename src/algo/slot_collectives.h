// Small collectives of one host through the shared-memory slots (transport/shm_slots.h): each
// rank publishes its send buffer (what the kind's send shape says it holds), waits for all,
// and builds its result from the slots. Reductions combine the ranks' data in rank order on
// every rank, so every rank gets bit-identical results.
#pragma once

#include <cstddef>

#include "base/collective_kind.h"
#include "base/health.h"
#include "base/result.h"
#include "mixccl.h"
#include "transport/shm_slots.h"

namespace mixccl {

struct SlotCall {
  CollKind kind;
  const void* sendbuf;
  void* recvbuf;
  size_t count;
  mixcclDataType_t type;
  mixcclRedOp_t op;
  int root;
};

// Whether the call fits the slots: something to move, and the largest part any rank publishes
// within the slot size. Every rank answers alike for matching arguments.
bool fitsSlots(const ShmSlots& slots, const SlotCall& call);

// Runs the call on the slots. A peer that called something else (kind, count, type, op, root)
// gives mixcclInvalidUsage naming it on every rank, and the communicator stays usable.
Result slotCollective(ShmSlots& slots, const SlotCall& call, double timeoutS, Health& health);

}  // namespace mixccl
