#include "proxy/proxy.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "core/error.h"
#include "core/log.h"

namespace mixccl {

// Flag of the last frame a rank sends on each connection when it leaves cleanly, so that the
// end of the connection that follows is not mistaken for a crash.
constexpr uint32_t kFrameFlagBye = 1u;
// Flag of a notice a failing rank sends before it cuts its connections: seq carries the rank
// that failed (UINT32_MAX: the sender itself, e.g. after a timeout), so that ranks hearing of
// the failure second-hand still name the rank that caused it.
constexpr uint32_t kFrameFlagPeerFailed = 2u;
// Frames are at least this large (unless the message is smaller) so that splitting a message
// across connections does not cost more in headers and system calls than it gains.
constexpr size_t kMinFrameBytes = 64 << 10;
constexpr uint64_t kEventFdTag = UINT64_MAX;
// Read-ahead buffer per connection: frames with payloads below half of it cost one read.
constexpr size_t kStageBytes = 16 << 10;
// Largest frame in a shared-memory ring: the ring is a byte stream, frames only need to be few.
constexpr size_t kShmFrameBytes = 16 << 20;

struct Proxy::SockState {
  int fd = -1;
  int peer = -1;
  int index = -1;          // position in sockByIndex_, the epoll tag
  bool inEpoll = false;
  uint32_t events = 0;
  bool byeReceived = false;
  // Send side: the frame being written.
  ProxyOp* sendOp = nullptr;
  FrameHeader sendHdr{};
  size_t sendHdrDone = 0;
  size_t sendBodyDone = 0;
  // Receive side: the frame being read.
  FrameHeader recvHdr{};
  std::vector<char> stage;  // bytes read ahead of the current frame
  size_t stageBegin = 0;
  size_t stageEnd = 0;
  size_t lastFrameBytes = 0;  // payload of the previous frame: predicts the next one
  ProxyOp* recvOp = nullptr;
  size_t recvBodyDone = 0;
  bool paused = false;     // holds a header for a receive that is not posted yet
  // Shared-memory peer: the frames travel through shm's rings; fd is the control connection
  // (goodbyes, failure notices, doorbells) and tells of the peer's death.
  ShmLink* shm = nullptr;
  bool sendIsCma = false;        // the frame being written carries sendDesc
  CmaDescriptor sendDesc{};
  std::deque<ProxyOp*> cmaSends; // descriptors written, waiting for the peer's cmaDone
  uint64_t cmaAcked = 0;         // cmaDone counted so far
  bool recvIsCma = false;        // the frame being read is a descriptor (into recvDesc)
  CmaDescriptor recvDesc{};
  FrameHeader ctrlHdr{};         // control frame being read
  size_t ctrlDone = 0;
  bool ctrlBye = false;          // the peer said goodbye on the control connection
  std::string ctrlOut;           // control bytes not yet written
};

struct Proxy::PeerState {
  std::vector<Socket> sockets;
  std::vector<SockState> socks;
  std::deque<ProxyOp*> sendQueue;  // sends with bytes not yet cut into frames, in seq order
  std::deque<ProxyOp*> recvSlots;  // posted receives by seq from recvBase; nullptr = finished
  std::unique_ptr<ShmLink> shm;    // same-host peer through shared memory (socks[0] uses it)
  uint32_t nextSendSeq = 0;
  uint32_t nextRecvSeq = 0;
  uint32_t recvBase = 0;
  int byes = 0;
  bool left = false;               // said goodbye on every connection
};

Proxy::Proxy(const ProxyParams& params, std::vector<std::vector<Socket>> conns,
             std::vector<std::unique_ptr<ShmLink>> shm)
    : params_(params), peers_(params.nranks) {
  for (int p = 0; p < params.nranks; ++p) {
    PeerState& ps = peers_[p];
    ps.sockets = std::move(conns[p]);
    ps.socks.resize(ps.sockets.size());
    for (size_t i = 0; i < ps.sockets.size(); ++i) {
      ps.socks[i].fd = ps.sockets[i].fd();
      ps.socks[i].peer = p;
      ps.socks[i].stage.resize(kStageBytes);
    }
    if ((size_t)p < shm.size() && shm[p] && !ps.socks.empty()) {
      ps.shm = std::move(shm[p]);
      ps.socks[0].shm = ps.shm.get();
      shmSocks_.push_back(&ps.socks[0]);
    }
  }
  for (PeerState& ps : peers_)
    for (SockState& s : ps.socks) {
      s.index = (int)sockByIndex_.size();
      sockByIndex_.push_back(&s);
    }
}

Proxy::~Proxy() {
  stopThread();
  for (PeerState& ps : peers_)
    for (Socket& s : ps.sockets) s.shutdown();
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
  for (SockState* s : sockByIndex_) {
    MIXCCL_CHECK(setNonBlocking(s->fd, true));
    setReadInterest(*s, true);
    // The idle watcher hears only of connections that end (edge-triggered, once).
    epoll_event watch{};
    watch.events = EPOLLRDHUP | EPOLLET;
    watch.data.u64 = (uint64_t)s->index;
    if (epoll_ctl(watchFd_, EPOLL_CTL_ADD, s->fd, &watch) != 0)
      return raiseError(mixcclSystemError, "epoll_ctl(watch): %s", strerror(errno));
  }
  started_ = true;  // before the thread exists: fail() on that thread reads it
  thread_ = std::thread([this] { run(); });
  return mixcclSuccess;
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

void Proxy::post(ProxyOp* op) {
  op->state.store(ProxyOp::Pending, std::memory_order_relaxed);
  op->done = 0;
  op->assigned = 0;
  op->headerSent = false;
  op->knownTotal = UINT64_MAX;
  if (stopRequested_.load() || !started_) {
    std::lock_guard<std::mutex> lock(errorMutex_);
    op->result = failure_.load() != mixcclSuccess ? (Result)failure_.load() : mixcclInvalidUsage;
    op->state.store(ProxyOp::Failed, std::memory_order_release);
    return;
  }
  std::lock_guard<std::mutex> lock(incomingMutex_);
  incoming_.push_back(op);
  // No wake-up: the thread that waits for the op drives progress (see wait()).
}

void Proxy::finishOp(ProxyOp* op, int state, Result r) {
  live_.erase(op);
  op->result = r;
  op->state.store(state, std::memory_order_release);
}

Result Proxy::wait(ProxyOp* op, const Deadline& deadline) {
  if (op->stateNow() == ProxyOp::Pending) {
    // The waiting thread moves the bytes itself: handing each event to another thread costs a
    // wake-up per message, which dominates small-message latency (docs/architecture.md).
    std::lock_guard<std::mutex> lock(progressMutex_);
    auto spinEnd = Clock::now() + std::chrono::microseconds(params_.spinUs);
    bool timedOut = false;
    while (op->stateNow() == ProxyOp::Pending) {
      bool spinning = Clock::now() < spinEnd;
      progressOnce(spinning ? 0 : std::max(1, deadline.remainingMs(100)), op);
      // Polling, but giving the core away at once if anyone else wants it: with more ranks
      // than cores, the peer we wait for may need exactly this core.
      if (spinning && op->stateNow() == ProxyOp::Pending) sched_yield();
      if (op->stateNow() == ProxyOp::Pending && !timedOut && deadline.expired()) {
        timedOut = true;
        fail(mixcclTimeout, "rank " + std::to_string(params_.rank) + ": an operation with " +
                                params_.peerNames[op->peer] +
                                " did not complete within the timeout (MIXCCL_TIMEOUT_S)");
      }
    }
  }
  if (op->stateNow() == ProxyOp::Done) return mixcclSuccess;
  std::string msg;
  error(&msg);
  return adoptError(op->result, msg);
}

void Proxy::fail(Result code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (failure_.load() != mixcclSuccess) return;
    failureMessage_ = message;
    failure_.store(code);
  }
  raiseError(code, "%s", message.c_str());
  if (started_) wake();
}

Result Proxy::error(std::string* message) const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  if (message) *message = failureMessage_;
  return (Result)failure_.load();
}

