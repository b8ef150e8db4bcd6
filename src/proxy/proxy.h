// The progress engine of a communicator: it owns the peer connections and moves the bytes of
// every posted send and receive. Callers enqueue ops and wait; the waiting caller drives the
// engine itself (polling MIXCCL_SPIN_US, then blocking in epoll), and the progress thread
// takes over whenever nobody waits, watching for peers that go away.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "bootstrap/socket.h"
#include "core/clock.h"
#include "core/result.h"
#include "proxy/proxy_op.h"
#include "transport/frame.h"
#include "transport/shm_transport.h"

namespace mixccl {

struct ProxyParams {
  int rank = 0;
  int nranks = 1;
  size_t frameBytes = 256 << 10;
  int spinUs = 50;
  std::vector<std::string> peerNames;  // "rank 3 (host)" for messages
};

class Proxy {
 public:
  // conns[p]: the connections to peer p. shm[p] (when given and not null): p is on this host;
  // data goes through its rings, and conns[p][0] becomes the pair's control connection.
  Proxy(const ProxyParams& params, std::vector<std::vector<Socket>> conns,
        std::vector<std::unique_ptr<ShmLink>> shm = {});
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  Result start();
  // Thread-safe. Ops to one peer in one direction match the peer's ops in posting order.
  void post(ProxyOp* op);
  // Waits until op is finished or the deadline passes; on timeout the communicator is failed
  // (every pending op ends) so the op's memory is no longer used when this returns.
  Result wait(ProxyOp* op, const Deadline& deadline);
  // Fails every pending and future op with code (first failure wins). Any thread.
  void fail(Result code, const std::string& message);
  // Lets peers know this rank leaves cleanly, then stops the thread. Idempotent.
  void shutdownGracefully();
  // Stops at once: connections are cut, pending ops fail. Idempotent, any thread.
  void abort(const std::string& why);
  // The first failure, or mixcclSuccess.
  Result error(std::string* message) const;
  // Runs fn once on the progress thread (e.g. to bind that thread near the NIC). Any thread.
  void runOnProgressThread(std::function<void()> fn);
  // Bytes moved through shared memory rings and by cross-memory attach (tests, logging).
  uint64_t shmBytes() const { return shmBytes_.load(std::memory_order_relaxed); }

 private:
  struct SockState;
  struct PeerState;

  void run();
  void drainIncoming();
  void failEverything();
  void finishOp(ProxyOp* op, int state, Result r);
  void pumpSend(SockState& s);
  void pumpRecv(SockState& s);
  bool fillStage(SockState& s, size_t want);
  void handleBye(SockState& s);
  void handlePeerFailedNotice(int from, uint32_t who);
  // The shared-memory path (SockState::shm): the byte stream is a ring pair instead of fd.
  ssize_t streamSend(SockState& s, const iovec* iov, int n);
  // With spill: bytes beyond n (up to spillBytes; sockets only, one system call) land in
  // spill, their count in *spilled; the return value counts only those into buf.
  ssize_t streamRecv(SockState& s, void* buf, size_t n, void* spill = nullptr,
                     size_t spillBytes = 0, size_t* spilled = nullptr);
  void pumpShm(SockState& s);
  void pumpControl(SockState& s);
  void pumpCmaDone(SockState& s);
  bool finishCmaRecv(SockState& s, ProxyOp* op);
  void sendControl(SockState& s, uint32_t flags, uint32_t seq, bool droppable);
  void flushControl(SockState& s);
  void notifyPeer(SockState& s, std::atomic<uint32_t>& sleeping);
  void sendPeerFailedNotices();
  bool assignFrame(SockState& s);
  bool matchFrame(SockState& s);
  void setWriteInterest(SockState& s, bool on);
  void applyInterest(SockState& s, uint32_t want);
  void setReadInterest(SockState& s, bool on);
  void peerFailed(int peer, const std::string& what);
  // One round of progress, blocking up to timeoutMs for events unless waitingFor is already
  // finished. Called with progressMutex_ held.
  void progressOnce(int timeoutMs, const ProxyOp* waitingFor);
  void wake();
  void stopThread();

  ProxyParams params_;
  std::vector<PeerState> peers_;
  std::vector<SockState*> sockByIndex_;
  std::vector<SockState*> shmSocks_;  // the shared-memory connections
  std::atomic<uint64_t> shmBytes_{0};
  uint64_t shmMoved_ = 0;             // progress counter of the shm path (under progressMutex_)
  std::mutex tasksMutex_;
  std::vector<std::function<void()>> tasks_;
  int epollFd_ = -1;   // data path: every socket the waiting caller reads or writes
  int watchFd_ = -1;   // idle watcher: connection ends only
  int eventFd_ = -1;
  std::thread thread_;
  std::mutex stopMutex_;
  std::unordered_set<ProxyOp*> live_;  // posted and not finished; proxy thread only

  std::mutex incomingMutex_;
  std::vector<ProxyOp*> incoming_;
  std::atomic<bool> stopRequested_{false};
  bool started_ = false;

  mutable std::mutex errorMutex_;
  std::atomic<int> failure_{mixcclSuccess};
  std::string failureMessage_;

  // Held by whichever thread drives progress: a waiting caller, or the proxy thread when idle.
  // Everything below peers_ is touched only under it.
  std::mutex progressMutex_;
  bool failedHandled_ = false;
  int culprit_ = -1;  // the rank whose failure failed this communicator (-1: this rank's own)
};

}  // namespace mixccl
