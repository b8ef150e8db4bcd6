#include "bootstrap/root.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/fork_guard.h"
#include "bootstrap/handshake_server.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/rendezvous_report.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

// rootConnectionCounts(): one counter per outcome, for every root of the process.
std::atomic<uint64_t> gAccepted{0}, gAdmitted{0}, gRefused{0}, gDropped{0}, gCut{0};
std::atomic<int> gRunning{0};  // rendezvousRootsRunning()

// Every rank of the table gets its reply within this long (it is waiting for it).
constexpr double kReplySeconds = 10.0;

std::string hostOf(const PeerInfo& p) {
  return std::string(p.hostname, strnlen(p.hostname, sizeof(p.hostname))) + " pid " +
         std::to_string(p.pid);
}

class RendezvousRoot {
 public:
  RendezvousRoot(Socket listener, const Secret& secret, SocketAddress addr)
      : listener_(std::move(listener)), addr_(addr),
        name_("rendezvous root " + addr.toString()),
        server_(listener_, secret, sizeof(RankHello), name_) {
    fillLocalHostInfo(&self_);
  }

  // One thread serves every connection (handshake_server.h): fork-guarded, it is busy only
  // between its waits (fork_guard.h).
  void run() {
    setLogRank(-1);
    const Deadline deadline = Deadline::afterSeconds(env().timeoutS);
    while (failure_ == mixcclSuccess && !table_.complete()) {
      if (deadline.expired()) {
        fail(mixcclTimeout, timeoutMessage());
        break;
      }
      serveOnce(deadline);
    }
    if (failure_ == mixcclSuccess) {
      listener_.close();
      server_.cutPending();
      publishCounts();
      sendPlacements();
      return;
    }
    tellEveryone();
    // After a failure, ranks that arrive late are told why at once instead of timing out.
    if (failure_ != mixcclTimeout)
      while (!deadline.expired() && serveOnce(deadline) == mixcclSuccess) {
      }
    listener_.close();
    server_.cutPending();
    publishCounts();
  }

 private:
  // One round: wait for anything, take in the ranks that completed their handshake, notice
  // admitted ranks that left. Fails only if the listener failed for good.
  Result serveOnce(const Deadline& deadline) {
    std::vector<pollfd> fds;  // admitted ranks send nothing more: readable means they left
    std::vector<int> rankOfFd;
    for (size_t r = 0; r < conns_.size(); ++r)
      if (conns_[r].valid()) {
        fds.push_back({conns_[r].fd(), POLLIN, 0});
        rankOfFd.push_back((int)r);
      }
    std::vector<HandshakeServer::Arrival> arrivals;
    Result r = server_.serve(&fds, deadline.remainingMs(100), &arrivals);
    publishCounts();
    if (r != mixcclSuccess && failure_ == mixcclSuccess) fail(r, threadLastError());
    for (HandshakeServer::Arrival& a : arrivals) offer(a);
    for (size_t i = 0; i < fds.size() && failure_ == mixcclSuccess; ++i)
      if (fds[i].revents) checkLeft(rankOfFd[i]);
    releaseCryptoWhenIdle();
    return r;
  }

  // The root is detached, and the process that hosts it may exit while it still waits for
  // ranks (rank 0's init has returned, or a test ended): OpenSSL's exit handler then frees its
  // global state under this thread, and this thread's own random generators and error queue
  // are lost (LeakSanitizer reports them). So the thread gives its OpenSSL state back as soon
  // as no handshake is under way; the next handshake sets it up again (microseconds, against a
  // TCP handshake's tens of microseconds at least).
  void releaseCryptoWhenIdle() {
    const uint64_t accepted = server_.counts().accepted;
    if (!server_.idle() || accepted == acceptedAtRelease_) return;
    releaseThreadCrypto();
    acceptedAtRelease_ = accepted;
  }

  // Whether p describes a rank of this very process (the one that hosts the root).
  bool inThisProcess(const PeerInfo& p) const {
    return p.pid == self_.pid && p.hostHash == self_.hostHash;
  }