void Proxy::stopThread() {
  std::lock_guard<std::mutex> lock(stopMutex_);
  stopRequested_.store(true);
  if (started_) {
    wake();
    if (thread_.joinable()) thread_.join();
  }
}

void Proxy::abort(const std::string& why) {
  fail(mixcclInvalidUsage, why);
  stopThread();
  // Cut the connections so peers notice at once (no goodbye: this is not a clean exit).
  for (PeerState& ps : peers_)
    for (Socket& s : ps.sockets) s.shutdown();
}

void Proxy::shutdownGracefully() {
  if (stopRequested_.load()) return;
  stopThread();
  if (failure_.load() != mixcclSuccess) return;
  FrameHeader bye{kFrameMagic, 0, 0, 0, 0, kFrameFlagBye};
  for (PeerState& ps : peers_)
    for (size_t i = 0; i < ps.sockets.size(); ++i) {
      // Only a connection with no half-written frame can carry a clean goodbye.
      if (ps.socks[i].sendOp) continue;
      if (ps.socks[i].shm) {
        // The ring's end comes after its last frame; the control goodbye stops the peer from
        // reading the connection's end as a crash.
        ps.socks[i].shm->out.header()->closed.store(1, std::memory_order_seq_cst);
        sendControl(ps.socks[i], kFrameFlagBye, 0, false);
        continue;
      }
      // Best effort and silent: a peer that already left needs no goodbye.
      ssize_t rc = send(ps.sockets[i].fd(), &bye, sizeof(bye), MSG_NOSIGNAL | MSG_DONTWAIT);
      (void)rc;
    }
}

