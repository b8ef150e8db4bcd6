// The progress engine of a communicator. It knows no transport: it hands posted sends and
// receives to each peer's Connection (transport.h), drives the connections, blocks on their
// fds (spin first, then epoll), and keeps one control connection per peer for liveness:
// goodbyes, peer-failed notices and doorbells, whatever moves the data. The waiting caller
// drives progress itself; the progress thread takes over whenever nobody waits, watching for
// peers that go away. Failures go to the communicator's Health.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/health.h"
#include "base/result.h"
#include "bootstrap/socket.h"
#include "proxy/stall_tracker.h"
#include "transport/control_channel.h"
#include "transport/transport.h"

namespace mixccl {

// How long before a wait's deadline the proxy tells its peers whom it waits for
// (proxy_notices.cc), for a communicator timeout of timeoutS seconds.
Clock::duration waitingNoticeLead(double timeoutS);

struct ProxyParams {
  int rank = 0;
  int nranks = 1;
  int spinUs = 50;
  bool yieldWhileSpinning = true;  // more ranks on this host than CPUs
  double timeoutS = 300;           // the communicator's (MIXCCL_TIMEOUT_S): paces waiting notices
  std::vector<std::string> peerNames;  // "rank 3 (host)" for messages
};

// Where the pairs of a communicator that connects on demand come from (MIXCCL_CONNECT=lazy,
// core/lazy_connector.h): the proxy asks for a pair the first time a request names a peer it
// has no connection to, and adopts the pairs that peers dialled meanwhile.
class PairSource {
 public:
  virtual ~PairSource() = default;
  // Blocks until the pair with peer is connected (dialled by this rank or by the peer) or
  // failed: the pair's control connection and the connection that carries its data.
  virtual Result connectPeer(int peer, Socket* control, std::unique_ptr<Connection>* link) = 0;
  // A pair a peer dialled, ready to adopt; false when none waits. Cheap when none does.
  virtual bool takeAccepted(int* peer, Socket* control, std::unique_ptr<Connection>* link) = 0;
};

class Proxy : private TransportEvents {
 public:
  // control[p]: the control connection to peer p; conns[p]: the connection that carries its
  // data (both empty/null for this rank). health: the communicator's, outlives the proxy.
  Proxy(const ProxyParams& params, Health& health, std::vector<Socket> control,
        std::vector<std::unique_ptr<Connection>> conns);
  ~Proxy() override;
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Pairs missing from conns connect through source when first used (before start()).
  void setPairSource(PairSource* source) { pairs_ = source; }
  Result start();
  // Wakes whoever drives progress (a pair was accepted for it). Any thread.
  void wake();
  // How many peers this rank is connected to (mixcclCommInspect "connected_peers").
  int connectedPeers() const;
  // These peers failed and are gone for good (a shrink excluded them): each connection to one
  // removes what the peer left behind by name (Connection::peerGone). Any thread.
  void peersGone(const std::vector<int>& peers);
  // Thread-safe. Requests to one peer in one direction match the peer's in posting order.
  void post(TransportRequest* r);
  // Waits until r is finished or the deadline passes; on timeout the communicator is failed
  // (every pending request ends) so r's memory is no longer used when this returns.
  Result wait(TransportRequest* r, const Deadline& deadline);
  // Lets peers know this rank leaves cleanly, then stops the thread. Idempotent.
  void shutdownGracefully();
  // Stops at once: connections are cut, pending requests fail. Idempotent, any thread.
  void abort(const std::string& why);
  // mixcclCommRevoke: fails the communicator as revoked by this rank and tells every connected
  // peer (before it returns), which pass it on; pending and later requests fail. The proxy keeps
  // running (the communicator is only destroyed or shrunk afterwards). Any thread; nothing if
  // the communicator has already failed.
  void revoke();
  // Runs fn once on the progress thread (e.g. to bind that thread near the NIC). Any thread.
  void runOnProgressThread(std::function<void()> fn);
  // The transport serving peer ("shm", "socket", ...; "" for this rank).
  const char* transportName(int peer) const;
  // Its Connection::detail() ("" for this rank).
  std::string transportDetail(int peer) const;
  // mixcclIprobe: one round of progress without blocking, then whether the next message from
  // peer that no posted receive matches has begun to arrive (*bytes: its size). Thread-safe.
  // mixcclInvalidUsage where peer's transport cannot tell; the failure if the comm failed.
  Result probe(int peer, bool* arrived, uint64_t* bytes);
  // Bytes the named transport moved so far (tests, logging).
  uint64_t bytesMoved(const std::string& transport) const;

