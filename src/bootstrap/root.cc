#include "bootstrap/root.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/fork_guard.h"
#include "bootstrap/rendezvous_report.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

// A stranger may connect and say nothing; it gets this long before its handshake is dropped.
// Handshakes run concurrently, so it never delays the real ranks.
constexpr double kHandshakeSeconds = 5.0;
// Connections in their handshake at once; more are closed at once (a flood of strangers must
// not exhaust threads or descriptors).
constexpr size_t kMaxPendingHandshakes = 64;

// rootConnectionCounts(): one counter per outcome, for every root of the process.
std::atomic<uint64_t> gAccepted{0}, gAdmitted{0}, gRefused{0}, gCut{0};

std::string hostOf(const PeerInfo& p) {
  return std::string(p.hostname, strnlen(p.hostname, sizeof(p.hostname))) + " pid " +
         std::to_string(p.pid);
}

class RendezvousRoot : public std::enable_shared_from_this<RendezvousRoot> {
 public:
  RendezvousRoot(Socket listener, const Secret& secret, SocketAddress addr)
      : listener_(std::move(listener)), secret_(secret), addr_(addr) {}
  ~RendezvousRoot() {
    if (wakeFd_ >= 0) close(wakeFd_);
  }

  Result init() {
    wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wakeFd_ < 0) return raiseError(mixcclSystemError, "eventfd: %s", strerror(errno));
    return mixcclSuccess;
  }

  // Runs on a fork-guarded thread: it is busy only between waits (fork_guard.h).
  void run() {
    Deadline deadline = Deadline::afterSeconds(env().timeoutS);
    Result failure = mixcclSuccess;
    std::string why;
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<int> rankOfFd;
      fds.push_back({listener_.fd(), POLLIN, 0});
      fds.push_back({wakeFd_, POLLIN, 0});
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!refusal_.empty()) {  // a handshake thread saw a conflict that dooms the job
          failure = refusalCode_;
          why = refusal_;
          break;
        }
        if (table_.complete()) break;
        for (size_t r = 0; r < conns_.size(); ++r)
          if (conns_[r].valid()) {
            fds.push_back({conns_[r].fd(), POLLIN, 0});
            rankOfFd.push_back((int)r);
          }
      }
      if (deadline.expired()) {
        std::lock_guard<std::mutex> lock(mutex_);
        failure = mixcclTimeout;
        // Name the missing ranks: only the root knows them, and the waiting ranks report it.
        why = "rendezvous root " + addr_.toString() + ": " +
              (table_.nranks() < 0 ? "no rank arrived within " + std::to_string(env().timeoutS) +
                                         " s (MIXCCL_TIMEOUT_S)"
                                   : missingRanksReport(table_, env().timeoutS));
        break;
      }
      int rc;
      {
        ForkGuardPause waiting;
        rc = poll(fds.data(), fds.size(), deadline.remainingMs(100));
      }
      if (rc < 0 && errno != EINTR) {
        failure = mixcclSystemError;
        why = std::string("rendezvous root: poll: ") + strerror(errno);
        break;
      }
      if (rc <= 0) continue;
      if (fds[1].revents) {
        uint64_t v;
        ssize_t n = read(wakeFd_, &v, sizeof(v));
        (void)n;
      }
      // An admitted rank sends nothing more: readable means it left (or misbehaves).
      for (size_t i = 2; i < fds.size() && failure == mixcclSuccess; ++i) {
        if (!fds[i].revents) continue;
        char byte;
        ssize_t n = recv(fds[i].fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        int r = rankOfFd[i - 2];
        std::lock_guard<std::mutex> lock(mutex_);
        failure = mixcclRemoteError;
        // The rank in this very process has not "left": its own init gave up (its error says
        // why), and reporting it as a departed peer would blame the wrong process.
        PeerInfo me{};
        fillLocalHostInfo(&me);
        const PeerInfo& gone = table_.table()[r];
        const bool self = gone.pid == me.pid && gone.hostHash == me.hostHash;
        why = "rank " + std::to_string(r) + " (" + hostOf(gone) + ") " +
              (n > 0 ? "sent unexpected bytes"
                     : self ? "stopped waiting (its own init ended; its error says why)"
                            : "left (its connection closed)") +
              " during the rendezvous, before all ranks arrived";
      }
      if (failure != mixcclSuccess) break;
      if (fds[0].revents) acceptOne();
    }
    finish(failure, why);
    if (failure != mixcclSuccess && failure != mixcclTimeout) linger(deadline);
    stopWorkers();
  }

 private:
  struct Pending {
    std::unique_ptr<Socket> conn;
    SocketAddress peer;
  };

  void acceptOne() {
    SocketAddress peer;
    peer.length = sizeof(peer.storage);
    int fd = ::accept4(listener_.fd(), peer.sa(), &peer.length, SOCK_CLOEXEC);
    if (fd < 0) return;  // transient (EAGAIN, ECONNABORTED...): poll tells us again
    Socket conn(fd);
    setTcpOptions(fd);
    gAccepted.fetch_add(1);
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_.size() >= kMaxPendingHandshakes) {
      gRefused.fetch_add(1);
      if (!floodLogged_) {
        floodLogged_ = true;
        raiseError(mixcclRemoteError,
                   "rendezvous root %s: more than %zu connections in their handshake at once; "
                   "closing new ones (logged once)", addr_.toString().c_str(),
                   kMaxPendingHandshakes);
      }
      return;
    }
    pending_.push_back(fd);
    queue_.push_back(Pending{std::unique_ptr<Socket>(new Socket(std::move(conn))), peer});
    if (queue_.size() > (size_t)idleWorkers_) {  // every queued connection gets a worker now
      // Workers live until the rendezvous ends, so no thread exits while ranks may still be
      // forked; the new one counts as busy from its first instruction (fork_guard.h).
      forkGuardHandOff();
      auto self = shared_from_this();
      workers_.emplace_back([self]() mutable {
        {
          ForkGuardAdopted guarded;
          self->workerLoop();
        }
        self.reset();
      });
    }
    workCv_.notify_one();
  }

  void workerLoop() {
    setLogRank(-1);
    for (;;) {
      Pending job;
      {
        ForkGuardPause waiting;
        std::unique_lock<std::mutex> lock(mutex_);
        ++idleWorkers_;
        workCv_.wait(lock, [&] { return stopWorkers_ || !queue_.empty(); });
        --idleWorkers_;
        if (queue_.empty()) return;  // stopping
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      handshake(*job.conn, job.peer);
      forget(job.conn->fd());
      job.conn.reset();  // closes unless admitted (then the fd was moved out)
    }
  }

  // Drops fd from the pending list before the socket is closed, so that finish() never shuts
  // down a descriptor number that was reused.
  void forget(int fd) {
    if (fd < 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (*it == fd) {
        pending_.erase(it);
        break;
      }
  }

  // Ends the workers (after finish() cut the connections they wait on) and joins them. Not
  // busy meanwhile: a worker's busy count is released only once it has fully exited, and a
  // fork waiting for it must not wait for this thread too (fork_guard.h).
  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopWorkers_ = true;
      for (Pending& p : queue_)
        if (p.conn) forgetLocked(p.conn->fd());
      gCut.fetch_add(queue_.size());  // never reached a worker
      queue_.clear();
    }
    workCv_.notify_all();
    ForkGuardPause waiting;
    for (std::thread& t : workers_) {
      t.join();
      forkGuardReleaseHandedOff();
    }
    workers_.clear();
  }

  // Authenticates one connection and records its rank; strangers are refused and logged once
  // (one line per refused connection), and never touch the table.
  void handshake(Socket& conn, const SocketAddress& peer) {
    setLogRank(-1);
    std::string what = "connection from " + peer.toString();
    Deadline d = Deadline::afterSeconds(kHandshakeSeconds);
    RankHello hello;
    if (authenticateServer(conn, secret_, d, what.c_str()) != mixcclSuccess ||
        recvAllBefore(conn, &hello, sizeof(hello), d, what.c_str()) != mixcclSuccess) {
      countUnfinishedHandshake();
      return;
    }
    std::string why, msg;
    Result code = mixcclSuccess;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (finished_) {
        if (failure_ == mixcclSuccess) {
          gCut.fetch_add(1);
          return;
        }
        code = failure_;
        msg = failureMessage_;
      }
    }
    if (!msg.empty()) {
      gRefused.fetch_add(1);
      reject(conn, code, msg);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (finished_) {
        gCut.fetch_add(1);
        return;
      }
      RendezvousTable::Verdict v = table_.offer(hello, &why);
      if (v == RendezvousTable::Verdict::Admitted) {
        if (conns_.size() < (size_t)table_.nranks()) conns_.resize(table_.nranks());
        forgetLocked(conn.fd());
        conns_[hello.rank] = std::move(conn);
        gAdmitted.fetch_add(1);
        wake();
        return;
      }
      gRefused.fetch_add(1);
      code = v == RendezvousTable::Verdict::BadHello ? mixcclInvalidArgument : mixcclInvalidUsage;
      msg = "rendezvous root " + addr_.toString() + ": " + why + " (from " + peer.toString() + ")";
      // Authenticated ranks that disagree (nranks, duplicate rank) doom the whole job: tell all.
      if (v != RendezvousTable::Verdict::BadHello && refusal_.empty()) {
        refusal_ = msg;
        refusalCode_ = code;
        wake();
      }
    }
    raiseError(code, "%s", msg.c_str());
    reject(conn, code, msg);
  }

  // A handshake that failed: refused, unless a completed rendezvous cut it (finish() shuts
  // down the connections still in their handshake).
  void countUnfinishedHandshake() {
    std::lock_guard<std::mutex> lock(mutex_);
    (finished_ && failure_ == mixcclSuccess ? gCut : gRefused).fetch_add(1);
  }

  void wake() {
    uint64_t one = 1;
    ssize_t n = write(wakeFd_, &one, sizeof(one));
    (void)n;
  }

  void forgetLocked(int fd) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (*it == fd) {
        pending_.erase(it);
        break;
      }
  }

  static void reject(const Socket& conn, Result why, const std::string& msg) {
    RootReply reply{};
    reply.status = (int32_t)why;
    snprintf(reply.message, sizeof(reply.message), "%s", msg.c_str());
    sendAllBefore(conn, &reply, sizeof(reply), Deadline::afterSeconds(1), "rejected rank");
  }

  void finish(Result failure, const std::string& why) {
    std::vector<Socket> conns;
    std::vector<PeerInfo> table;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
      failure_ = failure;
      failureMessage_ = why;
      conns.swap(conns_);
      table = table_.table();
      // Wake handshakes still in progress (silent strangers) so they end now.
      if (failure == mixcclSuccess)
        for (int fd : pending_) ::shutdown(fd, SHUT_RDWR);
    }
    if (failure == mixcclSuccess || failure == mixcclTimeout) listener_.close();
    if (failure != mixcclSuccess) {
      raiseError(failure, "%s", why.c_str());
      for (Socket& c : conns)
        if (c.valid()) reject(c, failure, why);
    } else {
      RootReply reply{};
      reply.nranks = (int32_t)table.size();
      for (size_t i = 0; i < conns.size(); ++i) {
        std::string what = "rank " + std::to_string(i);
        Deadline d = Deadline::afterSeconds(kHandshakeSeconds * 2);
        if (sendAllBefore(conns[i], &reply, sizeof(reply), d, what.c_str()) != mixcclSuccess ||
            sendAllBefore(conns[i], table.data(), table.size() * sizeof(PeerInfo), d,
                          what.c_str()) != mixcclSuccess)
          continue;  // that rank will report its own failure
      }
      INFO(kLogBootstrap, "rendezvous root %s: all %zu ranks connected", addr_.toString().c_str(),
           table.size());
    }
  }

  // After a failure, ranks that arrive late are told why at once instead of timing out.
  void linger(const Deadline& deadline) {
    while (!deadline.expired()) {
      pollfd p{listener_.fd(), POLLIN, 0};
      int rc;
      {
        ForkGuardPause waiting;
        rc = poll(&p, 1, deadline.remainingMs(100));
      }
      if (rc > 0) acceptOne();
    }
    listener_.close();
    std::lock_guard<std::mutex> lock(mutex_);
    for (int fd : pending_) ::shutdown(fd, SHUT_RDWR);
  }

  Socket listener_;
  Secret secret_;
  SocketAddress addr_;
  int wakeFd_ = -1;
  std::vector<std::thread> workers_;  // handshake threads; run() thread only

  std::mutex mutex_;  // guards everything below
  RendezvousTable table_;
  std::vector<Socket> conns_;
  std::vector<int> pending_;  // fds of connections in their handshake
  bool finished_ = false;
  Result failure_ = mixcclSuccess;  // once finished_: how the rendezvous ended
  std::string failureMessage_;
  bool floodLogged_ = false;
  std::condition_variable workCv_;
  std::deque<Pending> queue_;  // accepted, waiting for a worker
  int idleWorkers_ = 0;
  bool stopWorkers_ = false;
  std::string refusal_;
  Result refusalCode_ = mixcclSuccess;
};

}  // namespace

RootConnectionCounts rootConnectionCounts() {
  RootConnectionCounts c;
  c.accepted = gAccepted.load();
  c.admitted = gAdmitted.load();
  c.refused = gRefused.load();
  c.cut = gCut.load();
  return c;
}

Result startRendezvousRoot(const SocketAddress& addr, const Secret& secret, SocketAddress* bound) {
  Socket listener;
  MIXCCL_CHECK(listenOn(addr, &listener, bound));
  auto root = std::make_shared<RendezvousRoot>(std::move(listener), secret, *bound);
  MIXCCL_CHECK(root->init());
  // Detached: the root ends by itself once every rank has its table or the timeout passes.
  // The thread counts as busy from its first instruction (its start-up allocates, and the
  // caller may fork right after this returns); see fork_guard.h.
  forkGuardHandOff();
  std::thread([root]() mutable {
    {
      ForkGuardAdopted guarded;
      root->run();
      root.reset();
    }
    forkGuardReleaseHandedOff();
  }).detach();
  INFO(kLogBootstrap, "rendezvous root listening on %s", bound->toString().c_str());
  return mixcclSuccess;
}

}  // namespace mixccl
