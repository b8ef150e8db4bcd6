#include "core/lazy_connector.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bootstrap/auth.h"
#include "bootstrap/auth_connect.h"
#include "bootstrap/handshake_server.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/net_choice.h"
#include "transport/net_transports.h"
#include "transport/same_host_tuning.h"
#include "transport/shm_connection.h"
#include "transport/socket_connection.h"

namespace mixccl {
namespace {

constexpr uint32_t kLazyHelloMagic = 0x5a59414c;  // "LAZY"
constexpr uint32_t kWantShm = 1;                  // LazyHello/LazyReply flags
constexpr int kMaxDataConnections = 16;           // MIXCCL_NSOCKS_PERPEER's bound

// The dialler's hello on each connection of a pair: index 0 is the control connection, 1..n
// the data connections. dataCount: how many data connections follow when the pair does not
// use shared memory.
struct LazyHello {
  uint32_t magic;
  int32_t rank;
  uint64_t commHash;
  int32_t index;
  int32_t dataCount;
  uint32_t flags;
  uint32_t reserved;
  char net[16];  // the transport this rank asked for (MIXCCL_NET)
};
static_assert(sizeof(LazyHello) == 48, "LazyHello is part of the wire format");

enum : uint32_t {
  kAccepted = 0,
  kCrossing = 1,    // this rank dials the dialler too, and the lower rank's dial wins
  kRefused = 2,     // a second pair from the same rank: a protocol error
  kNetMismatch = 3  // the ranks asked for different transports
};

// The acceptor's answer on the control connection.
struct LazyReply {
  uint32_t magic;
  uint32_t status;
  uint32_t flags;
  uint32_t reserved;
  char net[16];
};
static_assert(sizeof(LazyReply) == 32, "LazyReply is part of the wire format");

bool hasNul(const char* s, size_t n) { return memchr(s, 0, n) != nullptr; }

}  // namespace

LazyConnector::LazyConnector(const LazyParams& params, Socket listener)
    : params_(params), listener_(std::move(listener)), pairs_(params.mesh.nranks) {}

LazyConnector::~LazyConnector() {
  stop();
  if (stopFd_ >= 0) close(stopFd_);
}

Result LazyConnector::start(std::function<void()> wake) {
  wake_ = std::move(wake);
  const std::string& net = params_.netName;
  if (net == "ucx" || net == "ofi")
    MIXCCL_CHECK(makeNetworkTransport(net, params_.mesh.rank,
                                      std::vector<bool>(params_.mesh.nranks, true), &network_));
  stopFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stopFd_ < 0)
    return raiseError(mixcclSystemError, "%s: eventfd: %s", me().c_str(), strerror(errno));
  acceptor_ = std::thread([this] {
    acceptLoop();
    // Authentication used OpenSSL on this thread: free its state now, under the lock fork
    // takes, rather than at the thread's exit, where a fork at that moment would hand the child
    // OpenSSL's lock held (bootstrap/fork_guard.h).
    releaseThreadCrypto();
  });
  return mixcclSuccess;
}

void LazyConnector::stop() {
  if (stopping_.exchange(true)) return;
  uint64_t one = 1;
  if (stopFd_ >= 0 && write(stopFd_, &one, sizeof(one)) < 0) {
    // A full counter already wakes the acceptor.
  }
  if (acceptor_.joinable()) acceptor_.join();
  // Dials that come later are refused by the kernel at once.
  listener_ = Socket();
  std::lock_guard<std::mutex> lock(mutex_);
  changed_.notify_all();
}

std::string LazyConnector::pairNet(int peer, bool peerWantsShm) const {
  const int rank = params_.mesh.rank;
  const bool sameHost = params_.peers[peer].hostHash == params_.peers[rank].hostHash;
  const PairChoice plan = planPair(params_.netName, params_.netSource, sameHost, false, false, false);
  if (plan.net == "shm") return params_.wantShm && peerWantsShm ? "shm" : "socket";
  return plan.net;
}

