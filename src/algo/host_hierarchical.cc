#include "algo/host_hierarchical.h"

#include <vector>

#include "algo/reduce.h"
#include "base/env.h"

namespace mixccl {
namespace {

// The ranks of one step: this rank's host, or the leaders of all hosts. Transfers maps the
// step's indices to communicator ranks.
struct Group {
  std::vector<int> members;
  int index;  // this rank's position in members
};

Group hostGroup(const HostHierContext& h) {
  const int host = h.hosts.domainOf[h.rank];
  return Group{h.hosts.domains[host].ranks, h.hosts.indexInDomain[h.rank]};
}

// One leader per host, in host order: the root on the root's host (-1: none), else the host's
// first rank. index is -1 on a rank that leads no host.
Group leaderGroup(const HostHierContext& h, int root) {
  Group g{{}, -1};
  for (size_t host = 0; host < h.hosts.domains.size(); ++host) {
    const bool rootsHost = root >= 0 && h.hosts.domainOf[root] == (int)host;
    int leader = rootsHost ? root : h.hosts.domains[host].ranks[0];
    if (leader == h.rank) g.index = (int)g.members.size();
    g.members.push_back(leader);
  }
  return g;
}

// The index in this rank's host of the host's leader.
int leaderIndexInHost(const HostHierContext& h, const Group& leaders) {
  return h.hosts.indexInDomain[leaders.members[h.hosts.domainOf[h.rank]]];
}

// Below MIXCCL_RD_THRESHOLD the binomial tree, also for two ranks (one message each way, where
// the chain took 4-10x the time of the whole flat AllReduce at 8 bytes on the testbed's
// 2-rank hosts).
bool smallForTree(size_t bytes) { return bytes < env().rdThresholdBytes; }

Result treeOrChainReduce(CollContext& c, const void* in, void* out, size_t count,
                         mixcclDataType_t type, mixcclRedOp_t op, int root) {
  if (smallForTree(count * dataTypeSize(type)))
    return binomialTreeReduce(c, in, out, count, type, op, root);
  return chainReduce(c, in, out, count, type, op, root);
}

Result treeOrChainBroadcast(CollContext& c, const void* in, void* out, size_t count,
                            mixcclDataType_t type, int root) {
  if (smallForTree(count * dataTypeSize(type)))
    return binomialTreeBroadcast(c, in, out, count, type, root);
  return chainBroadcast(c, in, out, count, type, root);
}

Result flatAllReduce(CollContext& c, void* buf, size_t count, mixcclDataType_t type,
                     mixcclRedOp_t op) {
  switch (chooseAllReduceAlgo(count * dataTypeSize(type), c.nranks, c.rhThresholdBytes)) {
    case AllReduceAlgo::Ring: return ringAllReduce(c, buf, buf, count, type, op);
    case AllReduceAlgo::RecursiveHalving: return recursiveHalvingAllReduce(c, buf, buf, count, type, op);
    default: return recursiveDoublingAllReduce(c, buf, buf, count, type, op);
  }
}

// Runs fn over the group's ranks and waits for all its ops.
template <typename Fn>
Result inGroup(const HostHierContext& h, const Group& g, Fn fn) {
  Transfers t(h.proxy, h.deadline, g.members);
  t.setStamp(h.stamp);
  CollContext c{g.index, (int)g.members.size(), t, h.chunkBytes, h.rhThresholdBytes};
  Result r = fn(c);
  Result w = t.waitAll();
  return r != mixcclSuccess ? r : w;
}

mixcclRedOp_t sumForAvg(mixcclRedOp_t op) { return op == mixcclAvg ? mixcclSum : op; }

}  // namespace

bool useHostHierarchy(const DomainMap& hosts) {
  const std::string& forced = env().algo;
  if (forced == "ring" || forced == "rd" || forced == "rh") return false;
  if (hosts.domains.size() < 2) return false;
  if (forced == "hierarchical-host") return true;
  for (const Domain& host : hosts.domains)
    if (host.ranks.size() >= 2) return true;
  return false;
}

Result hostHierarchicalAllReduce(const HostHierContext& h, const void* sendbuf, void* recvbuf,
                                 size_t count, mixcclDataType_t type, mixcclRedOp_t op) {
  if (count == 0) return mixcclSuccess;
  const Group local = hostGroup(h), leaders = leaderGroup(h, -1);
  const mixcclRedOp_t sum = sumForAvg(op);
  // The leader is the host's first rank (index 0): it accumulates in recvbuf.
  MIXCCL_CHECK(inGroup(h, local, [&](CollContext& c) {
    return treeOrChainReduce(c, sendbuf, recvbuf, count, type, sum, 0);
  }));
  if (leaders.index >= 0) {
    MIXCCL_CHECK(inGroup(h, leaders, [&](CollContext& c) {
      return flatAllReduce(c, recvbuf, count, type, sum);
    }));
    if (op == mixcclAvg) divideBy(recvbuf, count, type, (int)h.hosts.domainOf.size());
  }
  return inGroup(h, local, [&](CollContext& c) {
    return treeOrChainBroadcast(c, recvbuf, recvbuf, count, type, 0);
  });
}

Result hostHierarchicalBroadcast(const HostHierContext& h, const void* sendbuf, void* recvbuf,
                                 size_t count, mixcclDataType_t type, int root) {
  if (count == 0) return mixcclSuccess;
  const Group local = hostGroup(h), leaders = leaderGroup(h, root);
  if (leaders.index >= 0) {
    const int rootIndex = h.hosts.domainOf[root];  // leaders are in host order
    MIXCCL_CHECK(inGroup(h, leaders, [&](CollContext& c) {
      return treeOrChainBroadcast(c, sendbuf, recvbuf, count, type, rootIndex);
    }));
  }
  const int leaderIndex = leaderIndexInHost(h, leaders);
  return inGroup(h, local, [&](CollContext& c) {
    return treeOrChainBroadcast(c, recvbuf, recvbuf, count, type, leaderIndex);
  });
}

Result hostHierarchicalReduce(const HostHierContext& h, const void* sendbuf, void* recvbuf,
                              size_t count, mixcclDataType_t type, mixcclRedOp_t op, int root) {
  if (count == 0) return mixcclSuccess;
  const Group local = hostGroup(h), leaders = leaderGroup(h, root);
  const mixcclRedOp_t sum = sumForAvg(op);
  // A leader other than the root keeps its host's partial in a buffer of its own (recvbuf is
  // the root's only).
  std::vector<char> partial;
  void* acc = recvbuf;
  if (leaders.index >= 0 && h.rank != root) {
    partial.resize(count * dataTypeSize(type));
    acc = partial.data();
  }
  const int leaderIndex = leaderIndexInHost(h, leaders);
  MIXCCL_CHECK(inGroup(h, local, [&](CollContext& c) {
    return treeOrChainReduce(c, sendbuf, acc, count, type, sum, leaderIndex);
  }));
  if (leaders.index < 0) return mixcclSuccess;
  const int rootIndex = h.hosts.domainOf[root];
  MIXCCL_CHECK(inGroup(h, leaders, [&](CollContext& c) {
    return treeOrChainReduce(c, acc, acc, count, type, sum, rootIndex);
  }));
  if (h.rank == root && op == mixcclAvg)
    divideBy(recvbuf, count, type, (int)h.hosts.domainOf.size());
  return mixcclSuccess;
}

}  // namespace mixccl