  // An authenticated connection's hello: it joins the table, or is refused; a rank that
  // disagrees with the others (nranks, a duplicate rank) dooms the whole job.
  void offer(HandshakeServer::Arrival& a) {
    RankHello hello;
    memcpy(&hello, a.hello.data(), sizeof(hello));
    if (failure_ != mixcclSuccess) {  // came after the rendezvous failed
      gRefused.fetch_add(1);
      reject(a.conn, failure_, failureMessage_);
      return;
    }
    std::string why;
    RendezvousTable::Verdict v = table_.offer(hello, &why);
    if (v == RendezvousTable::Verdict::Admitted) {
      if (conns_.size() < (size_t)table_.nranks()) conns_.resize(table_.nranks());
      conns_[hello.rank] = std::move(a.conn);
      gAdmitted.fetch_add(1);
      return;
    }
    gRefused.fetch_add(1);
    const std::string msg = name_ + ": " + why + " (from " + a.peer.toString() + ")";
    if (v == RendezvousTable::Verdict::BadHello) {
      raiseError(mixcclInvalidArgument, "%s", msg.c_str());
      reject(a.conn, mixcclInvalidArgument, msg);
      return;
    }
    // Told together with the ranks already in (tellEveryone), in the order that reaches all.
    offender_ = std::move(a.conn);
    offenderInThisProcess_ = inThisProcess(hello.info);
    fail(mixcclInvalidUsage, msg);
  }

