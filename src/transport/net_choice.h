// Which transport carries each pair of ranks (MIXCCL_NET / config.netName):
//   auto (default)  same host: shm; other hosts: ucx when both ranks have an active RDMA port
//                   and a build with ucx (next: ofi), else socket;
//   socket, ucx     that transport for EVERY pair, same-host ones included;
//   shm             shm within a host, socket across hosts (shared memory cannot cross hosts).
// Both ranks of a pair must ask for the same name: each rank tells every peer what it asked
// for over the pair's authenticated control connection before anything is connected, and a
// difference is an error naming both ranks and both names. A named transport this build lacks
// or that cannot start is an error naming it, never a silent fallback.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"

namespace mixccl {

// Whether this build has the transport name (auto, socket and shm always; ucx with
// MIXCCL_WITH_UCX).
bool netBuilt(const std::string& name);
// The names MIXCCL_NET accepts in this build, "auto, socket, shm, ucx", for messages.
std::string netNamesBuilt();
// Whether name is a transport mixccl knows at all (built or not), so that an unbuilt one gets
// "not built" rather than "unknown".
bool netKnown(const std::string& name);

struct NetRequest {
  std::string name = "auto";    // what this rank asked for
  std::string source = "default";  // "MIXCCL_NET", "config.netName" or "default"
  bool rdma = false;            // this host has an active RDMA port (topology)
};

struct PairChoice {
  std::string net;  // "shm", "ucx", "socket" (the plan; shm may still decline, see registry.h)
  std::string why;  // one readable reason, for INFO, mixcclCommInspect and the topology dump
};

// The plan of one pair from what both ranks said (agreeOnNet calls it once they agree on name).
// source: where the name came from (for why); bothRdma / bothUcx / bothOfi: both ranks have an
// active RDMA port / a build with ucx / with ofi. auto prefers ucx over ofi.
PairChoice planPair(const std::string& name, const std::string& source, bool sameHost,
                    bool bothRdma, bool bothUcx, bool bothOfi = false);

// Tells every peer what this rank asked for and reads theirs (over conns[p][0], blocking,
// bounded), then plans each pair. (*out)[rank] stays empty.
Result agreeOnNet(int rank, uint64_t commHash, const std::vector<PeerInfo>& peers,
                  const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                  const NetRequest& mine, std::vector<PairChoice>* out);

}  // namespace mixccl