// Registers exactly the events in want for s with the data-path epoll set (none: removed).
void Proxy::applyInterest(SockState& s, uint32_t want) {
  if (want == s.events && s.inEpoll == (want != 0)) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = (uint64_t)s.index;
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

void Proxy::setReadInterest(SockState& s, bool on) {
  applyInterest(s, (on ? (uint32_t)(EPOLLIN | EPOLLRDHUP) : 0u) | (s.events & EPOLLOUT));
}

void Proxy::setWriteInterest(SockState& s, bool on) {
  applyInterest(s, (s.events & ~(uint32_t)EPOLLOUT) | (on ? (uint32_t)EPOLLOUT : 0u));
}

void Proxy::drainIncoming() {
  std::vector<ProxyOp*> ops;
  {
    std::lock_guard<std::mutex> lock(incomingMutex_);
    if (incoming_.empty()) return;
    ops.swap(incoming_);
  }
  std::vector<int> sendPeers, recvPeers;
  for (ProxyOp* op : ops) {
    live_.insert(op);
    PeerState& ps = peers_[std::min(std::max(op->peer, 0), params_.nranks - 1)];
    if (failure_.load() != mixcclSuccess) {
      finishOp(op, ProxyOp::Failed, (Result)failure_.load());
    } else if (op->peer == params_.rank || op->peer < 0 || op->peer >= params_.nranks) {
      finishOp(op, ProxyOp::Failed, raiseError(mixcclInternalError, "op posted to peer %d", op->peer));
    } else if (ps.left) {
      fail(mixcclRemoteError, params_.peerNames[op->peer] +
                                  " has left the communicator (destroyed it) but an operation "
                                  "with it was posted");
      finishOp(op, ProxyOp::Failed, mixcclRemoteError);
    } else if (op->kind == ProxyOp::Kind::Send) {
      op->seq = ps.nextSendSeq++;
      ps.sendQueue.push_back(op);
      sendPeers.push_back(op->peer);
    } else {
      op->seq = ps.nextRecvSeq++;
      ps.recvSlots.push_back(op);
      recvPeers.push_back(op->peer);
    }
  }
  for (int p : recvPeers) {
    for (SockState& s : peers_[p].socks) {
      if (!s.paused) continue;
      s.paused = false;
      if (!s.shm) setReadInterest(s, true);
      if (matchFrame(s)) pumpRecv(s);
    }
  }
  for (int p : sendPeers)
    for (SockState& s : peers_[p].socks) pumpSend(s);
}

bool Proxy::assignFrame(SockState& s) {
  PeerState& ps = peers_[s.peer];
  if (ps.sendQueue.empty()) return false;
  // A shared-memory peer's other connections (MIXCCL_NSOCKS_PERPEER) carry no data.
  if (ps.shm && !s.shm) return false;
  ProxyOp* op = ps.sendQueue.front();
  if (s.shm && s.shm->cmaSend && op->assigned == 0 && op->bytes >= s.shm->cmaThreshold) {
    // Large message: the receiver copies it straight from our memory (one copy).
    s.sendHdr = FrameHeader{kFrameMagic, op->seq, op->bytes, 0, (uint32_t)sizeof(CmaDescriptor),
                            kFrameFlagCma};
    s.sendDesc = CmaDescriptor{(uint64_t)(uintptr_t)op->buf, op->bytes};
    s.sendIsCma = true;
    s.sendOp = op;
    s.sendHdrDone = 0;
    s.sendBodyDone = 0;
    op->assigned = op->bytes;
    op->headerSent = true;
    ps.sendQueue.pop_front();
    return true;
  }
  size_t nsocks = ps.shm ? 1 : ps.socks.size();
  size_t share = (op->bytes + nsocks - 1) / nsocks;
  size_t frame = s.shm ? kShmFrameBytes
                       : std::min(params_.frameBytes, std::max(kMinFrameBytes, share));
  size_t len = std::min(frame, op->bytes - op->assigned);
  s.sendHdr = FrameHeader{kFrameMagic, op->seq, op->bytes, op->assigned, (uint32_t)len, 0};
  s.sendOp = op;
  s.sendHdrDone = 0;
  s.sendBodyDone = 0;
  op->assigned += len;
  op->headerSent = true;
  if (op->assigned == op->bytes) ps.sendQueue.pop_front();
  return true;
}

void Proxy::pumpSend(SockState& s) {
  while (failure_.load() == mixcclSuccess) {
    if (!s.sendOp && !assignFrame(s)) {
      setWriteInterest(s, false);
      return;
    }
    iovec iov[2];
    int n = 0;
    if (s.sendHdrDone < sizeof(FrameHeader)) {
      iov[n].iov_base = reinterpret_cast<char*>(&s.sendHdr) + s.sendHdrDone;
      iov[n].iov_len = sizeof(FrameHeader) - s.sendHdrDone;
      ++n;
    }
    size_t bodyLeft = s.sendHdr.length - s.sendBodyDone;
    if (bodyLeft > 0) {
      iov[n].iov_base = s.sendIsCma ? reinterpret_cast<char*>(&s.sendDesc) + s.sendBodyDone
                                    : s.sendOp->buf + s.sendHdr.offset + s.sendBodyDone;
      iov[n].iov_len = bodyLeft;
      ++n;
    }
    ssize_t k = n ? streamSend(s, iov, n) : 0;
    if (k < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // A full ring has no fd to wait on: progressOnce polls it (and sleeps on its doorbell).
        if (!s.shm) setWriteInterest(s, true);
        return;
      }
      if (errno == EINTR) continue;
      peerFailed(s.peer, std::string("send failed: ") + strerror(errno));
      return;
    }
    size_t hdrPart = std::min((size_t)k, sizeof(FrameHeader) - s.sendHdrDone);
    s.sendHdrDone += hdrPart;
    s.sendBodyDone += (size_t)k - hdrPart;
    if (s.sendHdrDone == sizeof(FrameHeader) && s.sendBodyDone == s.sendHdr.length) {
      ProxyOp* op = s.sendOp;
      s.sendOp = nullptr;
      if (s.sendIsCma) {
        // Finished when the receiver says it has copied the message (cmaDone).
        s.sendIsCma = false;
        s.cmaSends.push_back(op);
        continue;
      }
      op->done += s.sendHdr.length;
      if (op->done == op->bytes && op->assigned == op->bytes && op->headerSent)
        finishOp(op, ProxyOp::Done, mixcclSuccess);
    }
  }
}

