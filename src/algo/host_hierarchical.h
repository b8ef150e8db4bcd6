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

// Whether AllReduce, Broadcast and Reduce run host-hierarchically: MIXCCL_ALGO=ring|rd|rh
// forbids it, MIXCCL_ALGO=hierarchical-host forces it wherever the ranks span two hosts or more.
// Otherwise (auto) wherever the ranks span two hosts or more with two ranks or more on some
// host, at every size: each host's data then crosses between hosts once, through its leader,
// where the flat recursive doubling, halving or ring sends every rank's share across (3x
// faster at 1 MiB over 200 Mbit/s links), and a small message pays log2(ranks per host) more
// rounds inside hosts against one message per host instead of one per rank in each round
// across (as fast as the flat recursive doubling at 2 hosts x 2 ranks on the namespace
// testbed, twice as fast at 16 x 4: docs/scale.md, "Across hosts"). With one rank per host
// the leaders are all the ranks: nothing to save. The map is the same on every rank, so
// every rank decides alike.
bool useHostHierarchy(const DomainMap& hosts);

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
