#include "core/connect_mode.h"

#include "base/error.h"
#include "core/comm_topology.h"

namespace mixccl {
namespace {

// Above this many ranks a full mesh costs more descriptors, memory and init time than a small
// job's latency gains from it (docs/scale.md).
constexpr int kEagerMaxRanks = 16;

const char* modeName(uint8_t mode) {
  return mode == kConnectEager ? "eager" : mode == kConnectLazy ? "lazy" : "auto";
}

// What decides the mode, from one rank's record or from the whole table.
struct ConnectFacts {
  uint8_t asked = kConnectAuto;  // the mode set explicitly (auto: nobody set one)
  int askedBy = -1;              // the rank that set it (-1: nobody)
  int rdmaBy = -1;               // a rank whose host has an active RDMA port (-1: none)
};

// The rule of agreeConnectMode over facts. why names other ranks through comm's peer table.
bool decideLazy(const Comm* comm, const ConnectFacts& f, std::string* why) {
  const int rank = comm->rank;
  const std::string& net = comm->config.netName;
  // Named after where this rank's own setting came from (MIXCCL_CONNECT or config.connect).
  const std::string source = f.askedBy < 0 || f.askedBy == rank ? comm->config.connectSource
                                                                  : std::string("MIXCCL_CONNECT");
  std::string asked = source + "=" + modeName(f.asked);
  if (f.askedBy >= 0 && f.askedBy != rank)
    asked += " (set on " + comm->peerName(f.askedBy) + ", not here)";
  if (f.asked == kConnectEager) {
    *why = asked;
    return false;
  }
  // Every transport name mixccl knows connects on first use; another one is connected at init
  // so that its own error comes from the transport registry.
  if (net != "auto" && net != "socket" && net != "shm" && net != "ucx" && net != "ofi") {
    *why = asked + ", but MIXCCL_NET=" + net + " connects at init";
    return false;
  }
  if (net == "auto" && f.rdmaBy >= 0) {
    *why = asked + ", but MIXCCL_NET=auto and " +
           (f.rdmaBy == rank ? std::string("this rank's host") : comm->peerName(f.rdmaBy) + "'s host") +
           " has an active RDMA port: every rank connects at init, since RDMA transports are "
           "planned from every rank's ports";
    return false;
  }
  if (f.asked == kConnectLazy) {
    *why = asked;
    return true;
  }
  const bool lazy = comm->nranks > kEagerMaxRanks;
  *why = asked + ": " + std::to_string(comm->nranks) + (lazy ? " ranks > " : " ranks <= ") +
         std::to_string(kEagerMaxRanks);
  return lazy;
}

}  // namespace

void describeConnectRequest(const Comm* comm, PeerInfo* mine) {
  const std::string& mode = comm->config.connect;
  if (mode != "auto" && mode != "eager" && mode != "lazy") {
    // Not an error yet: agreeConnectMode fails it on every rank once the table is exchanged.
    mine->connectAsked = kConnectInvalid;
    mine->lazyAlone = 0;
    mine->rdmaPort = 0;
    return;
  }
  ConnectFacts alone;
  alone.asked = mode == "eager" ? kConnectEager : mode == "lazy" ? kConnectLazy : kConnectAuto;
  alone.askedBy = alone.asked == kConnectAuto ? -1 : comm->rank;
  alone.rdmaBy = hostHasActiveRdmaPort(comm->rank) ? comm->rank : -1;
  std::string why;
  mine->connectAsked = alone.asked;
  mine->lazyAlone = decideLazy(comm, alone, &why) ? 1 : 0;
  mine->rdmaPort = alone.rdmaBy >= 0 ? 1 : 0;
}

Result agreeConnectMode(const Comm* comm, bool* lazy, std::string* why) {
  const std::vector<PeerInfo>& peers = comm->peers;
  const int rank = comm->rank;
  if (peers[rank].connectAsked == kConnectInvalid)
    return raiseError(mixcclInvalidArgument, "rank %d: MIXCCL_CONNECT='%s' is not one of auto, "
                      "eager, lazy", rank, comm->config.connect.c_str());
  for (int p = 0; p < (int)peers.size(); ++p)
    if (peers[p].connectAsked == kConnectInvalid)
      return raiseError(mixcclInvalidArgument, "rank %d: %s set MIXCCL_CONNECT to a value that is "
                        "not one of auto, eager, lazy (its own error names the value)", rank,
                        comm->peerName(p).c_str());
  ConnectFacts all;
  // This rank's own setting is the one its message starts from, else the first rank's that set one.
  if (peers[rank].connectAsked != kConnectAuto) all.askedBy = rank;
  for (int p = 0; p < (int)peers.size() && all.askedBy < 0; ++p)
    if (peers[p].connectAsked != kConnectAuto) all.askedBy = p;
  if (all.askedBy >= 0) all.asked = peers[all.askedBy].connectAsked;
  for (int p = 0; p < (int)peers.size(); ++p) {
    if (peers[p].rdmaPort && all.rdmaBy < 0) all.rdmaBy = p;
    const uint8_t theirs = peers[p].connectAsked;
    if (theirs != kConnectAuto && theirs != all.asked)
      return raiseError(mixcclInvalidUsage, "rank %d: %s set MIXCCL_CONNECT=%s but %s set "
                        "MIXCCL_CONNECT=%s: every rank of a communicator must connect its pairs "
                        "the same way (set MIXCCL_CONNECT alike wherever it is set)", rank,
                        comm->peerName(all.askedBy).c_str(), modeName(all.asked),
                        comm->peerName(p).c_str(), modeName(theirs));
  }
  *lazy = decideLazy(comm, all, why);
  return mixcclSuccess;
}

}  // namespace mixccl