// Finds the posted receive for the header just read; pauses the connection when that receive
// is not posted yet (the bytes wait in the kernel, never in an unbounded buffer of ours).
bool Proxy::matchFrame(SockState& s) {
  PeerState& ps = peers_[s.peer];
  const FrameHeader& h = s.recvHdr;
  // Invariant: recvBase + recvSlots.size() == nextRecvSeq.
  uint32_t idx = h.seq - ps.recvBase;
  if (h.magic == kFrameMagic && idx >= ps.recvSlots.size() && idx < (1u << 31)) {
    s.paused = true;
    if (!s.shm) setReadInterest(s, false);  // a ring pauses by not being read
    return false;
  }
  ProxyOp* op = (h.magic == kFrameMagic && idx < ps.recvSlots.size()) ? ps.recvSlots[idx] : nullptr;
  // Descriptors only where this rank can read the peer's memory; anywhere else, bad flags.
  bool cma = s.shm && s.shm->cmaRecv && h.flags == kFrameFlagCma;
  FrameCheck check = !op ? (h.magic == kFrameMagic ? FrameCheck::OutOfBounds : FrameCheck::BadMagic)
                     : cma ? validateCmaFrame(h, op->bytes, op->done, op->knownTotal)
                           : validateFrame(h, op->bytes, op->done, op->knownTotal);
  if (check != FrameCheck::Ok) {
    std::string detail = std::string("sent an invalid frame: ") + frameCheckName(check);
    if (op && check == FrameCheck::SizeMismatch)
      detail = "sent a message of " + std::to_string(h.total) + " bytes to a receive of " +
               std::to_string(op->bytes) + " bytes (mismatched calls?)";
    fail(mixcclRemoteError,
         "rank " + std::to_string(params_.rank) + ": " + params_.peerNames[s.peer] + " " + detail);
    return false;
  }
  op->knownTotal = h.total;
  s.recvOp = op;
  s.recvIsCma = cma;
  s.recvBodyDone = 0;
  return true;
}