std::string LazyConnector::transportWhy(int peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peer >= 0 && peer < (int)pairs_.size() ? pairs_[peer].why : "";
}

Result LazyConnector::buildPair(int peer, const std::string& net, Socket control, std::vector<Socket> data,
                                const Deadline& deadline, Socket* controlOut,
                                std::unique_ptr<Connection>* link, std::string* why) {
  const MeshParams& m = params_.mesh;
  // The transports take their pairs from a table indexed by rank; only peer's row is filled.
  std::vector<std::vector<Socket>> conns(m.nranks);
  conns[peer].push_back(std::move(control));
  for (Socket& s : data) conns[peer].push_back(std::move(s));
  tuneSameHostConnections(m.rank, params_.peers, m.socketBufferBytes, &conns);
  TransportSetup setup;
  setup.rank = m.rank;
  setup.nranks = m.nranks;
  setup.commHash = m.commHash;
  setup.peers = &params_.peers;
  setup.conns = &conns;
  setup.deadline = deadline;
  setup.frameBytes = params_.frameBytes;
  std::vector<std::unique_ptr<Connection>> out(m.nranks);
  const bool useShm = net == "shm";
  if (useShm) {
    ShmTransport shm(params_.shm, true);
    MIXCCL_CHECK(shm.connect(setup, {peer}, &out));
  } else if (net != "socket") {
    MIXCCL_CHECK(network_->connectOnFirstUse(setup, peer, &out[peer]));
  }
  if (!out[peer]) {
    if (conns[peer].size() < 2)
      return raiseError(mixcclInternalError, "%s: no data connection to %s", me().c_str(),
                        params_.names[peer].c_str());
    SocketTransport socket;
    MIXCCL_CHECK(socket.connect(setup, {peer}, &out));
  }
  const bool sameHost = params_.peers[peer].hostHash == params_.peers[m.rank].hostHash;
  *why = planPair(params_.netName, params_.netSource, sameHost, false, false, false).why;
  if (!useShm && std::string(out[peer]->transportName()) == "socket" &&
      planPair(params_.netName, params_.netSource, sameHost, false, false, false).net == "shm")
    *why += params_.wantShm ? "; MIXCCL_SHM_DISABLE=1 on the peer" : "; MIXCCL_SHM_DISABLE=1 here";
  *why += "; connected on first use";
  *controlOut = std::move(conns[peer][0]);
  *link = std::move(out[peer]);
  INFO(kLogInit | kLogNet, "%s: connected to %s on first use: %s (%s)", me().c_str(),
       params_.names[peer].c_str(), (*link)->transportName(), (*link)->detail().c_str());
  return mixcclSuccess;
}