 private:
  struct Slot;

  // TransportEvents
  void complete(TransportRequest* r, Result result) override;
  void peerFailed(int peer, const std::string& what) override;
  void protocolError(int peer, const std::string& what) override;
  void callMismatch(int peer, uint64_t theirs, uint64_t mine) override;
  void callSizeMismatch(int peer, uint64_t mine, const std::string& sent, size_t posted) override;
  void peerLeft(int peer, bool pendingWork) override;
  void setInterest(Connection* c, int lane, int fd, uint32_t events) override;
  void ringDoorbell(int peer) override;
  bool failed() const override { return health_.failed(); }
  const std::string& peerName(int peer) const override { return params_.peerNames[peer]; }
  int rank() const override { return params_.rank; }

  void run();
  // wait(): drive progress until r is finished (progressMutex_ held); or sleep while another
  // thread drives (awaitDriver); a driver that leaves wakes the sleepers (handOver).
  void driveUntilFinished(TransportRequest* r, const Deadline& deadline,
                          std::unique_lock<std::mutex>& lock);
  void awaitDriver(TransportRequest* r, const Deadline& deadline,
                   std::unique_lock<std::mutex>& lock);
  void handOver();
  // Wakes the parked waiters, if any (after a request finished or the driver left).
  void wakeParked();
  void drainIncoming();
  void failEverything();
  void pumpControl(int peer);
  // A control frame that is a notice (peer-failed, waiting or mismatched calls); other frames
  // are left alone.
  void handleNotice(int from, const FrameHeader& h, const std::string& payload);
  void handlePeerFailedNotice(int from, const FrameHeader& h, const std::string& payload);
  void handleWaitingNotice(int from, const FrameHeader& h, const std::string& payload);
  void handleCallMismatchNotice(int from, const FrameHeader& notice);
  void handleRevokedNotice(int from, const FrameHeader& notice);
  // The failure notices already waiting on peer's control connection, handled now.
  void readNotices(int peer);
  // The size mismatch callSizeMismatch held back, as this rank's own failure.
  void failSizeMismatch();
  // The connection to peer broke: the communicator fails, naming peer and what happened.
  void failConnection(int peer, const std::string& what);
  // The stall bookkeeping (stall_tracker.h): how much moved with each peer waited for; this
  // rank's waits to every peer; the failure of a wait whose deadline passed.
  void sampleProgress(Clock::time_point now);
  void reportWaits(Clock::time_point now);
  void failOnTimeout(const TransportRequest* r);
  void applyInterest(int slot, uint32_t events);
  // One round of progress, blocking up to timeoutMs for events unless waitingFor is already
  // finished. Called with progressMutex_ held. True when something moved: a connection's poll()
  // said so or epoll reported events (wait() keeps spinning while data flows).
  bool progressOnce(int timeoutMs, const TransportRequest* waitingFor);
  // failEverything() the first time a round finds the communicator failed.
  void failOnceIfFailed();
  // Pairs connected on demand (pairs_): adopt the accepted ones; connect the one peer needs.
  void adoptAccepted();
  Result connectOnDemand(int peer);
  Result adopt(int peer, Socket control, std::unique_ptr<Connection> link);
  // Registers peer's control connection with both epoll sets.
  Result watchControl(int peer);
  void stopThread();
  std::string me() const { return "rank " + std::to_string(params_.rank); }

