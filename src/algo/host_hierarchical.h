// Collectives for ranks that span hosts, in three steps: inside each host (shared memory, or
// whatever connects ranks of one host), among one leader per host (across hosts), inside each
// host again. Each host's data crosses the network once through its leader instead of once per
// rank, and a small AllReduce takes log2(ranks per host) + log2(hosts) + log2(ranks per host)
// rounds, of which only log2(hosts) cross hosts, each with one message per host.
// Buffers are host memory; every function returns once its ops are finished.
#pragma once

#include <cstddef>

#include "algo/algorithms.h"
#include "algo/transfers.h"
#include "base/result.h"
#include "mixccl.h"
#include "proxy/proxy.h"
#include "topology/domains.h"

namespace mixccl {

struct HostHierContext {
  const DomainMap& hosts;  // algo/host_map.h
  int rank;                // communicator rank
  Proxy& proxy;
  const Deadline& deadline;
  uint64_t stamp;          // the call stamp of the collective (algo/transfers.h)
  size_t chunkBytes;       // Tuning::chunkBytes
  size_t rhThresholdBytes; // Tuning::rhThresholdBytes
};

// Whether an AllReduce, Broadcast or Reduce of `bytes` runs host-hierarchically:
// MIXCCL_ALGO=ring|rd|rh forbids it, MIXCCL_ALGO=hierarchical-host forces it wherever the ranks
// span two hosts or more. Otherwise (auto) the ranks must span two hosts or more with two
// ranks or more on some host (with one rank per host the leaders are all the ranks: nothing to
// save), and either
//  - bytes >= MIXCCL_RD_THRESHOLD: each host's data crosses between hosts once, through its
//    leader, where the flat ring or recursive halving sends every rank's share across; or
//  - more than kHostHierSmallMinRanks ranks: the flat recursive doubling's log2(n) rounds
//    send a message per rank across hosts in each of its log2(hosts) cross-host rounds, the
//    hierarchy one per host, for log2(ranks per host) more rounds inside hosts. Measured on
//    the namespace testbed (docs/scale.md, "Across hosts"): 8 bytes took half the flat time
//    at 16 hosts x 4 ranks, the same at 4 x 4 and three times as long at 2 x 2.
// The map is the same on every rank, so every rank decides alike.
constexpr int kHostHierSmallMinRanks = 16;
bool useHostHierarchy(const DomainMap& hosts, size_t bytes);

// Reduce to each host's first rank (binomial tree below MIXCCL_RD_THRESHOLD, else the
// pipelined chain), AllReduce among those leaders (recursive doubling for small messages,
// recursive halving or the ring above, by chooseAllReduceAlgo over the number of hosts),
// broadcast from each leader in its host (tree or chain as the reduce). Every rank receives
// its leader's bytes, so every rank holds the same bits. Avg: Sum, divided by the
// communicator's rank count once, by the leaders.
Result hostHierarchicalAllReduce(const HostHierContext& h, const void* sendbuf, void* recvbuf,
                                 size_t count, mixcclDataType_t type, mixcclRedOp_t op);

// The root leads its host: broadcast among the leaders from the root, then in each host.
Result hostHierarchicalBroadcast(const HostHierContext& h, const void* sendbuf, void* recvbuf,
                                 size_t count, mixcclDataType_t type, int root);

// The root leads its host: reduce in each host to its leader, then among the leaders to the
// root. Avg: Sum, divided by the communicator's rank count once, by the root.
Result hostHierarchicalReduce(const HostHierContext& h, const void* sendbuf, void* recvbuf,
                              size_t count, mixcclDataType_t type, mixcclRedOp_t op, int root);

}  // namespace mixccl
