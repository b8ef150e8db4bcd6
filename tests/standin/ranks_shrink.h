// Surviving a lost rank on the nccl adaptor (docs/reliability.md, "Surviving a lost rank"):
// the last rank of the job is killed (SIGKILL) while the others are inside an AllReduce; the
// survivors get an error naming it, shrink with MIXCCL_SHRINK_ABORT (the native communicator
// aborted first, then formed again for the survivors' domain) and their collectives on the new
// communicator are exact. Which domain loses the rank follows from the adaptors of the run: all
// nccl (the nccl domain shrinks), nccl beside host and gloo, or the only nccl rank (the nccl
// domain disappears).
//   shrink   the suite's name in nccl_ranks_test
#pragma once

#include "mixccl.h"
#include "ranks_buffers.h"

namespace ranks_test {

// The rank the suite kills: the last one.
inline int shrinkVictim(int nranks) { return nranks - 1; }
long runShrink(mixcclComm_t comm, RankBuffers& buffers, int rank, int nranks);

}  // namespace ranks_test
