// Connections on demand (MIXCCL_CONNECT=lazy): a pair of ranks connects the first time one of
// them posts a send or receive to the other (an algorithm's neighbour, a Send/Recv peer), not at
// init, so a rank holds as many connections as its algorithms use.
//
// Either rank of a pair may dial, at any time, on the same authenticated listener and handshake
// as at init (bootstrap/handshake_server.h), so a late connection is as safe as an early one.
// Each rank's acceptor thread answers dials without its proxy: a rank busy elsewhere (or idle)
// still completes its side, so dials never wait on each other in a cycle. When both ranks dial
// at once, the lower rank's dial wins: the lower rank refuses the higher one's ("crossing"), and
// the higher rank then takes the pair its acceptor built from the lower rank's dial.
//
// A pair is its control connection (index 0), then the data transport: shared memory when both
// ranks share a host and want it (no data socket); UCX or libfabric when MIXCCL_NET names them
// (no data socket: their addresses and keys go over the control connection, and the endpoint is
// made when the proxy takes the pair, Transport::connectOnFirstUse); else the socket transport's
// connections. With MIXCCL_NET=auto on a host with an active RDMA port the pair's transport
// depends on both ranks' ports, agreed over a full mesh: every rank of such a communicator
// connects eagerly (connect_mode.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"
#include "base/result.h"
#include "proxy/proxy.h"
#include "transport/shm_transport.h"
#include "transport/socket_mesh.h"

namespace mixccl {

struct LazyParams {
  MeshParams mesh;                     // rank, nranks, commHash, secret, sockets per peer
  std::vector<PeerInfo> peers;
  std::vector<std::string> names;      // "rank 3 (host pid N)" per rank
  std::string netName, netSource;      // MIXCCL_NET / config.netName: auto, socket, shm, ucx, ofi
  bool wantShm = true;                 // not MIXCCL_SHM_DISABLE
  ShmParams shm;
  size_t frameBytes = 256 << 10;
  double timeoutS = 300;               // bound of one pair's connection
};

class LazyConnector : public PairSource {
 public:
  // listener: this rank's transport listener (its address is in the peer info).
  LazyConnector(const LazyParams& params, Socket listener);
  ~LazyConnector() override;

  // Makes the network transport MIXCCL_NET names (ucx, ofi: it starts with its first pair) and
  // starts the acceptor thread; wake is called when a pair a peer dialled is ready.
  Result start(std::function<void()> wake);
  // Stops accepting (dials that arrive later are refused by the closed listener). Idempotent.
  void stop();

  Result connectPeer(int peer, Socket* control, std::unique_ptr<Connection>* link) override;
  bool takeAccepted(int* peer, Socket* control, std::unique_ptr<Connection>* link) override;

  // Why the pair with peer got its transport ("" until it is connected).
  std::string transportWhy(int peer) const;

 private:
  struct Pair {
    bool dialing = false;    // this rank's dial is under way
    bool accepting = false;  // the acceptor is building the pair from the peer's dial
    bool ready = false;      // built by the acceptor, not yet taken by the proxy
    bool taken = false;      // the proxy has it
    bool failed = false;
    Result result = mixcclSuccess;
    std::string error;
    Socket control;
    std::unique_ptr<Connection> link;
    std::string why;
    // An accepted dial's data connections, while they arrive.
    std::vector<Socket> data;
    std::string net;  // the accepted dial's transport (pairNet)
    int dataExpected = 0;
    int dataArrived = 0;
    Clock::time_point since;
  };
  enum class DialOutcome { Connected, Crossing };

  void acceptLoop();
  void onArrival(Socket conn, const std::vector<uint8_t>& hello);
  // Builds the pair from its sockets (both ranks run it, each on its own side).
  Result buildPair(int peer, const std::string& net, Socket control, std::vector<Socket> data,
                   const Deadline& deadline, Socket* controlOut, std::unique_ptr<Connection>* link,
                   std::string* why);
  Result dial(int peer, const Deadline& deadline, DialOutcome* outcome, Socket* control,
              std::unique_ptr<Connection>* link, std::string* why);
  void finishAccept(int peer, Result r, Socket control, std::unique_ptr<Connection> link,
                    const std::string& why);
  // The pair's transport: "shm", "socket" (the only one with data connections), "ucx", "ofi".
  std::string pairNet(int peer, bool peerWantsShm) const;
  std::string me() const { return "rank " + std::to_string(params_.mesh.rank); }

  LazyParams params_;
  Socket listener_;
  std::unique_ptr<Transport> network_;  // MIXCCL_NET=ucx or ofi
  int stopFd_ = -1;  // eventfd: wakes the acceptor's poll to stop
  std::function<void()> wake_;
  std::thread acceptor_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Pair> pairs_;
  std::atomic<int> readyCount_{0};
};

}  // namespace mixccl
