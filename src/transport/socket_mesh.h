// Establishes the socket transport's connections: nsocks authenticated TCP connections between
// every pair of ranks. Higher ranks connect to lower ones while a helper thread accepts.
#pragma once

#include <cstdint>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"
#include "core/clock.h"
#include "core/result.h"

namespace mixccl {

struct MeshParams {
  int rank;
  int nranks;
  int nsocks;  // connections per peer; 0: automatic (see connectionsTo)
  uint64_t commHash;
  Secret secret;
};

// How many connections this rank keeps to peer.
int connectionsTo(const MeshParams& p, const std::vector<PeerInfo>& peers, int peer);

// conns[peer][i] is the i-th connection to peer (empty for peer == rank).
Result connectMesh(const Socket& listener, const MeshParams& params,
                   const std::vector<PeerInfo>& peers, const Deadline& deadline,
                   std::vector<std::vector<Socket>>* conns);

}  // namespace mixccl
