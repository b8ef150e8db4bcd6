// Argument checks of the public calls. Each returns mixcclInvalidArgument/InvalidUsage with a
// message naming the call and the argument, before anything is sent.
#pragma once

#include <cstddef>

#include "core/coll_call.h"
#include "core/comm.h"

namespace mixccl {

Result checkDataType(const char* fn, mixcclDataType_t type);
Result checkRedOp(const char* fn, mixcclRedOp_t op);
Result checkRank(const char* fn, const char* what, int r, int nranks);
Result checkStream(const char* fn, mixcclStream_t stream);
// Buffer of count*multiplier elements of type: not NULL unless empty, byte size not overflowing.
Result checkBuffer(const char* fn, const char* what, const void* buf, size_t count,
                   size_t multiplier, mixcclDataType_t type, size_t* bytes);
// The communicator is usable for new work.
Result checkCommUsable(const char* fn, Comm* comm);
// What every call checks first: a usable communicator, a valid datatype, and a NULL stream
// unless the rank's adaptor has device memory (its work is ordered on the caller's stream).
Result checkCommonArgs(const char* fn, Comm* comm, mixcclDataType_t type, mixcclStream_t stream);
// Every argument of a collective call, in the order its kind's record asks for: the common
// checks, the op where the kind reduces, the root where it has one, then each buffer this rank
// holds at its size (messages name the call by its entry point, e.g. "mixcclGather: ...").
Result checkCollArgs(Comm* comm, const CollCall& call);

}  // namespace mixccl
