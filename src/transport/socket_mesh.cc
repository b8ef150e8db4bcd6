#include "transport/socket_mesh.h"

#include <sys/socket.h>

#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "bootstrap/auth_connect.h"
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

// Checks one incoming connection: authentication, then a hello naming a rank above ours, a
// socket index, and this communicator. Returns the rank and index it claims on success.
bool admitConnection(const Socket& conn, const SocketAddress& from, const MeshParams& p,
                     const std::vector<PeerInfo>& peers, const Deadline& deadline, int* rank,
                     int* index) {
  std::string what = "connection from " + from.toString();
  Deadline hs = Deadline::afterSeconds(5);
  if (hs.at() > deadline.at()) hs = deadline;
  if (authenticateServer(conn, p.secret, hs, what.c_str()) != mixcclSuccess) return false;
  ConnHello hello;
  if (recvAllBefore(conn, &hello, sizeof(hello), hs, what.c_str()) != mixcclSuccess) return false;
  if (hello.magic != kConnMagic || hello.commHash != p.commHash || hello.rank <= p.rank ||
      hello.rank >= p.nranks || hello.nsocks != meshConnectionsTo(p, peers, hello.rank) ||
      hello.sockIndex < 0 || hello.sockIndex >= hello.nsocks) {
    raiseError(mixcclRemoteError, "rank %d: refused %s: unexpected hello (rank %d, socket %d)",
               p.rank, what.c_str(), hello.rank, hello.sockIndex);
    return false;
  }
  *rank = hello.rank;
  *index = hello.sockIndex;
  return true;
}

// Accepts every connection from higher ranks. Each handshake runs on its own thread, so a
// stranger who connects and says nothing cannot hold up the ranks behind it; once every
// expected connection is in, handshakes still running (strangers) are cut short. A stranger
// is refused, logged, and does not count.
Result acceptFromHigherRanks(const Socket& listener, const MeshParams& p,
                             const std::vector<PeerInfo>& peers, const Deadline& deadline,
                             std::vector<std::vector<Socket>>* conns) {
  int expected = 0;
  for (int r = p.rank + 1; r < p.nranks; ++r) expected += meshConnectionsTo(p, peers, r);
  std::mutex mu;
  int accepted = 0;
  std::set<int> handshaking;  // fds of connections whose handshake is running
  std::vector<std::thread> workers;
  Result result = mixcclSuccess;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (accepted == expected) break;
    }
    if (deadline.expired()) {
      std::lock_guard<std::mutex> lock(mu);
      result = raiseError(mixcclTimeout,
                          "rank %d: only %d of %d transport connections from higher ranks "
                          "arrived in time", p.rank, accepted, expected);
      break;
    }
    Socket conn;
    SocketAddress from;
    Deadline slice = Deadline::afterSeconds(0.05);
    Result r = acceptBefore(listener, slice.at() < deadline.at() ? slice : deadline, &conn, &from);
    if (r == mixcclTimeout) continue;
    if (r != mixcclSuccess) {
      result = r;
      break;
    }
    const int fd = conn.fd();
    {
      std::lock_guard<std::mutex> lock(mu);
      handshaking.insert(fd);
    }
    workers.emplace_back([&, fd, from, c = std::move(conn)]() mutable {
      setLogRank(p.rank);
      int rank = -1, index = -1;
      bool ok = admitConnection(c, from, p, peers, deadline, &rank, &index);
      std::lock_guard<std::mutex> lock(mu);
      handshaking.erase(fd);  // before c closes, so the cut below never hits a reused fd
      if (!ok) return;
      if ((*conns)[rank][index].valid()) {
        raiseError(mixcclRemoteError, "rank %d: refused a second connection claiming rank %d "
                                      "socket %d", p.rank, rank, index);
        return;
      }
      (*conns)[rank][index] = std::move(c);
      ++accepted;
    });
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    for (int fd : handshaking) ::shutdown(fd, SHUT_RDWR);
  }
  for (std::thread& w : workers) w.join();
  return result;
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
