// The collective matrix on a rank's own buffers (device memory on the nccl adaptor): every
// collective, every datatype, every reduction op, counts 0, 1, a prime and one that takes
// several chunks, in and out of place, Send/Recv in a group (a ring and a send to self);
// every result compared bit for bit with a host reference computed in double from inputs that
// every datatype holds exactly (fp8 included) and that differ from rank to rank.
#pragma once

#include "mixccl.h"
#include "ranks_buffers.h"

namespace ranks_test {

struct MatrixTally {
  long checks = 0, failures = 0;
};

// sendRecv: also Send/Recv in a group (a ring and a send to self).
MatrixTally runMatrix(mixcclComm_t comm, RankBuffers& buffers, int rank, int nranks, bool quick,
                      bool sendRecv);

}  // namespace ranks_test