  ProxyParams params_;
  Health& health_;
  std::vector<ControlChannel> control_;
  std::vector<std::unique_ptr<Connection>> conns_;
  PairSource* pairs_ = nullptr;
  // Guards conns_' entries against readers outside progress (transportName, connectedPeers)
  // while a pair connected on demand is adopted.
  mutable std::mutex connsMutex_;
  std::vector<Connection*> polled_;          // connections that need a look every round
  std::vector<Slot> slots_;                  // registered fds; the epoll tag is the index
  std::vector<std::vector<int>> laneSlot_;   // [peer][lane] -> slot (-1: none yet)
  std::vector<int> controlSlot_;             // [peer] -> slot
  std::vector<bool> byeHeard_;               // the peer's goodbye arrived on its control link
  std::vector<bool> left_;                   // the peer's data stream ended cleanly
  std::mutex tasksMutex_;
  std::vector<std::function<void()>> tasks_;
  int epollFd_ = -1;   // data path: every fd the waiting caller reads or writes
  int watchFd_ = -1;   // idle watcher: control connection ends only
  int eventFd_ = -1;
  std::thread thread_;
  std::mutex stopMutex_;
  std::unordered_set<TransportRequest*> live_;  // posted and not finished (under progressMutex_)

  std::mutex incomingMutex_;
  std::vector<TransportRequest*> incoming_;
  std::atomic<size_t> incomingCount_{0};  // incoming_.size(), read without the lock
  std::atomic<bool> stopRequested_{false};
  bool started_ = false;

  // Held by whichever thread drives progress: a waiting caller, or the proxy thread when idle.
  // The connections, slots and live_ are touched only under it.
  std::mutex progressMutex_;
  // Threads waiting while another drives (awaitDriver): how many, and what wakes them.
  std::atomic<bool> driving_{false};  // a wait() holds progressMutex_ for its whole wait
  std::atomic<int> parked_{0};
  std::atomic<int> probing_{0};  // probes waiting for progressMutex_ (probe())
  std::mutex parkMutex_;
  std::condition_variable parkCv_;
  // A parked waiter's request whose deadline passed: the driver fails the communicator for it.
  std::atomic<TransportRequest*> overdue_{nullptr};
  bool failedHandled_ = false;
  StallTracker stalls_;
  // How often a waiting call looks at how much moved with each peer it waits for: the idle
  // times a timeout reports need no finer grain.
  static constexpr std::chrono::milliseconds kSampleEvery{10};
  // Spinning rounds per look at the clock and the deadline (wait()) and at the fds when
  // everything arrives through poll() (progressOnce()).
  static constexpr unsigned kSpinStride = 8;
  Clock::time_point nextSample_{};
  std::vector<uint64_t> progressScratch_;  // sampleProgress(): per peer
  Clock::duration reportLead_;             // waiting notices go out this long before a deadline
  // The wait list the peer-failed notice carries (failEverything), set with the failure it
  // explains: this rank's timeout, or one relayed from a peer; empty for other failures.
  std::string failureNotice_;
  int unpolledLanes_ = 0;      // lane fds of connections that poll() does not drive (sockets)
  unsigned fdlessRounds_ = 0;  // rounds that could skip epoll (progressOnce)
  int failureListener_ = -1;  // our wake-up in health_'s listeners
  // The notice of mismatched calls this rank found or heard of (flags 0: none), sent to every
  // peer when the communicator fails (kFrameFlagCallMismatch).
  FrameHeader mismatchNotice_{};
  // The rank that revoked the communicator (-1: not revoked), set before the failure it
  // explains: failEverything then passes the revoke on instead of a peer-failed notice.
  std::atomic<int> revokedBy_{-1};
  // A message too large for a receive that expected its call's stamp (callSizeMismatch): held
  // until `until` for the peer's notice naming both calls (peer -1: none).
  struct {
    int peer = -1;
    uint64_t mine = 0;
    std::string sent;
    size_t posted = 0;
    Clock::time_point until;
  } sizeMismatch_;
};

}  // namespace mixccl