  // Admitted rank r's connection is readable: it left, or sent what it should not.
  void checkLeft(int r) {
    char byte;
    ssize_t n = recv(conns_[r].fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    const PeerInfo& gone = table_.table()[r];
    // The rank in this very process has not "left": its own init gave up (its error says
    // why), and reporting it as a departed peer would blame the wrong process.
    fail(mixcclRemoteError,
         "rank " + std::to_string(r) + " (" + hostOf(gone) + ") " +
             (n > 0 ? "sent unexpected bytes"
                    : inThisProcess(gone) ? "stopped waiting (its own init ended; its error says why)"
                                          : "left (its connection closed)") +
             " during the rendezvous, before all ranks arrived");
  }

  void fail(Result code, const std::string& why) {
    failure_ = code;
    failureMessage_ = why;
  }

  // "rendezvous root A: [what became of strangers; ]ranks 4-5 of 6 never arrived within ...",
  // within the 247 characters a reply carries: the rank lists give way first.
  std::string timeoutMessage() const {
    std::string strangers = server_.strangerReport();
    if (!strangers.empty()) strangers += "; ";
    const std::string head = name_ + ": " + strangers;
    if (table_.nranks() < 0)
      return head + "no rank arrived within " + std::to_string(env().timeoutS) +
             " s (MIXCCL_TIMEOUT_S)";
    std::string m;
    for (size_t room = 72;; room -= 12) {
      m = head + missingRanksReport(table_, env().timeoutS, room);
      if (m.size() < sizeof(RootReply::message) || room <= 24) return m;
    }
  }

  // The admitted ranks in the order to answer them: ranks of this process last. Once answered,
  // such a rank's init returns and its process may end, taking this thread with it before the
  // others have their answer.
  std::vector<size_t> answerOrder() const {
    std::vector<size_t> order;
    for (int mine = 0; mine < 2; ++mine)
      for (size_t r = 0; r < conns_.size(); ++r)
        if (conns_[r].valid() && inThisProcess(table_.table()[r]) == (mine == 1))
          order.push_back(r);
    return order;
  }

  // The failure goes to every rank involved (the offender too, in its place in that order)
  // before it is logged here.
  void tellEveryone() {
    std::vector<const Socket*> order;
    for (size_t r : answerOrder()) order.push_back(&conns_[r]);
    if (offender_.valid())
      order.insert(offenderInThisProcess_ ? order.end() : order.begin(), &offender_);
    for (const Socket* s : order) reject(*s, failure_, failureMessage_);
    raiseError(failure_, "%s", failureMessage_.c_str());
    conns_.clear();
    offender_.close();
  }

  // Every rank it serves gets the reply and its place in the exchange tree (its parent and
  // children, exchange_tree.h): a few hundred bytes each, whatever the number of ranks.
  void sendPlacements() {
    const ExchangeTree tree(table_.nranks(), table_.nroots());
    RootReply reply{};
    reply.nranks = table_.nranks();
    const Deadline d = Deadline::afterSeconds(kReplySeconds);
    for (size_t r : answerOrder()) {
      const RootPlacement place =
          placementFor(tree, (int)r, table_.rootIndex(), table_.table(), table_.exchangeAddrs());
      std::string what = "rank " + std::to_string(r);
      if (sendAllBefore(conns_[r], &reply, sizeof(reply), d, what.c_str()) != mixcclSuccess ||
          sendAllBefore(conns_[r], &place, sizeof(place), d, what.c_str()) != mixcclSuccess)
        continue;  // that rank will report its own failure
    }
    conns_.clear();
    INFO(kLogBootstrap, "%s: all %d ranks of root %d of %d connected", name_.c_str(),
         table_.expected(), table_.rootIndex(), table_.nroots());
  }

  static void reject(const Socket& conn, Result why, const std::string& msg) {
    RootReply reply{};
    reply.status = (int32_t)why;
    snprintf(reply.message, sizeof(reply.message), "%s", msg.c_str());
    sendAllBefore(conn, &reply, sizeof(reply), Deadline::afterSeconds(1), "rejected rank");
  }

  // Adds what the handshake server did since the last call to the process's counts.
  void publishCounts() {
    const HandshakeServer::Counts& c = server_.counts();
    gAccepted.fetch_add(c.accepted - published_.accepted);
    gRefused.fetch_add(c.refused - published_.refused);
    gDropped.fetch_add(c.dropped - published_.dropped);
    gCut.fetch_add(c.cut - published_.cut);
    published_ = c;
  }

  Socket listener_;
  SocketAddress addr_;
  PeerInfo self_{};  // this process, as its ranks describe themselves
  std::string name_;
  HandshakeServer server_;
  HandshakeServer::Counts published_;
  RendezvousTable table_;
  std::vector<Socket> conns_;  // admitted ranks, by rank
  Socket offender_;            // the rank whose hello doomed the job, until it is told
  bool offenderInThisProcess_ = false;
  uint64_t acceptedAtRelease_ = 0;  // connections accepted when the thread last released crypto
  Result failure_ = mixcclSuccess;
  std::string failureMessage_;
};

}  // namespace

int rendezvousRootsRunning() { return gRunning.load(); }

RootConnectionCounts rootConnectionCounts() {
  RootConnectionCounts c;
  c.accepted = gAccepted.load();
  c.admitted = gAdmitted.load();
  c.refused = gRefused.load();
  c.dropped = gDropped.load();
  c.cut = gCut.load();
  return c;
}

Result startRendezvousRoot(const SocketAddress& addr, const Secret& secret, SocketAddress* bound) {
  Socket listener;
  MIXCCL_CHECK(listenOn(addr, &listener, bound));
  auto root = std::make_shared<RendezvousRoot>(std::move(listener), secret, *bound);
  // Detached: the root ends by itself once every rank has its table or the timeout passes.
  // The thread counts as busy from its first instruction (its start-up allocates, and the
  // caller may fork right after this returns); see fork_guard.h.
  forkGuardHandOff();
  ++gRunning;
  std::thread([root]() mutable {
    {
      ForkGuardAdopted guarded;
      root->run();
      root.reset();
      // While still busy: the thread's exit would free OpenSSL's state for it unguarded.
      releaseThreadCrypto();
      --gRunning;
    }
    forkGuardReleaseHandedOff();
  }).detach();
  INFO(kLogBootstrap, "rendezvous root listening on %s", bound->toString().c_str());
  return mixcclSuccess;
}

}  // namespace mixccl