Result LazyConnector::dial(int peer, const Deadline& deadline, DialOutcome* outcome,
                           Socket* control, std::unique_ptr<Connection>* link, std::string* why) {
  const MeshParams& m = params_.mesh;
  SocketAddress addr;
  MIXCCL_CHECK(fromWire(params_.peers[peer].listenAddr, &addr));
  const std::string what = params_.names[peer] + " at " + addr.toString();
  LazyHello hello{};
  hello.magic = kLazyHelloMagic;
  hello.rank = m.rank;
  hello.commHash = m.commHash;
  hello.index = 0;
  hello.dataCount = connectionsTo(m, params_.peers, peer);
  hello.flags = params_.wantShm ? kWantShm : 0;
  snprintf(hello.net, sizeof(hello.net), "%s", params_.netName.c_str());
  Socket ctl;
  MIXCCL_CHECK(connectAuthenticated(addr, m.secret, deadline, what.c_str(), &ctl, true));
  MIXCCL_CHECK(sendAllBefore(ctl, &hello, sizeof(hello), deadline, what.c_str()));
  LazyReply reply{};
  MIXCCL_CHECK(recvAllBefore(ctl, &reply, sizeof(reply), deadline, what.c_str()));
  if (reply.magic != kLazyHelloMagic || reply.status > kNetMismatch || !hasNul(reply.net, sizeof(reply.net)))
    return raiseError(mixcclRemoteError, "%s: %s sent an invalid answer to its connection",
                      me().c_str(), what.c_str());
  if (reply.status == kNetMismatch || params_.netName != reply.net)
    return raiseError(mixcclInvalidUsage, "rank %d asked for transport '%s' (%s) but %s asked "
                      "for '%s': every rank of a communicator must ask for the same transport "
                      "(MIXCCL_NET / config.netName)", m.rank, params_.netName.c_str(),
                      params_.netSource.c_str(), params_.names[peer].c_str(), reply.net);
  if (reply.status == kRefused)
    return raiseError(mixcclRemoteError, "%s: %s refused the connection: it holds one from this "
                      "rank already", me().c_str(), what.c_str());
  if (reply.status == kCrossing) {
    *outcome = DialOutcome::Crossing;
    return mixcclSuccess;
  }
  const std::string net = pairNet(peer, (reply.flags & kWantShm) != 0);
  const int n = net == "socket" ? hello.dataCount : 0;
  std::vector<Socket> data;
  for (int i = 1; i <= n; ++i) {
    Socket s;
    MIXCCL_CHECK(connectAuthenticated(addr, m.secret, deadline, what.c_str(), &s, true));
    LazyHello h = hello;
    h.index = i;
    MIXCCL_CHECK(sendAllBefore(s, &h, sizeof(h), deadline, what.c_str()));
    data.push_back(std::move(s));
  }
  *outcome = DialOutcome::Connected;
  return buildPair(peer, net, std::move(ctl), std::move(data), deadline, control, link, why);
}

Result LazyConnector::connectPeer(int peer, Socket* control, std::unique_ptr<Connection>* link) {
  const Deadline deadline = Deadline::afterSeconds(params_.timeoutS);
  std::unique_lock<std::mutex> lock(mutex_);
  Pair& p = pairs_[peer];
  if (p.taken)
    return raiseError(mixcclInternalError, "%s: the pair with %s was taken already", me().c_str(),
                      params_.names[peer].c_str());
  if (!p.ready && !p.failed && !p.accepting && !p.dialing) {
    p.dialing = true;
    lock.unlock();
    DialOutcome outcome = DialOutcome::Connected;
    std::string why;
    Socket ctl;
    std::unique_ptr<Connection> made;
    // mixcclCommAbort from another thread stops the connector: the dial (a stopped peer never
    // answers its handshake) then gives up within ~100 ms instead of at the deadline. A
    // background init's own cancel flag already covers it.
    const std::atomic<bool>* outer = threadCancelFlag();
    if (!outer) setThreadCancelFlag(&stopping_);
    Result r = dial(peer, deadline, &outcome, &ctl, &made, &why);
    setThreadCancelFlag(outer);
    // The dial's own message (logged where it arose) names an address: say whose.
    const std::string error = r == mixcclSuccess ? "" : me() + ": connecting to " +
        params_.names[peer] + " on first use failed: " + threadLastError();
    lock.lock();
    p.dialing = false;
    if (r != mixcclSuccess) {
      // The peer may have dialled this rank meanwhile and the acceptor built the pair: then
      // this dial's failure (a crossing the peer saw differently) does not matter.
      if (!p.ready && !p.accepting) {
        p.failed = true;
        p.result = r;
        p.error = error;
        changed_.notify_all();
        return adoptError(r, error);
      }
    } else if (outcome == DialOutcome::Connected) {
      p.taken = true;
      p.why = why;
      *control = std::move(ctl);
      *link = std::move(made);
      return mixcclSuccess;
    }
  }
  // The peer dialled this rank (or both dialled and the peer's dial won): its pair comes from
  // the acceptor thread, which needs nothing from this one.
  changed_.wait_until(lock, deadline.at(), [&] { return p.ready || p.failed || stopping_.load(); });
  if (p.ready) {
    p.ready = false;
    p.taken = true;
    readyCount_.fetch_sub(1, std::memory_order_acq_rel);
    *control = std::move(p.control);
    *link = std::move(p.link);
    return mixcclSuccess;
  }
  if (p.failed) return adoptError(p.result, p.error);
  if (stopping_.load())
    return raiseError(mixcclInvalidUsage, "%s: the communicator is closing; no connection to %s",
                      me().c_str(), params_.names[peer].c_str());
  return raiseError(mixcclTimeout, "%s: %s dialled this rank, but their connection was not set "
                    "up within %.0f s", me().c_str(), params_.names[peer].c_str(),
                    params_.timeoutS);
}

