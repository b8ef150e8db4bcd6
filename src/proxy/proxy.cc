#include "proxy/proxy.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/auth.h"

namespace mixccl {

namespace {
constexpr uint64_t kEventFdTag = UINT64_MAX;
}  // namespace

// An fd in the data-path epoll set: a connection's lane, or a peer's control connection.
struct Proxy::Slot {
  int fd = -1;
  int peer = -1;
  int lane = -1;                 // -1: the control connection
  Connection* conn = nullptr;
  uint32_t events = 0;
  bool inEpoll = false;
};

Proxy::Proxy(const ProxyParams& params, Health& health, std::vector<Socket> control,
             std::vector<std::unique_ptr<Connection>> conns)
    : params_(params), health_(health), control_(params.nranks), conns_(std::move(conns)),
      laneSlot_(params.nranks), controlSlot_(params.nranks, -1), byeHeard_(params.nranks, false),
      left_(params.nranks, false), stalls_(params.rank, params.nranks),
      reportLead_(waitingNoticeLead(params.timeoutS)) {
  conns_.resize(params.nranks);
  for (int p = 0; p < params.nranks; ++p) {
    if ((size_t)p < control.size() && control[p].valid())
      control_[p] = ControlChannel(p, std::move(control[p]));
    if (conns_[p] && conns_[p]->needsPolling()) polled_.push_back(conns_[p].get());
  }
}

Proxy::~Proxy() {
  stopThread();
  conns_.clear();
  for (ControlChannel& c : control_) c.shutdown();
  if (epollFd_ >= 0) close(epollFd_);
  if (watchFd_ >= 0) close(watchFd_);
  if (eventFd_ >= 0) close(eventFd_);
}

Result Proxy::start() {
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  watchFd_ = epoll_create1(EPOLL_CLOEXEC);
  eventFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epollFd_ < 0 || watchFd_ < 0 || eventFd_ < 0)
    return raiseError(mixcclSystemError, "cannot create epoll/eventfd: %s", strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kEventFdTag;
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, eventFd_, &ev) != 0 ||
      epoll_ctl(watchFd_, EPOLL_CTL_ADD, eventFd_, &ev) != 0)
    return raiseError(mixcclSystemError, "epoll_ctl(eventfd): %s", strerror(errno));
  for (ControlChannel& c : control_)
    if (c.valid()) MIXCCL_CHECK(watchControl(c.peer()));
  for (std::unique_ptr<Connection>& c : conns_)
    if (c) MIXCCL_CHECK(c->start(this));
  failureListener_ = health_.onFailure([this] {
    if (started_) wake();
  });
  started_ = true;  // before the thread exists: a failure on that thread reads it
  thread_ = std::thread([this] {
    run();
    // Pairs connected on first use authenticated on this thread (OpenSSL): its state is freed
    // under the lock fork takes, not at the thread's exit (bootstrap/fork_guard.h).
    releaseThreadCrypto();
  });
  return mixcclSuccess;
}

Result Proxy::watchControl(int peer) {
  ControlChannel& c = control_[peer];
  MIXCCL_CHECK(setNonBlocking(c.fd(), true));
  Slot s;
  s.fd = c.fd();
  s.peer = peer;
  controlSlot_[peer] = (int)slots_.size();
  slots_.push_back(s);
  applyInterest(controlSlot_[peer], EPOLLIN | EPOLLRDHUP);
  // The idle watcher hears only of control connections that end (edge-triggered, once): a
  // peer's process that dies closes them whatever transport carries its data.
  epoll_event watch{};
  watch.events = EPOLLRDHUP | EPOLLET;
  watch.data.u64 = (uint64_t)controlSlot_[peer];
  if (epoll_ctl(watchFd_, EPOLL_CTL_ADD, c.fd(), &watch) != 0)
    return raiseError(mixcclSystemError, "epoll_ctl(watch): %s", strerror(errno));
  return mixcclSuccess;
}

