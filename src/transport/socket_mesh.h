// Establishes the authenticated TCP connections between every pair of ranks: the pair's control
// connection (index 0, the proxy's liveness channel) and the socket transport's data
// connections after it. Higher ranks connect to lower ones while a helper thread accepts.
#pragma once

#include <cstdint>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

struct MeshParams {
  int rank;
  int nranks;
  int nsocks;  // connections per peer; 0: automatic (see connectionsTo)
  uint64_t commHash;
  Secret secret;
  // SO_SNDBUF / SO_RCVBUF of same-host connections, 0: the kernel's autotuning (a
  // communicator passes its Tuning::socketBufferBytes, algo/tuning.h).
  int socketBufferBytes = 4 << 20;
};

// How many data connections this rank keeps to peer (the control connection comes on top).
int connectionsTo(const MeshParams& p, const std::vector<PeerInfo>& peers, int peer);

// conns[peer][0] is the control connection to peer, conns[peer][1..] its data connections
// (empty for peer == rank).
Result connectMesh(const Socket& listener, const MeshParams& params,
                   const std::vector<PeerInfo>& peers, const Deadline& deadline,
                   std::vector<std::vector<Socket>>* conns);

}  // namespace mixccl
