#include "core/peer_agreement.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "algo/host_map.h"
#include "base/env.h"
#include "base/error.h"

namespace mixccl {

void describeAgreedSettings(const Comm* comm, PeerInfo* mine) {
  snprintf(mine->net, sizeof(mine->net), "%s", comm->config.netName.c_str());
  mine->hierHostsHash = hostSplitHash(env().hierHosts);
}

Result checkAgreedSettings(const Comm* comm) {
  const std::vector<PeerInfo>& peers = comm->peers;
  const int rank = comm->rank;
  // The same message the eager handshake gives (transport/net_choice.h), naming the first peer
  // that asked for another transport.
  const std::string& net = comm->config.netName;
  for (int p = 0; p < (int)peers.size(); ++p) {
    const std::string theirs(peers[p].net, strnlen(peers[p].net, sizeof(peers[p].net)));
    if (p != rank && theirs != net)
      return raiseError(mixcclInvalidUsage, "rank %d asked for transport '%s' (%s) but %s asked "
                        "for '%s': every rank of a communicator must ask for the same transport "
                        "(MIXCCL_NET / config.netName)", rank, net.c_str(),
                        comm->config.netSource.c_str(), comm->peerName(p).c_str(), theirs.c_str());
  }
  std::vector<uint64_t> hashes;
  std::vector<std::string> names;
  for (int p = 0; p < (int)peers.size(); ++p) {
    hashes.push_back(peers[p].hierHostsHash);
    names.push_back(comm->peerName(p));
  }
  return checkHostSplitAgreed(rank, env().hierHosts, hashes, names);
}

}  // namespace mixccl