// Called under progressMutex_. After a failure the pair is still taken in, so that the
// notice and the cut that failEverything sends reach the peer that just connected.
Result Proxy::adopt(int peer, Socket control, std::unique_ptr<Connection> link) {
  if (conns_[peer] || control_[peer].valid())
    return raiseError(mixcclInternalError, "%s: a second connection to %s", me().c_str(),
                      params_.peerNames[peer].c_str());
  control_[peer] = ControlChannel(peer, std::move(control));
  MIXCCL_CHECK(watchControl(peer));
  Connection* c = link.get();
  {
    std::lock_guard<std::mutex> lock(connsMutex_);
    conns_[peer] = std::move(link);
  }
  MIXCCL_CHECK(c->start(this));
  // After start(): a pair connected on first use learns there whether it drives its shared
  // worker (ucx, ofi), which is what decides whether it is polled.
  if (c->needsPolling()) polled_.push_back(c);
  if (failedHandled_) {
    const int culprit = health_.culprit();
    control_[peer].send(kFrameFlagPeerFailed, culprit >= 0 ? (uint32_t)culprit : UINT32_MAX,
                        false, failureNotice_);
    c->abandon();
    control_[peer].shutdown();
  }
  return mixcclSuccess;
}

void Proxy::adoptAccepted() {
  if (!pairs_) return;
  int peer = -1;
  Socket control;
  std::unique_ptr<Connection> link;
  while (pairs_->takeAccepted(&peer, &control, &link)) {
    Result r = adopt(peer, std::move(control), std::move(link));
    if (r != mixcclSuccess) health_.fail(r, threadLastError(), peer);
  }
}

// Called under progressMutex_: the blocking dial holds up this communicator's progress only,
// never the peer's (its acceptor thread answers without its proxy, lazy_connector.h).
Result Proxy::connectOnDemand(int peer) {
  Socket control;
  std::unique_ptr<Connection> link;
  Result r = pairs_->connectPeer(peer, &control, &link);
  if (r != mixcclSuccess) {
    health_.fail(r, threadLastError(), peer);
    return r;
  }
  return adopt(peer, std::move(control), std::move(link));
}

int Proxy::connectedPeers() const {
  std::lock_guard<std::mutex> lock(connsMutex_);
  int n = 0;
  for (const std::unique_ptr<Connection>& c : conns_) n += c ? 1 : 0;
  return n;
}

void Proxy::peersGone(const std::vector<int>& peers) {
  std::lock_guard<std::mutex> lock(connsMutex_);
  for (int p : peers)
    if (p >= 0 && p < (int)conns_.size() && conns_[p]) conns_[p]->peerGone();
}

void Proxy::runOnProgressThread(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(tasksMutex_);
    tasks_.push_back(std::move(fn));
  }
  if (started_) wake();
}

void Proxy::wake() {
  uint64_t one = 1;
  ssize_t rc = write(eventFd_, &one, sizeof(one));
  (void)rc;  // a full eventfd counter already means "wake up"
}

const char* Proxy::transportName(int peer) const {
  std::lock_guard<std::mutex> lock(connsMutex_);
  if (peer < 0 || peer >= params_.nranks || !conns_[peer]) return "";
  return conns_[peer]->transportName();
}

std::string Proxy::transportDetail(int peer) const {
  std::lock_guard<std::mutex> lock(connsMutex_);
  if (peer < 0 || peer >= params_.nranks || !conns_[peer]) return "";
  return conns_[peer]->detail();
}

uint64_t Proxy::bytesMoved(const std::string& transport) const {
  std::lock_guard<std::mutex> lock(connsMutex_);
  uint64_t n = 0;
  for (const std::unique_ptr<Connection>& c : conns_)
    if (c && transport == c->transportName()) n += c->bytesMoved();
  return n;
}

