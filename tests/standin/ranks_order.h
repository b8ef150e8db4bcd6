// Stream order on the nccl adaptor: a collective enqueued behind a stream operation that is
// still blocked returns at once, does not start before that operation (its event stays
// incomplete and its buffer untouched, read through a second stream), and the caller's stream
// sees the result once it is synchronised; then two in-place AlltoAlls on two streams, the
// first held, both right (on the native path they share a scratch buffer). Host ranks of a
// mixed job take part with the NULL stream (their call returns when the result is there).
#pragma once

#include "mixccl.h"
#include "ranks_buffers.h"

namespace ranks_test {

long runStreamOrder(mixcclComm_t comm, RankBuffers& buffers, int rank, int nranks);

}  // namespace ranks_test
