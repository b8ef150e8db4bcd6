#include "transport/shm_connection.h"

#include <cerrno>
#include <cstring>

namespace mixccl {

namespace {
// Largest frame in a ring: the ring is a byte stream, frames only need to be few.
constexpr size_t kShmFrameBytes = 16 << 20;
static_assert(sizeof(CmaDescriptor) <= 32, "a descriptor fits a lane's descriptor buffer");
}  // namespace

ShmConnection::ShmConnection(std::unique_ptr<ShmLink> link)
    : StreamConnection(link->peer, 1), link_(std::move(link)) {}

void ShmConnection::notifyPeer(std::atomic<uint32_t>& sleeping) {
  if (sleeping.load(std::memory_order_seq_cst) == 0) return;
  if (sleeping.exchange(0, std::memory_order_seq_cst) == 0) return;
  events_->ringDoorbell(peer());
}

ssize_t ShmConnection::laneSend(Lane&, const iovec* iov, int n) {
  size_t k = link_->out.writev(iov, n);
  if (k == 0) {
    errno = EAGAIN;
    return -1;
  }
  ++moved_;
  bytes_ += k;
  notifyPeer(link_->out.header()->consumerSleeping);
  return (ssize_t)k;
}

// A ring ends when its producer closed it and it is empty.
ssize_t ShmConnection::laneRecv(Lane&, void* buf, size_t n, void*, size_t, size_t*) {
  ShmRing& ring = link_->in;
  size_t k = ring.read(buf, n);
  if (k == 0) {
    if (ring.header()->closed.load(std::memory_order_acquire) == 0) {
      errno = EAGAIN;
      return -1;
    }
    k = ring.read(buf, n);  // bytes published before the close
    if (k == 0) return 0;
  }
  ++moved_;
  bytes_ += k;
  notifyPeer(ring.header()->producerSleeping);
  return (ssize_t)k;
}

size_t ShmConnection::frameBytesFor(const TransportRequest&) const { return kShmFrameBytes; }

bool ShmConnection::startDescriptorSend(Lane& l, TransportRequest* r) {
  if (!link_->cmaSend || r->bytes < link_->cmaThreshold) return false;
  // Large message: the receiver copies it straight from our memory (one copy).
  l.sendHdr = FrameHeader{kFrameMagic, r->seq, r->bytes, 0, (uint32_t)sizeof(CmaDescriptor),
                          kFrameFlagCma, r->stamp};
  CmaDescriptor d{(uint64_t)(uintptr_t)r->buf, r->bytes};
  memcpy(l.sendDesc, &d, sizeof(d));
  return true;
}

FrameCheck ShmConnection::validateDescriptorFrame(const FrameHeader& h,
                                                  const TransportRequest& r) const {
  return validateCmaFrame(h, r.bytes, r.done, r.knownTotal);
}

// The descriptor of a large message is in: check it, copy the message from the sender's
// memory into the posted receive (our length bound), and tell the sender.
bool ShmConnection::finishDescriptorRecv(Lane& l, TransportRequest* r) {
  CmaDescriptor d;
  memcpy(&d, l.recvDesc, sizeof(d));
  if (!validCmaDescriptor(d, r->bytes)) {
    events_->protocolError(peer(), "sent an invalid cross-memory descriptor");
    return false;
  }
  int err = cmaRead(link_->peerPid, d, r->buf);
  if (err != 0) {
    fail(std::string("cross-memory read (process_vm_readv) failed: ") + strerror(err));
    return false;
  }
  r->done = r->bytes;
  bytes_ += r->bytes;
  ++moved_;
  link_->in.header()->cmaDone.fetch_add(1, std::memory_order_seq_cst);
  notifyPeer(link_->in.header()->producerSleeping);
  return true;
}

// Sends whose descriptors the peer has copied are finished.
void ShmConnection::pumpCmaDone() {
  uint64_t done = link_->out.header()->cmaDone.load(std::memory_order_acquire);
  if (done == cmaAcked_) return;
  if (done - cmaAcked_ > cmaSends_.size()) {
    events_->protocolError(peer(), "acknowledged more shared-memory transfers than were sent");
    return;
  }
  while (cmaAcked_ < done) {
    TransportRequest* r = cmaSends_.front();
    cmaSends_.pop_front();
    ++cmaAcked_;
    r->done = r->bytes;
    events_->complete(r, mixcclSuccess);
  }
  ++moved_;
}

// One look: finished copies, ring in, ring out.
bool ShmConnection::poll() {
  if (events_->failed()) return false;
  uint64_t before = moved_;
  pumpCmaDone();
  pumpRecv(lanes()[0]);
  pumpSend(lanes()[0]);
  return moved_ != before;
}

// Rings have no fd: before the engine blocks, say so in each ring this rank waits on, then
// look once more (the peer checks the flag after publishing and rings the doorbell, which the
// engine's epoll does see). seq_cst on both sides: no wake-up is lost.
bool ShmConnection::prepareToBlock() {
  Lane& l = lanes()[0];
  if (!l.byeReceived) link_->in.header()->consumerSleeping.store(1, std::memory_order_seq_cst);
  if (l.sendOp || hasQueuedSends() || !cmaSends_.empty())
    link_->out.header()->producerSleeping.store(1, std::memory_order_seq_cst);
  return !poll();
}

void ShmConnection::afterBlock() {
  link_->in.header()->consumerSleeping.store(0, std::memory_order_relaxed);
  link_->out.header()->producerSleeping.store(0, std::memory_order_relaxed);
}

void ShmConnection::goodbye() {
  if (lanes()[0].sendOp) return;  // a half-written frame: no clean end
  // The ring's end comes after its last frame; the control goodbye that the engine sends next
  // stops the peer from reading the control connection's end as a crash.
  link_->out.header()->closed.store(1, std::memory_order_seq_cst);
}

void ShmConnection::abandon() {
  StreamConnection::abandon();
  cmaSends_.clear();
}

Result ShmTransport::connect(const TransportSetup& setup, const std::vector<int>& candidates,
                             std::vector<std::unique_ptr<Connection>>* out) {
  std::vector<bool> isCandidate(setup.nranks, false);
  for (int p : candidates) isCandidate[p] = true;
  std::vector<std::unique_ptr<ShmLink>> links;
  MIXCCL_CHECK(setupShmLinks(params_, *setup.peers, isCandidate, want_, *setup.conns,
                             setup.deadline, &links));
  for (int p : candidates)
    if ((size_t)p < links.size() && links[p]) (*out)[p].reset(new ShmConnection(std::move(links[p])));
  return mixcclSuccess;
}

}  // namespace mixccl