void Proxy::peerFailed(int peer, const std::string& what) {
  if (stopRequested_.load()) return;
  if (failure_.load() == mixcclSuccess) culprit_ = peer;
  fail(mixcclRemoteError, "rank " + std::to_string(params_.rank) + ": connection to " +
                              params_.peerNames[peer] + " failed: " + what);
}

// Reads what the connection has into the staging buffer. False when nothing more can be read
// now (or the connection failed, which is then recorded).
bool Proxy::fillStage(SockState& s, size_t want) {
  if (s.stageBegin > 0) {
    memmove(s.stage.data(), s.stage.data() + s.stageBegin, s.stageEnd - s.stageBegin);
    s.stageEnd -= s.stageBegin;
    s.stageBegin = 0;
  }
  size_t room = std::min(want, s.stage.size() - s.stageEnd);
  for (;;) {
    ssize_t k = streamRecv(s, s.stage.data() + s.stageEnd, room);
    if (k > 0) {
      s.stageEnd += (size_t)k;
      return true;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (k == 0 && s.shm && !s.recvOp && s.stageBegin == s.stageEnd) {
      handleBye(s);  // the ring ended cleanly between frames
      return false;
    }
    peerFailed(s.peer, k == 0 ? "it closed the connection (process ended or crashed)"
                              : std::string("receive failed: ") + strerror(errno));
    return false;
  }
}

void Proxy::handleBye(SockState& s) {
  s.byeReceived = true;
  setReadInterest(s, false);
  setWriteInterest(s, false);
  PeerState& ps = peers_[s.peer];
  if (++ps.byes < (int)ps.socks.size()) return;
  ps.left = true;
  bool pending = !ps.sendQueue.empty();
  for (ProxyOp* op : ps.recvSlots) pending = pending || op != nullptr;
  for (SockState& o : ps.socks) pending = pending || o.sendOp;
  if (pending)
    fail(mixcclRemoteError, "rank " + std::to_string(params_.rank) + ": " +
                                params_.peerNames[s.peer] +
                                " destroyed the communicator with operations pending");
}

// Small frames arrive through a staging buffer (header and payload in one system call);
// the payload of a large frame is read straight into the user's buffer.
void Proxy::pumpRecv(SockState& s) {
  while (failure_.load() == mixcclSuccess && !s.paused && !s.byeReceived) {
    if (!s.recvOp) {
      if (s.stageEnd - s.stageBegin < sizeof(FrameHeader)) {
        // After a large frame the next is likely large too: read just its header, so the
        // payload goes straight to the user's buffer instead of through the stage.
        size_t want = s.lastFrameBytes >= s.stage.size() / 2
                          ? sizeof(FrameHeader) - (s.stageEnd - s.stageBegin)
                          : s.stage.size();
        if (!fillStage(s, want)) return;
        continue;
      }
      memcpy(&s.recvHdr, s.stage.data() + s.stageBegin, sizeof(FrameHeader));
      s.stageBegin += sizeof(FrameHeader);
      if (s.recvHdr.magic == kFrameMagic && s.recvHdr.flags == kFrameFlagBye) {
        handleBye(s);
        return;
      }
      if (s.recvHdr.magic == kFrameMagic && s.recvHdr.flags == kFrameFlagPeerFailed) {
        handlePeerFailedNotice(s.peer, s.recvHdr.seq);
        return;
      }
      if (!matchFrame(s)) return;
    }
    ProxyOp* op = s.recvOp;
    char* dst = s.recvIsCma ? reinterpret_cast<char*>(&s.recvDesc) + s.recvBodyDone
                            : op->buf + s.recvHdr.offset + s.recvBodyDone;
    size_t left = s.recvHdr.length - s.recvBodyDone;
    size_t staged = s.stageEnd - s.stageBegin;
    if (left > 0 && staged > 0) {
      size_t n = std::min(left, staged);
      memcpy(dst, s.stage.data() + s.stageBegin, n);
      s.stageBegin += n;
      s.recvBodyDone += n;
      continue;
    }
    if (left > 0 && left < s.stage.size() / 2) {
      if (!fillStage(s, s.stage.size())) return;
      continue;
    }
    if (left > 0) {
      // A large body goes straight to the user's buffer, and the next frame's header (when it
      // is already there) into the empty stage in the same system call.
      size_t extra = 0;
      s.stageBegin = s.stageEnd = 0;  // empty here (staged == 0)
      ssize_t k = streamRecv(s, dst, left, s.stage.data(), sizeof(FrameHeader), &extra);
      if (k <= 0) {
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        peerFailed(s.peer, k == 0 ? "it closed the connection in the middle of a message"
                                  : std::string("receive failed: ") + strerror(errno));
        return;
      }
      s.stageEnd = extra;
      s.recvBodyDone += (size_t)k;
      if (s.recvBodyDone < s.recvHdr.length) continue;
    }
    s.recvOp = nullptr;
    s.lastFrameBytes = s.recvHdr.length;
    if (s.recvIsCma) {
      s.recvIsCma = false;
      if (!finishCmaRecv(s, op)) return;
    } else {
      op->done += s.recvHdr.length;
    }
    if (op->done == op->knownTotal) {
      PeerState& ps = peers_[s.peer];
      ps.recvSlots[op->seq - ps.recvBase] = nullptr;
      while (!ps.recvSlots.empty() && ps.recvSlots.front() == nullptr) {
        ps.recvSlots.pop_front();
        ++ps.recvBase;
      }
      finishOp(op, ProxyOp::Done, mixcclSuccess);
      // Let the waiter look before another read; level-triggered epoll brings us back.
      if (s.stageBegin == s.stageEnd) return;
    }
  }
}

void Proxy::handlePeerFailedNotice(int from, uint32_t who) {
  std::string culprit = who < (uint32_t)params_.nranks && (int)who != params_.rank
                            ? params_.peerNames[who]
                            : params_.peerNames[from];
  if (failure_.load() == mixcclSuccess) culprit_ = who < (uint32_t)params_.nranks ? (int)who : from;
  fail(mixcclRemoteError, "rank " + std::to_string(params_.rank) + ": " + culprit +
                              " failed (reported by " + params_.peerNames[from] + ")");
}

// Tells every peer which rank caused the failure, on connections that are between frames.
void Proxy::sendPeerFailedNotices() {
  uint32_t who = culprit_ >= 0 ? (uint32_t)culprit_ : UINT32_MAX;
  FrameHeader notice{kFrameMagic, who, 0, 0, 0, kFrameFlagPeerFailed};
  for (int p = 0; p < params_.nranks; ++p) {
    if (p == culprit_) continue;
    PeerState& ps = peers_[p];
    for (size_t i = 0; i < ps.socks.size(); ++i) {
      if (ps.socks[i].shm) {
        sendControl(ps.socks[i], kFrameFlagPeerFailed, who, false);
        continue;
      }
      if (ps.socks[i].sendOp) continue;
      ssize_t rc = send(ps.socks[i].fd, &notice, sizeof(notice), MSG_NOSIGNAL | MSG_DONTWAIT);
      (void)rc;  // best effort: the cut that follows is the signal that always arrives
    }
  }
}

// ---- The shared-memory path -----------------------------------------------------------------

// Writes into the socket or the ring; -1 with EAGAIN when nothing fits.
ssize_t Proxy::streamSend(SockState& s, const iovec* iov, int n) {
  if (!s.shm) {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = n;
    return sendmsg(s.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  size_t k = s.shm->out.writev(iov, n);
  if (k == 0) {
    errno = EAGAIN;
    return -1;
  }
  ++shmMoved_;
  shmBytes_.fetch_add(k, std::memory_order_relaxed);
  notifyPeer(s, s.shm->out.header()->consumerSleeping);
  return (ssize_t)k;
}

// Reads from the socket or the ring; -1 with EAGAIN when nothing is there, 0 at the end (a
// ring ends when its producer closed it and it is empty).
ssize_t Proxy::streamRecv(SockState& s, void* buf, size_t n, void* spill, size_t spillBytes,
                          size_t* spilled) {
  if (!s.shm && spill) {
    iovec iov[2] = {{buf, n}, {spill, spillBytes}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    ssize_t k = recvmsg(s.fd, &msg, MSG_DONTWAIT);
    if (k <= (ssize_t)n) return k;
    *spilled = (size_t)k - n;
    return (ssize_t)n;
  }
  if (!s.shm) return recv(s.fd, buf, n, MSG_DONTWAIT);
  ShmRing& ring = s.shm->in;
  size_t k = ring.read(buf, n);
  if (k == 0) {
    if (ring.header()->closed.load(std::memory_order_acquire) == 0) {
      errno = EAGAIN;
      return -1;
    }
    k = ring.read(buf, n);  // bytes published before the close
    if (k == 0) return 0;
  }
  ++shmMoved_;
  shmBytes_.fetch_add(k, std::memory_order_relaxed);
  notifyPeer(s, ring.header()->producerSleeping);
  return (ssize_t)k;
}

// The peer said (flag in the shared header) it is about to sleep: wake it with one doorbell.
void Proxy::notifyPeer(SockState& s, std::atomic<uint32_t>& sleeping) {
  if (sleeping.load(std::memory_order_seq_cst) == 0) return;
  if (sleeping.exchange(0, std::memory_order_seq_cst) == 0) return;
  sendControl(s, kFrameFlagDoorbell, 0, true);
}

void Proxy::flushControl(SockState& s) {
  while (!s.ctrlOut.empty()) {
    ssize_t k = send(s.fd, s.ctrlOut.data(), s.ctrlOut.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;  // full (retried on the next round) or dead (the read side tells)
    s.ctrlOut.erase(0, (size_t)k);
  }
}

// Writes one control frame, never blocking. A doorbell is dropped while control bytes are
// still queued: the queued bytes wake the peer just as well.
void Proxy::sendControl(SockState& s, uint32_t flags, uint32_t seq, bool droppable) {
  flushControl(s);
  if (!s.ctrlOut.empty() && droppable) return;
  FrameHeader h{kFrameMagic, seq, 0, 0, 0, flags};
  s.ctrlOut.append(reinterpret_cast<const char*>(&h), sizeof(h));
  flushControl(s);
}

// The control connection of a shared-memory peer: doorbells, goodbye, failure notices, end.
void Proxy::pumpControl(SockState& s) {
  while (failure_.load() == mixcclSuccess && !s.ctrlBye && !s.byeReceived) {
    ssize_t k = recv(s.fd, reinterpret_cast<char*>(&s.ctrlHdr) + s.ctrlDone,
                     sizeof(FrameHeader) - s.ctrlDone, MSG_DONTWAIT);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (k <= 0) {
      peerFailed(s.peer, k == 0 ? "it closed the connection (process ended or crashed)"
                                : std::string("receive failed: ") + strerror(errno));
      return;
    }
    s.ctrlDone += (size_t)k;
    if (s.ctrlDone < sizeof(FrameHeader)) continue;
    s.ctrlDone = 0;
    const FrameHeader& h = s.ctrlHdr;
    if (h.magic == kFrameMagic && h.flags == kFrameFlagDoorbell) continue;
    if (h.magic == kFrameMagic && h.flags == kFrameFlagBye) {
      // The ring is closed too: its end (after the frames still in it) completes the goodbye.
      // The connection's own end, which follows, is no longer watched.
      s.ctrlBye = true;
      setReadInterest(s, false);
      pumpRecv(s);
      return;
    }
    if (h.magic == kFrameMagic && h.flags == kFrameFlagPeerFailed) {
      handlePeerFailedNotice(s.peer, h.seq);
      return;
    }
    fail(mixcclRemoteError, "rank " + std::to_string(params_.rank) + ": " +
                                params_.peerNames[s.peer] +
                                " sent an invalid frame on its control connection");
    return;
  }
}

// Sends whose descriptors the peer has copied are finished.
void Proxy::pumpCmaDone(SockState& s) {
  uint64_t done = s.shm->out.header()->cmaDone.load(std::memory_order_acquire);
  if (done == s.cmaAcked) return;
  if (done - s.cmaAcked > s.cmaSends.size()) {
    fail(mixcclRemoteError, "rank " + std::to_string(params_.rank) + ": " +
                                params_.peerNames[s.peer] +
                                " acknowledged more shared-memory transfers than were sent");
    return;
  }
  while (s.cmaAcked < done) {
    ProxyOp* op = s.cmaSends.front();
    s.cmaSends.pop_front();
    ++s.cmaAcked;
    op->done = op->bytes;
    finishOp(op, ProxyOp::Done, mixcclSuccess);
  }
  ++shmMoved_;
}

// The descriptor of a large message is in: check it, copy the message from the sender's
// memory into the posted receive (our length bound), and tell the sender.
bool Proxy::finishCmaRecv(SockState& s, ProxyOp* op) {
  if (!validCmaDescriptor(s.recvDesc, op->bytes)) {
    fail(mixcclRemoteError, "rank " + std::to_string(params_.rank) + ": " +
                                params_.peerNames[s.peer] +
                                " sent an invalid cross-memory descriptor");
    return false;
  }
  int err = cmaRead(s.shm->peerPid, s.recvDesc, op->buf);
  if (err != 0) {
    peerFailed(s.peer, std::string("cross-memory read (process_vm_readv) failed: ") + strerror(err));
    return false;
  }
  op->done = op->bytes;
  shmBytes_.fetch_add(op->bytes, std::memory_order_relaxed);
  ++shmMoved_;
  s.shm->in.header()->cmaDone.fetch_add(1, std::memory_order_seq_cst);
  notifyPeer(s, s.shm->in.header()->producerSleeping);
  return true;
}

// One look at a shared-memory peer: control bytes out, finished copies, ring in, ring out.
void Proxy::pumpShm(SockState& s) {
  if (failure_.load() != mixcclSuccess) return;
  flushControl(s);
  pumpCmaDone(s);
  pumpRecv(s);
  pumpSend(s);
}

void Proxy::failEverything() {
  Result code = (Result)failure_.load();
  sendPeerFailedNotices();
  std::vector<ProxyOp*> ops(live_.begin(), live_.end());
  for (ProxyOp* op : ops) finishOp(op, ProxyOp::Failed, code);
  for (PeerState& ps : peers_) {
    ps.sendQueue.clear();
    ps.recvSlots.clear();
    for (SockState& s : ps.socks) {
      s.sendOp = nullptr;
      s.recvOp = nullptr;
      s.sendIsCma = s.recvIsCma = false;
      s.cmaSends.clear();
      setReadInterest(s, false);
      setWriteInterest(s, false);
    }
    // Peers learn of the failure at once from the cut connections.
    for (Socket& sock : ps.sockets) sock.shutdown();
  }
}

void Proxy::progressOnce(int timeoutMs, const ProxyOp* waitingFor) {
  drainIncoming();
  if (!failedHandled_ && failure_.load() != mixcclSuccess) {
    failEverything();
    failedHandled_ = true;
  }
  if (failedHandled_) drainIncoming();  // posts after the failure end at once
  for (SockState* s : shmSocks_) pumpShm(*s);
  // Starting the new sends may already have finished the awaited op: then do not block.
  if (waitingFor && waitingFor->stateNow() != ProxyOp::Pending) timeoutMs = 0;
  // Rings have no fd: before blocking, say so in each ring this rank waits on, then look once
  // more (the peer checks the flag after publishing and rings the doorbell on the control
  // connection, which epoll does see). seq_cst on both sides: no wake-up is lost.
  bool armed = false;
  if (timeoutMs > 0 && !shmSocks_.empty() && !failedHandled_) {
    armed = true;
    uint64_t before = shmMoved_;
    for (SockState* s : shmSocks_) {
      PeerState& ps = peers_[s->peer];
      if (!s->byeReceived) s->shm->in.header()->consumerSleeping.store(1, std::memory_order_seq_cst);
      if (s->sendOp || !ps.sendQueue.empty() || !s->cmaSends.empty())
        s->shm->out.header()->producerSleeping.store(1, std::memory_order_seq_cst);
    }
    for (SockState* s : shmSocks_) pumpShm(*s);
    if (shmMoved_ != before || (waitingFor && waitingFor->stateNow() != ProxyOp::Pending) ||
        failure_.load() != mixcclSuccess)
      timeoutMs = 0;
  }
  epoll_event events[64];
  int n = epoll_wait(epollFd_, events, 64, timeoutMs);
  if (armed)
    for (SockState* s : shmSocks_) {
      s->shm->in.header()->consumerSleeping.store(0, std::memory_order_relaxed);
      s->shm->out.header()->producerSleeping.store(0, std::memory_order_relaxed);
    }
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u64 == kEventFdTag) {
      uint64_t v;
      ssize_t rc = read(eventFd_, &v, sizeof(v));
      (void)rc;
      continue;
    }
    SockState& s = *sockByIndex_[events[i].data.u64];
    if (s.shm) {
      pumpControl(s);
      pumpShm(s);
      continue;
    }
    if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) pumpRecv(s);
    if (events[i].events & EPOLLOUT) pumpSend(s);
  }
  if (!failedHandled_ && failure_.load() != mixcclSuccess) {
    failEverything();
    failedHandled_ = true;
  }
}

// The progress thread proper: between calls (and whenever nobody waits) it watches for
// connections that end and for failures, so a dead peer is noticed, logged and reported by
// mixcclCommGetAsyncError without any call in flight.
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
    fail(mixcclInvalidUsage, "rank " + std::to_string(params_.rank) +
                                 ": communicator stopped with operations pending");
    failEverything();
  }
}

}  // namespace mixccl
