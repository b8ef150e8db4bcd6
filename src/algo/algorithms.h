// The collective algorithms of the host path, each a short sequence of sends, receives and
// reductions over Transfers. Buffers are host memory; counts are elements; every function
// returns only when its ops are finished.
#pragma once

#include <cstddef>

#include "algo/transfers.h"
#include "base/result.h"
#include "mixccl.h"

namespace mixccl {

struct CollContext {
  int rank;
  int nranks;
  Transfers& transfers;
  size_t chunkBytes;  // pipelining unit (Tuning::chunkBytes: the same on every rank)
  // runFlat's threshold between the recursive algorithms and the ring
  // (Tuning::rhThresholdBytes); only runFlat reads it, 0 keeps the ring.
  size_t rhThresholdBytes = 0;
};

Result ringAllReduce(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                     mixcclDataType_t type, mixcclRedOp_t op);
Result recursiveDoublingAllReduce(CollContext& c, const void* sendbuf, void* recvbuf,
                                  size_t count, mixcclDataType_t type, mixcclRedOp_t op);
// Power-of-two nranks only.
Result recursiveHalvingAllReduce(CollContext& c, const void* sendbuf, void* recvbuf,
                                 size_t count, mixcclDataType_t type, mixcclRedOp_t op);
// Power-of-two nranks only.
Result recursiveDoublingAllGather(CollContext& c, const void* sendbuf, void* recvbuf,
                                  size_t count, mixcclDataType_t type);
Result ringAllGather(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                     mixcclDataType_t type);
Result ringReduceScatter(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                         mixcclDataType_t type, mixcclRedOp_t op);
Result chainBroadcast(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                      mixcclDataType_t type, int root);
Result chainReduce(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                   mixcclDataType_t type, mixcclRedOp_t op, int root);
// Binomial trees: ceil(log2 n) rounds of whole messages (binomial_tree.cc).
Result binomialTreeBroadcast(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                             mixcclDataType_t type, int root);
Result binomialTreeReduce(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                          mixcclDataType_t type, mixcclRedOp_t op, int root);
// Broadcast and Reduce of bytes: the binomial tree below MIXCCL_RD_THRESHOLD with more than two
// ranks (MIXCCL_ALGO=ring keeps the chain), else the pipelined chain.
bool useBinomialTree(size_t bytes, int nranks);
Result pairwiseAlltoAll(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                        mixcclDataType_t type);
Result directGather(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                    mixcclDataType_t type, int root);
Result directScatter(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                     mixcclDataType_t type, int root);

enum class AllReduceAlgo { Ring, RecursiveDoubling, RecursiveHalving };
// MIXCCL_ALGO=ring|rd|rh forces one (rh: power-of-two rank counts only); otherwise messages
// below MIXCCL_RD_THRESHOLD bytes take recursive doubling (log2 n latency steps), power-of-two
// rank counts >= 4 recursive halving below rhThresholdBytes (the communicator's
// Tuning::rhThresholdBytes: MIXCCL_RH_THRESHOLD or derived, the same on every rank), and the
// rest the bandwidth-optimal ring.
AllReduceAlgo chooseAllReduceAlgo(size_t bytes, int nranks, size_t rhThresholdBytes);
// The MIXCCL_ALGO spelling of algo: "ring", "rd" or "rh".
const char* allReduceAlgoName(AllReduceAlgo algo);
// AllGather of totalBytes (all blocks): recursive doubling for power-of-two rank counts >= 4
// below rhThresholdBytes (as above), else the ring; MIXCCL_ALGO=ring forces the ring, rh
// recursive doubling (power-of-two rank counts).
bool useRecursiveDoublingAllGather(size_t totalBytes, int nranks, size_t rhThresholdBytes);

}  // namespace mixccl