bool LazyConnector::takeAccepted(int* peer, Socket* control, std::unique_ptr<Connection>* link) {
  if (readyCount_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  for (int q = 0; q < (int)pairs_.size(); ++q) {
    Pair& p = pairs_[q];
    if (!p.ready) continue;
    p.ready = false;
    p.taken = true;
    readyCount_.fetch_sub(1, std::memory_order_acq_rel);
    *peer = q;
    *control = std::move(p.control);
    *link = std::move(p.link);
    return true;
  }
  return false;
}

void LazyConnector::finishAccept(int peer, Result r, Socket control,
                                 std::unique_ptr<Connection> link, const std::string& why) {
  const std::string error = r == mixcclSuccess ? "" : threadLastError();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Pair& p = pairs_[peer];
    p.accepting = false;
    p.data.clear();
    if (r == mixcclSuccess) {
      p.ready = true;
      p.control = std::move(control);
      p.link = std::move(link);
      p.why = why;
      readyCount_.fetch_add(1, std::memory_order_acq_rel);
    } else {
      p.failed = true;
      p.result = r;
      p.error = error;
    }
    changed_.notify_all();
  }
  // The proxy adopts the pair at its next round: wake it whether a call waits or it idles.
  if (r == mixcclSuccess && wake_) wake_();
}

