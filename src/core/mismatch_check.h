// Detection of mismatched collective calls across ranks (MIXCCL_CHECK_MISMATCH=1).
//
// Before each collective every rank contributes a small descriptor (which collective, count,
// datatype, op, root and the communicator's collective sequence number) to an AllGather over
// the communicator's own connections. Every rank then holds the same table and reaches the same
// verdict: if any entry differs, all ranks return mixcclInvalidUsage with one message naming
// the first rank that differs from rank 0, and nobody runs the collective. The exchange itself
// has the same size on every rank, so it can never desynchronise the communicator, and after a
// mismatch all ranks continue from the same sequence number: the next matching calls work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "core/coll_call.h"
#include "mixccl.h"

namespace mixccl {

struct CollContext;

// On the wire: 32 bytes per rank.
struct CollDescWire {
  uint32_t magic;
  int32_t kind;
  int32_t datatype;
  int32_t op;
  int32_t root;
  uint32_t seq;
  uint64_t count;
};
static_assert(sizeof(CollDescWire) == 32, "CollDescWire is part of the wire format");

// Compares a gathered table (one entry per rank). Returns mixcclSuccess when all agree;
// otherwise mixcclInvalidUsage with *message saying what differed ("mixcclAllReduce: rank 2
// called mixcclBroadcast (count 10, root 0) while rank 0 called mixcclAllReduce (count 12,
// op mixcclSum)"), and *nextSeq set to the sequence number every rank continues from.
Result compareCollDescs(const char* fn, const std::vector<CollDescWire>& all,
                        std::string* message, uint32_t* nextSeq);

// The check itself, collective over the communicator of ctx. *seq is the communicator's
// collective counter: advanced on success, resynchronised on a mismatch.
Result checkCollectiveMatches(CollContext& ctx, const CollCall& mine, uint32_t* seq);

}  // namespace mixccl