Result Proxy::probe(int peer, bool* arrived, uint64_t* bytes) {
  *arrived = false;
  *bytes = 0;
  // A waiting driver keeps the lock for the whole of its wait: it lets go for the probe.
  std::unique_lock<std::mutex> lock(progressMutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    probing_.fetch_add(1);
    wake();
    lock.lock();
    probing_.fetch_sub(1);
  }
  if (pairs_ && peer >= 0 && peer < params_.nranks && peer != params_.rank && !conns_[peer] &&
      !health_.failed())
    connectOnDemand(peer);
  Connection* c = peer >= 0 && peer < params_.nranks ? conns_[peer].get() : nullptr;
  if (!c && health_.failed()) {
    std::string why;
    Result failure = health_.error(&why);
    return raiseError(failure, "%s: the communicator has failed: %s", me().c_str(), why.c_str());
  }
  if (!c)
    return raiseError(mixcclInvalidUsage, "%s: no connection to probe for rank %d", me().c_str(),
                      peer);
  if (!c->canProbe())
    return raiseError(mixcclInvalidUsage, "%s: the %s transport to %s cannot probe for a "
                      "message (the socket and shared-memory transports can)", me().c_str(),
                      c->transportName(), params_.peerNames[peer].c_str());
  progressOnce(0, nullptr);
  if (health_.failed()) {
    std::string why;
    Result failure = health_.error(&why);
    return raiseError(failure, "%s: the communicator has failed: %s", me().c_str(), why.c_str());
  }
  *arrived = c->nextUnmatchedMessage(bytes);
  return mixcclSuccess;
}

void Proxy::post(TransportRequest* r) {
  r->state.store(TransportRequest::Pending, std::memory_order_relaxed);
  r->done = 0;
  r->assigned = 0;
  r->headerSent = false;
  r->knownTotal = UINT64_MAX;
  if (stopRequested_.load() || !started_) {
    Result failure = health_.error();
    r->result = failure != mixcclSuccess ? failure : mixcclInvalidUsage;
    r->state.store(TransportRequest::Failed, std::memory_order_release);
    return;
  }
  std::lock_guard<std::mutex> lock(incomingMutex_);
  incoming_.push_back(r);
  incomingCount_.store(incoming_.size(), std::memory_order_release);
  // No wake-up: the thread that waits for the request drives progress (see wait()).
}

void Proxy::complete(TransportRequest* r, Result result) {
  if (live_.erase(r)) stalls_.finished(r->peer, Clock::now());
  r->result = result;
  r->state.store(result == mixcclSuccess ? TransportRequest::Done : TransportRequest::Failed,
                 std::memory_order_release);
  // A waiter parked behind another thread's progress (awaitDriver) may be waiting for r.
  wakeParked();
}

void Proxy::stopThread() {
  std::lock_guard<std::mutex> lock(stopMutex_);
  stopRequested_.store(true);
  if (started_) {
    wake();
    if (thread_.joinable()) thread_.join();
  }
  if (failureListener_ >= 0) health_.removeListener(failureListener_);
  failureListener_ = -1;
}

void Proxy::abort(const std::string& why) {
  health_.fail(mixcclInvalidUsage, why);
  stopThread();
  // Cut the control connections so peers notice at once (no goodbye: this is not a clean
  // exit); a caller still waiting cuts the data connections as it fails its requests.
  for (ControlChannel& c : control_) c.shutdown();
}

void Proxy::shutdownGracefully() {
  if (stopRequested_.load()) return;
  stopThread();
  if (health_.failed()) return;
  std::lock_guard<std::mutex> lock(progressMutex_);
  // The data streams end first, so the goodbye on the control connection follows them.
  for (std::unique_ptr<Connection>& c : conns_)
    if (c) c->goodbye();
  for (ControlChannel& c : control_) c.send(kFrameFlagBye, 0, false);
}

// Registers exactly the events in want for the slot with the data-path epoll set (none:
// removed).
void Proxy::applyInterest(int slot, uint32_t want) {
  Slot& s = slots_[slot];
  if (want == s.events && s.inEpoll == (want != 0)) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = (uint64_t)slot;
  if (want == 0) {
    if (s.inEpoll) epoll_ctl(epollFd_, EPOLL_CTL_DEL, s.fd, nullptr);
    s.inEpoll = false;
  } else if (!s.inEpoll) {
    epoll_ctl(epollFd_, EPOLL_CTL_ADD, s.fd, &ev);
    s.inEpoll = true;
  } else {
    epoll_ctl(epollFd_, EPOLL_CTL_MOD, s.fd, &ev);
  }
  s.events = want;
}

