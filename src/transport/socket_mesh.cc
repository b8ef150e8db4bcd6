#include "transport/socket_mesh.h"

#include <cstring>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/log.h"

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

std::string peerName(const std::vector<PeerInfo>& peers, int r) {
  return "rank " + std::to_string(r) + " (" + std::string(peers[r].hostname, strnlen(peers[r].hostname, sizeof(peers[r].hostname))) + ")";
}

// Accepts every connection from higher ranks; a stranger (bad secret, bad hello) is refused,
// logged, and does not count.
Result acceptFromHigherRanks(const Socket& listener, const MeshParams& p,
                             const std::vector<PeerInfo>& peers, const Deadline& deadline,
                             std::vector<std::vector<Socket>>* conns) {
  int expected = 0;
  for (int r = p.rank + 1; r < p.nranks; ++r) expected += connectionsTo(p, peers, r);
  int accepted = 0;
  while (accepted < expected) {
    Socket conn;
    SocketAddress from;
    Result r = acceptBefore(listener, deadline, &conn, &from);
    if (r == mixcclTimeout)
      return raiseError(mixcclTimeout,
                        "rank %d: only %d of %d transport connections from higher ranks arrived "
                        "in time", p.rank, accepted, expected);
    MIXCCL_CHECK(r);
    std::string what = "connection from " + from.toString();
    Deadline hs = Deadline::afterSeconds(5);
    if (hs.at() > deadline.at()) hs = deadline;
    if (authenticateServer(conn, p.secret, hs, what.c_str()) != mixcclSuccess) continue;
    ConnHello hello;
    if (recvAllBefore(conn, &hello, sizeof(hello), hs, what.c_str()) != mixcclSuccess) continue;
    if (hello.magic != kConnMagic || hello.commHash != p.commHash || hello.rank <= p.rank ||
        hello.rank >= p.nranks || hello.nsocks != connectionsTo(p, peers, hello.rank) ||
        hello.sockIndex < 0 || hello.sockIndex >= hello.nsocks ||
        (*conns)[hello.rank][hello.sockIndex].valid()) {
      raiseError(mixcclRemoteError, "rank %d: refused %s: unexpected hello (rank %d, socket %d)",
                 p.rank, what.c_str(), hello.rank, hello.sockIndex);
      continue;
    }
    (*conns)[hello.rank][hello.sockIndex] = std::move(conn);
    ++accepted;
  }
  return mixcclSuccess;
}

Result connectToLowerRanks(const MeshParams& p, const std::vector<PeerInfo>& peers,
                           const Deadline& deadline, std::vector<std::vector<Socket>>* conns) {
  for (int peer = 0; peer < p.rank; ++peer) {
    SocketAddress addr;
    MIXCCL_CHECK(fromWire(peers[peer].listenAddr, &addr));
    std::string what = peerName(peers, peer) + " at " + addr.toString();
    const int nsocks = connectionsTo(p, peers, peer);
    for (int i = 0; i < nsocks; ++i) {
      Socket conn;
      MIXCCL_CHECK(connectBefore(addr, deadline, &conn));
      MIXCCL_CHECK(authenticateClient(conn, p.secret, deadline, what.c_str()));
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
    if (r != params.rank) (*conns)[r].resize(connectionsTo(params, peers, r));
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
  INFO(kLogInit | kLogNet, "rank %d: connected to %d peers (MIXCCL_NSOCKS_PERPEER=%d, 0: auto)",
       params.rank, params.nranks - 1, params.nsocks);
  return mixcclSuccess;
}

}  // namespace mixccl