// Runs on the acceptor thread for each authenticated connection with its hello.
void LazyConnector::onArrival(Socket conn, const std::vector<uint8_t>& bytes) {
  const MeshParams& m = params_.mesh;
  LazyHello h;
  memcpy(&h, bytes.data(), sizeof(h));
  if (h.magic != kLazyHelloMagic || h.commHash != m.commHash || h.rank < 0 ||
      h.rank >= m.nranks || h.rank == m.rank || h.index < 0 || h.index > kMaxDataConnections ||
      h.dataCount < 1 || h.dataCount > kMaxDataConnections || !hasNul(h.net, sizeof(h.net))) {
    raiseError(mixcclRemoteError, "%s: refused a connection with an unexpected hello (rank %d, "
               "socket %d)", me().c_str(), h.rank, h.index);
    return;
  }
  const int q = h.rank;
  const Deadline deadline = Deadline::afterSeconds(params_.timeoutS);
  std::unique_lock<std::mutex> lock(mutex_);
  Pair& p = pairs_[q];
  if (h.index > 0) {
    // A data connection of a pair accepted before.
    if (!p.accepting || h.dataCount != p.dataExpected || h.index > p.dataExpected ||
        p.data[h.index - 1].valid()) {
      raiseError(mixcclRemoteError, "%s: refused an unexpected data connection claiming %s "
                 "(socket %d)", me().c_str(), params_.names[q].c_str(), h.index);
      return;
    }
    p.data[h.index - 1] = std::move(conn);
    if (++p.dataArrived < p.dataExpected) return;
  } else {
    LazyReply reply{};
    reply.magic = kLazyHelloMagic;
    reply.flags = params_.wantShm ? kWantShm : 0;
    snprintf(reply.net, sizeof(reply.net), "%s", params_.netName.c_str());
    const bool fresh = !p.dialing && !p.accepting && !p.ready && !p.taken && !p.failed;
    if (params_.netName != h.net) {
      reply.status = kNetMismatch;
    } else if (q > m.rank) {
      // The lower rank's dial wins: a higher rank's counts only when this rank has none.
      reply.status = fresh ? kAccepted : kCrossing;
    } else {
      reply.status = fresh || (p.dialing && !p.accepting) ? kAccepted : kRefused;
    }
    const std::string net = pairNet(q, (h.flags & kWantShm) != 0);
    if (reply.status == kAccepted) {
      // Taken before the answer goes out: a dial of this rank's own to q starting meanwhile
      // must see that the pair is under way.
      p.accepting = true;
      p.since = Clock::now();
      p.net = net;
      p.dataExpected = net == "socket" ? h.dataCount : 0;
      p.dataArrived = 0;
      p.data.clear();
      p.data.resize(p.dataExpected);
    }
    lock.unlock();
    Result sent = sendAllBefore(conn, &reply, sizeof(reply), deadline, params_.names[q].c_str());
    if (reply.status == kAccepted && sent != mixcclSuccess) {
      finishAccept(q, sent, Socket(), nullptr, "");
      return;
    }
    lock.lock();
    if (reply.status == kNetMismatch) {
      raiseError(mixcclInvalidUsage, "rank %d asked for transport '%s' (%s) but %s asked for "
                 "'%s': every rank of a communicator must ask for the same transport (MIXCCL_NET "
                 "/ config.netName)", m.rank, params_.netName.c_str(), params_.netSource.c_str(),
                 params_.names[q].c_str(), h.net);
      p.failed = true;
      p.result = mixcclInvalidUsage;
      p.error = threadLastError();
      changed_.notify_all();
      return;
    }
    if (reply.status == kRefused)
      raiseError(mixcclRemoteError, "%s: refused a second connection from %s", me().c_str(),
                 params_.names[q].c_str());
    if (reply.status != kAccepted) return;
    p.control = std::move(conn);
    if (p.dataExpected > 0) return;
  }
  // Every connection of the pair is in: build it (the dialler builds its side at once).
  const std::string net = p.net;
  Socket control = std::move(p.control);
  std::vector<Socket> data = std::move(p.data);
  lock.unlock();
  Socket ctl;
  std::unique_ptr<Connection> link;
  std::string why;
  Result r = buildPair(q, net, std::move(control), std::move(data), deadline, &ctl, &link, &why);
  finishAccept(q, r, std::move(ctl), std::move(link), why);
}

void LazyConnector::acceptLoop() {
  setLogRank(params_.mesh.rank);
  HandshakeServer server(listener_, params_.mesh.secret, sizeof(LazyHello), me());
  while (!stopping_.load()) {
    std::vector<pollfd> stopPoll{pollfd{stopFd_, POLLIN, 0}};
    std::vector<HandshakeServer::Arrival> arrivals;
    if (server.serve(&stopPoll, 200, &arrivals) != mixcclSuccess) {
      if (!stopping_.load())
        WARN(kLogNet, "%s: stopped accepting connections: %s", me().c_str(), threadLastError().c_str());
      break;
    }
    if (stopping_.load()) break;
    for (HandshakeServer::Arrival& a : arrivals) onArrival(std::move(a.conn), a.hello);
    // A pair whose data connections stopped coming (its dialler died) fails after the bound.
    std::vector<int> late;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto now = Clock::now();
      for (int q = 0; q < (int)pairs_.size(); ++q)
        if (pairs_[q].accepting && pairs_[q].dataExpected > 0 &&
            now - pairs_[q].since > std::chrono::duration<double>(params_.timeoutS))
          late.push_back(q);
    }
    for (int q : late) {
      raiseError(mixcclTimeout, "%s: only some data connections of %s arrived within %.0f s",
                 me().c_str(), params_.names[q].c_str(), params_.timeoutS);
      finishAccept(q, mixcclTimeout, Socket(), nullptr, "");
    }
  }
}

}  // namespace mixccl