void Proxy::setInterest(Connection* c, int lane, int fd, uint32_t events) {
  std::vector<int>& lanes = laneSlot_[c->peer()];
  if ((size_t)lane >= lanes.size()) lanes.resize(lane + 1, -1);
  if (lanes[lane] < 0) {
    Slot s;
    s.fd = fd;
    s.peer = c->peer();
    s.lane = lane;
    s.conn = c;
    lanes[lane] = (int)slots_.size();
    slots_.push_back(s);
    if (!c->needsPolling()) ++unpolledLanes_;
  }
  applyInterest(lanes[lane], events);
}

void Proxy::ringDoorbell(int peer) { control_[peer].send(kFrameFlagDoorbell, 0, true); }

void Proxy::drainIncoming() {
  adoptAccepted();
  // Most rounds of a wait find nothing new: an atomic look spares them the lock.
  if (incomingCount_.load(std::memory_order_acquire) == 0) return;
  std::vector<TransportRequest*> reqs;
  {
    std::lock_guard<std::mutex> lock(incomingMutex_);
    reqs.swap(incoming_);
    incomingCount_.store(0, std::memory_order_release);
  }
  const auto now = Clock::now();
  for (TransportRequest* r : reqs) {
    live_.insert(r);
    stalls_.posted(r->peer, now);
    if (pairs_ && r->peer >= 0 && r->peer < params_.nranks && r->peer != params_.rank &&
        !conns_[r->peer] && !health_.failed())
      connectOnDemand(r->peer);
    Connection* c = r->peer >= 0 && r->peer < params_.nranks ? conns_[r->peer].get() : nullptr;
    if (health_.failed()) {
      complete(r, health_.error());
    } else if (!c) {
      complete(r, raiseError(mixcclInternalError, "request posted to peer %d", r->peer));
    } else if (left_[r->peer]) {
      health_.fail(mixcclRemoteError, params_.peerNames[r->peer] +
                                          " has left the communicator (destroyed it) but an "
                                          "operation with it was posted");
      complete(r, mixcclRemoteError);
    } else if (!c->canMove(r->memory)) {
      complete(r, raiseError(mixcclInvalidUsage, "%s: the %s transport to %s cannot move device "
                                                 "memory", me().c_str(), c->transportName(),
                             params_.peerNames[r->peer].c_str()));
    } else if (r->kind == TransportRequest::Kind::Send) {
      c->postSend(r);
    } else {
      c->postRecv(r);
    }
  }
}

void Proxy::failEverything() {
  Result code = health_.error();
  // Tell every peer which rank caused the failure (after a timeout: whom it was blamed on, with
  // the list of waits, proxy_notices.cc); the cut that follows is the signal that always
  // arrives.
  int culprit = health_.culprit();
  uint32_t who = culprit >= 0 ? (uint32_t)culprit : UINT32_MAX;
  // A revoke is passed on only where it is the failure (revoke() and the notice set revokedBy_
  // before they fail the communicator; the culprit says whether theirs came first).
  const int revokedBy = revokedBy_.load();
  const bool revoked = revokedBy >= 0 && culprit == (revokedBy == params_.rank ? -1 : revokedBy);
  for (ControlChannel& c : control_) {
    if (!c.valid()) continue;
    // Mismatched calls: every rank hears of both calls, not of a failed rank.
    if (mismatchNotice_.flags == kFrameFlagCallMismatch) c.send(mismatchNotice_);
    else if (revoked) c.send(kFrameFlagRevoked, (uint32_t)revokedBy, false);
    else if (c.peer() != culprit) c.send(kFrameFlagPeerFailed, who, false, failureNotice_);
  }
  // Connections let go of every request first: a library transport (UCX) may still write into
  // a receive's buffer until it has cancelled it, and the poster may reuse the buffer as soon
  // as the request is failed. Requests the abandon finished are no longer live.
  for (std::unique_ptr<Connection>& c : conns_)
    if (c) c->abandon();
  if (culprit >= 0 && culprit < (int)conns_.size() && conns_[culprit]) conns_[culprit]->peerGone();
  std::vector<TransportRequest*> reqs(live_.begin(), live_.end());
  for (TransportRequest* r : reqs) complete(r, code);
  for (size_t i = 0; i < slots_.size(); ++i) applyInterest((int)i, 0);
  for (ControlChannel& c : control_) c.shutdown();
}

