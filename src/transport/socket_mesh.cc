#include "transport/socket_mesh.h"

#include <poll.h>

#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/auth_connect.h"
#include "bootstrap/handshake_server.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/same_host_tuning.h"

namespace mixccl {
namespace {

constexpr uint32_t kConnMagic = 0x4e4e4f43;  // "CONN"

struct ConnHello {
  uint32_t magic;
  int32_t rank;
  uint64_t commHash;
  int32_t sockIndex;
  int32_t nsocks;
};

}  // namespace

int connectionsTo(const MeshParams& p, const std::vector<PeerInfo>& peers, int peer) {
  if (p.nsocks > 0) return p.nsocks;
  // Automatic: on one host several connections only compete for the same cores (measured:
  // one connection is 10-50% faster on loopback); across hosts two keep a link busier.
  return peers[peer].hostHash == peers[p.rank].hostHash ? 1 : 2;
}

namespace {

// Every pair has its control connection (index 0) and then the data connections.
int meshConnectionsTo(const MeshParams& p, const std::vector<PeerInfo>& peers, int peer) {
  return 1 + connectionsTo(p, peers, peer);
}

// Checks the hello of an authenticated connection: a rank above ours, a socket index, and this
// communicator. Returns the rank and index it claims on success.
bool checkConnHello(const HandshakeServer::Arrival& a, const MeshParams& p,
                    const std::vector<PeerInfo>& peers, int* rank, int* index) {
  ConnHello hello;
  memcpy(&hello, a.hello.data(), sizeof(hello));
  if (hello.magic != kConnMagic || hello.commHash != p.commHash || hello.rank <= p.rank ||
      hello.rank >= p.nranks || hello.nsocks != meshConnectionsTo(p, peers, hello.rank) ||
      hello.sockIndex < 0 || hello.sockIndex >= hello.nsocks) {
    raiseError(mixcclRemoteError, "rank %d: refused connection from %s: unexpected hello "
               "(rank %d, socket %d)", p.rank, a.peer.toString().c_str(), hello.rank,
               hello.sockIndex);
    return false;
  }
  *rank = hello.rank;
  *index = hello.sockIndex;
  return true;
}

// Accepts every connection from higher ranks. One loop serves every handshake at once
// (handshake_server.h), so neither a stranger that connects and says nothing nor a flood of
// them holds up the ranks or costs a thread; once every expected connection is in, those still
// in their handshake (strangers) are cut. A stranger is refused or dropped and does not count.
Result acceptFromHigherRanks(const Socket& listener, const MeshParams& p,
                             const std::vector<PeerInfo>& peers, const Deadline& deadline,
                             std::vector<std::vector<Socket>>* conns) {
  int expected = 0;
  for (int r = p.rank + 1; r < p.nranks; ++r) expected += meshConnectionsTo(p, peers, r);
  HandshakeServer server(listener, p.secret, sizeof(ConnHello), "rank " + std::to_string(p.rank));
  int accepted = 0;
  while (accepted < expected) {
    if (deadline.expired()) {
      std::string strangers = server.strangerReport();
      return raiseError(mixcclTimeout,
                        "rank %d: only %d of %d transport connections from higher ranks "
                        "arrived in time%s%s", p.rank, accepted, expected,
                        strangers.empty() ? "" : "; meanwhile it ", strangers.c_str());
    }
    std::vector<pollfd> none;
    std::vector<HandshakeServer::Arrival> arrivals;
    MIXCCL_CHECK(server.serve(&none, deadline.remainingMs(100), &arrivals));
    for (HandshakeServer::Arrival& a : arrivals) {
      int rank = -1, index = -1;
      if (!checkConnHello(a, p, peers, &rank, &index)) continue;
      if ((*conns)[rank][index].valid()) {
        raiseError(mixcclRemoteError, "rank %d: refused a second connection claiming rank %d "
                                      "socket %d", p.rank, rank, index);
        continue;
      }
      (*conns)[rank][index] = std::move(a.conn);
      ++accepted;
    }
  }
  server.cutPending();
  return mixcclSuccess;
}

Result connectToLowerRanks(const MeshParams& p, const std::vector<PeerInfo>& peers,
                           const Deadline& deadline, std::vector<std::vector<Socket>>* conns) {
  for (int peer = 0; peer < p.rank; ++peer) {
    SocketAddress addr;
    MIXCCL_CHECK(fromWire(peers[peer].listenAddr, &addr));
    std::string what = describePeer(peers, peer) + " at " + addr.toString();
    const int nsocks = meshConnectionsTo(p, peers, peer);
    for (int i = 0; i < nsocks; ++i) {
      Socket conn;
      MIXCCL_CHECK(connectAuthenticated(addr, p.secret, deadline, what.c_str(), &conn));
      ConnHello hello{kConnMagic, p.rank, p.commHash, i, nsocks};
      MIXCCL_CHECK(sendAllBefore(conn, &hello, sizeof(hello), deadline, what.c_str()));
      (*conns)[peer][i] = std::move(conn);
    }
  }
  return mixcclSuccess;
}

}  // namespace

Result connectMesh(const Socket& listener, const MeshParams& params,
                   const std::vector<PeerInfo>& peers, const Deadline& deadline,
                   std::vector<std::vector<Socket>>* conns) {
  conns->clear();
  conns->resize(params.nranks);
  for (int r = 0; r < params.nranks; ++r)
    if (r != params.rank) (*conns)[r].resize(meshConnectionsTo(params, peers, r));
  Result acceptResult = mixcclSuccess;
  std::string acceptError;
  std::thread acceptor([&] {
    setLogRank(params.rank);
    acceptResult = acceptFromHigherRanks(listener, params, peers, deadline, conns);
    if (acceptResult != mixcclSuccess) acceptError = threadLastError();
  });
  Result connectResult = connectToLowerRanks(params, peers, deadline, conns);
  acceptor.join();
  MIXCCL_CHECK(connectResult);
  if (acceptResult != mixcclSuccess) {
    // Carry the acceptor thread's message to this thread's last error.
    return adoptError(acceptResult, acceptError);
  }
  tuneSameHostConnections(params.rank, peers, params.socketBufferBytes, conns);
  INFO(kLogInit | kLogNet, "rank %d: connected to %d peers (MIXCCL_NSOCKS_PERPEER=%d, 0: auto)",
       params.rank, params.nranks - 1, params.nsocks);
  return mixcclSuccess;
}

}  // namespace mixccl
