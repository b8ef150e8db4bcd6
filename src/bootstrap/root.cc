#include "bootstrap/root.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"

namespace mixccl {
namespace {

// A stranger may connect and say nothing; it gets this long before the root moves on.
constexpr double kHandshakeSeconds = 5.0;

class RendezvousRoot {
 public:
  RendezvousRoot(Socket listener, const Secret& secret, SocketAddress addr)
      : listener_(std::move(listener)), secret_(secret), addr_(addr) {}

  void run() {
    Deadline deadline = Deadline::afterSeconds(env().timeoutS);
    while (nranks_ < 0 || arrived_ < nranks_) {
      Socket conn;
      SocketAddress peer;
      Result r = acceptBefore(listener_, deadline, &conn, &peer);
      if (r == mixcclTimeout) {
        raiseError(mixcclTimeout,
                   "rendezvous root %s: only %d of %d ranks arrived within %d s (MIXCCL_TIMEOUT_S)",
                   addr_.toString().c_str(), arrived_, nranks_, env().timeoutS);
        failAll(mixcclTimeout);
        return;
      }
      if (r != mixcclSuccess) { failAll(r); return; }
      admit(std::move(conn), peer);
    }
    RootReply reply{0, nranks_};
    for (int i = 0; i < nranks_; ++i) {
      std::string what = "rank " + std::to_string(i);
      Deadline d = Deadline::afterSeconds(kHandshakeSeconds * 2);
      if (sendAllBefore(conns_[i], &reply, sizeof(reply), d, what.c_str()) != mixcclSuccess ||
          sendAllBefore(conns_[i], table_.data(), table_.size() * sizeof(PeerInfo), d,
                        what.c_str()) != mixcclSuccess)
        continue;  // that rank will report its own failure
    }
    INFO(kLogBootstrap, "rendezvous root %s: all %d ranks connected", addr_.toString().c_str(),
         nranks_);
  }

 private:
  // Authenticates one connection and records its rank; strangers are refused and logged.
  void admit(Socket conn, const SocketAddress& peer) {
    std::string what = "connection from " + peer.toString();
    Deadline d = Deadline::afterSeconds(kHandshakeSeconds);
    if (authenticateServer(conn, secret_, d, what.c_str()) != mixcclSuccess) return;
    RankHello hello;
    if (recvAllBefore(conn, &hello, sizeof(hello), d, what.c_str()) != mixcclSuccess) return;
    if (hello.magic != kRankHelloMagic || hello.nranks < 1 || hello.nranks > kMaxRanks ||
        hello.rank < 0 || hello.rank >= hello.nranks) {
      raiseError(mixcclRemoteError, "rendezvous root: %s sent rank %d of %d, which is invalid",
                 what.c_str(), hello.rank, hello.nranks);
      reject(conn, mixcclInvalidArgument);
      return;
    }
    if (nranks_ < 0) {
      nranks_ = hello.nranks;
      conns_.resize(nranks_);
      table_.resize(nranks_);
    } else if (hello.nranks != nranks_) {
      raiseError(mixcclInvalidUsage, "rendezvous root: rank %d says nranks=%d, others said %d",
                 hello.rank, hello.nranks, nranks_);
      reject(conn, mixcclInvalidUsage);
      return;
    }
    if (conns_[hello.rank].valid()) {
      raiseError(mixcclInvalidUsage, "rendezvous root: rank %d joined twice (second from %s)",
                 hello.rank, peer.toString().c_str());
      reject(conn, mixcclInvalidUsage);
      return;
    }
    hello.info.rank = hello.rank;
    table_[hello.rank] = hello.info;
    conns_[hello.rank] = std::move(conn);
    ++arrived_;
  }

  void reject(const Socket& conn, Result why) {
    RootReply reply{(int32_t)why, 0};
    sendAllBefore(conn, &reply, sizeof(reply), Deadline::afterSeconds(1), "rejected rank");
  }

  void failAll(Result why) {
    for (Socket& c : conns_)
      if (c.valid()) reject(c, why);
  }

  Socket listener_;
  Secret secret_;
  SocketAddress addr_;
  int nranks_ = -1;
  int arrived_ = 0;
  std::vector<Socket> conns_;
  std::vector<PeerInfo> table_;
};

}  // namespace

Result startRendezvousRoot(const SocketAddress& addr, const Secret& secret, SocketAddress* bound) {
  Socket listener;
  MIXCCL_CHECK(listenOn(addr, &listener, bound));
  auto root = std::make_shared<RendezvousRoot>(std::move(listener), secret, *bound);
  // Detached: the root ends by itself once every rank has its table or the timeout passes.
  std::thread([root] { root->run(); }).detach();
  INFO(kLogBootstrap, "rendezvous root listening on %s", bound->toString().c_str());
  return mixcclSuccess;
}

}  // namespace mixccl