void Proxy::failOnceIfFailed() {
  if (failedHandled_ || !health_.failed()) return;
  failEverything();
  failedHandled_ = true;
}

bool Proxy::progressOnce(int timeoutMs, const TransportRequest* waitingFor) {
  drainIncoming();
  failOnceIfFailed();
  if (failedHandled_) drainIncoming();  // posts after the failure end at once
  bool moved = false;
  for (Connection* c : polled_) moved = c->poll() || moved;
  // Starting the new sends may already have finished the awaited request: then do not block.
  if (waitingFor && waitingFor->stateNow() != TransportRequest::Pending) timeoutMs = 0;
  // Before we block, every connection arranges to be woken: rings set their doorbell flags,
  // a library's wait fd is armed (fi_trywait); false means work came in meanwhile.
  bool armed = false;
  if (timeoutMs > 0 && !failedHandled_) {
    armed = true;
    bool quiet = true;
    for (std::unique_ptr<Connection>& c : conns_)
      if (c) quiet = c->prepareToBlock() && quiet;
    if (!quiet || (waitingFor && waitingFor->stateNow() != TransportRequest::Pending) ||
        health_.failed())
      timeoutMs = 0;
  }
  // A spinning wait's round whose data all arrives through poll() (UCX, libfabric without a
  // wait fd, shared memory) looks at the fds only every kSpinStride-th time: there they
  // announce control traffic (failures, goodbyes), which may wait a few rounds, and wait fds,
  // which matter only when armed. Not the progress thread's or a probe's single round: that
  // one is the look.
  if (waitingFor && timeoutMs == 0 && !armed && unpolledLanes_ == 0 && !polled_.empty() &&
      ++fdlessRounds_ % kSpinStride != 0) {
    failOnceIfFailed();
    return moved;
  }
  epoll_event events[64];
  int n = epoll_wait(epollFd_, events, 64, timeoutMs);
  if (armed)
    for (std::unique_ptr<Connection>& c : conns_)
      if (c) c->afterBlock();
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u64 == kEventFdTag) {
      uint64_t v;
      ssize_t rc = read(eventFd_, &v, sizeof(v));
      (void)rc;
      continue;
    }
    const Slot& s = slots_[events[i].data.u64];
    if (s.lane < 0)
      pumpControl(s.peer);
    else
      s.conn->onEvent(s.lane, events[i].events);
  }
  failOnceIfFailed();
  return moved || n > 0;
}

// The progress thread proper: between calls (and whenever nobody waits) it watches for
// control connections that end and for failures, so a dead peer is noticed, logged and
// reported by mixcclCommGetAsyncError without any call in flight.
void Proxy::run() {
  setLogRank(params_.rank);
  epoll_event events[16];
  while (!stopRequested_.load()) {
    int n = epoll_wait(watchFd_, events, 16, 1000);
    if (stopRequested_.load()) break;
    std::vector<std::function<void()>> tasks;
    {
      std::lock_guard<std::mutex> lock(tasksMutex_);
      tasks.swap(tasks_);
    }
    for (auto& task : tasks) task();
    if (n <= 0) continue;
    std::lock_guard<std::mutex> lock(progressMutex_);
    progressOnce(0, nullptr);
  }
  // Whatever is still pending when the thread stops can never finish.
  std::lock_guard<std::mutex> lock(progressMutex_);
  drainIncoming();
  if (!live_.empty()) {
    health_.fail(mixcclInvalidUsage, me() + ": communicator stopped with operations pending");
    failEverything();
  }
}

}  // namespace mixccl
