#include "transport/ofi/ofi_connection.h"

#include <rdma/fi_errno.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "transport/ofi/ofi_tag.h"
#include "transport/ofi/ofi_library.h"

namespace mixccl {

OfiConnection::OfiConnection(int peer, int rank, std::shared_ptr<OfiEndpoint> ep, fi_addr_t addr,
                             uint32_t key, size_t pieceBytes, bool progressOwner)
    : Connection(peer), rank_(rank), ep_(std::move(ep)), addr_(addr), key_(key),
      pieceBytes_(std::max<size_t>(pieceBytes, 1)), progressOwner_(progressOwner) {
  ep_->addOwner(this);
  owning_ = true;
}

OfiConnection::OfiConnection(int peer, int rank, std::shared_ptr<OfiEndpoint> ep,
                             std::string peerAddress, uint32_t key, size_t pieceBytes)
    : Connection(peer), rank_(rank), ep_(std::move(ep)), addr_(FI_ADDR_UNSPEC), key_(key),
      pieceBytes_(std::max<size_t>(pieceBytes, 1)), progressOwner_(false),
      addressAtStart_(std::move(peerAddress)) {}

OfiConnection::~OfiConnection() {
  if (owning_) ep_->removeOwner(this);
  if (timerFd_ >= 0) close(timerFd_);
}

size_t OfiConnection::piecesOf(size_t bytes) const {
  return bytes == 0 ? 1 : (bytes + pieceBytes_ - 1) / pieceBytes_;
}

Result OfiConnection::start(TransportEvents* events) {
  events_ = events;
  if (!addressAtStart_.empty()) {
    std::string error;
    if (!ep_->insert(addressAtStart_, &addr_, &error))
      return raiseError(mixcclRemoteError, "rank %d: the libfabric address of %s was refused: %s",
                        rank_, events_->peerName(peer()).c_str(), error.c_str());
    addressAtStart_.clear();
    ep_->addOwner(this);
    owning_ = true;
    progressOwner_ = ep_->claimProgress();
  }
  if (progressOwner_ && ep_->waitFd() >= 0) events_->setInterest(this, 0, ep_->waitFd(), EPOLLIN);
  if (progressOwner_ && ep_->waitFd() < 0) {
    timerFd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timerFd_ < 0)
      return raiseError(mixcclSystemError, "rank %d: timerfd_create: %s", rank_, strerror(errno));
    events_->setInterest(this, 1, timerFd_, EPOLLIN);
  }
  // The peer's bye may come at any time after this: its receive is posted first.
  Piece bye;
  bye.bye = true;
  bye.len = sizeof(OfiOp::scratch);
  if (!post(bye)) backlog_.push_back(bye);
  return mixcclSuccess;
}

void OfiConnection::enqueue(TransportRequest* r, bool send) {
  r->assigned = 0;  // pieces finished so far
  size_t n = piecesOf(r->bytes);
  for (size_t i = 0; i < n; ++i) {
    Piece p;
    p.request = r;
    p.send = send;
    p.offset = i * pieceBytes_;
    p.len = std::min(pieceBytes_, r->bytes - std::min(r->bytes, p.offset));
    p.seq = send ? sendSeq_++ : recvSeq_++;
    // Order is kept: nothing overtakes a piece the provider refused.
    if (!backlog_.empty() || !post(p)) backlog_.push_back(p);
    if (abandoned_) return;
  }
}

void OfiConnection::postSend(TransportRequest* r) {
  ++messagesSent_;
  ++pendingSends_;
  enqueue(r, true);
}

void OfiConnection::postRecv(TransportRequest* r) {
  ++pendingRecvs_;
  enqueue(r, false);
}

bool OfiConnection::post(const Piece& p) {
  if (abandoned_ || ep_->closed()) return true;  // dropped: the engine fails the requests
  OfiOp* op = ep_->newOp(this);
  op->scratch[0] = byeOut_;
  op->scratch[1] = byeReceivedOut_;
  void* buf = p.bye ? (void*)op->scratch : (void*)(p.request->buf + p.offset);
  void* desc = nullptr;
  std::string error;
  if (!ep_->mrCache().acquire(buf, p.len, &desc, &op->mr, &error)) {
    ep_->freeOp(op);
    fail("libfabric memory registration failed: " + error);
    return true;
  }
  op->request = p.request;
  op->send = p.send;
  op->bye = p.bye;
  op->offset = p.offset;
  op->len = p.len;
  op->tag = ofiTag(key_, p.bye, p.send ? rank_ : peer(), p.seq);
  // Data pieces carry the call stamp as remote completion data; a bye carries none.
  ssize_t rc = p.send && p.bye ? fi_tsend(ep_->ep(), buf, p.len, desc, addr_, op->tag, &op->context)
               : p.send ? fi_tsenddata(ep_->ep(), buf, p.len, desc, p.request->stamp, addr_,
                                       op->tag, &op->context)
                        : fi_trecv(ep_->ep(), buf, p.len, desc,
                                 ep_->directedRecv() ? addr_ : FI_ADDR_UNSPEC, op->tag, 0,
                                 &op->context);
  if (rc == 0) return true;
  ep_->freeOp(op);
  if (rc == -FI_EAGAIN) return false;
  fail(std::string(p.send ? "fi_tsend" : "fi_trecv") + " failed: " + ofiStrerror((int)-rc));
  return true;
}

void OfiConnection::retryBacklog() {
  while (!backlog_.empty() && !abandoned_) {
    if (!post(backlog_.front())) return;
    backlog_.pop_front();
  }
}

void OfiConnection::requestPieceDone(TransportRequest* r) {
  if (++r->assigned < piecesOf(r->bytes)) return;
  bool send = r->kind == TransportRequest::Kind::Send;
  if (send) {
    --pendingSends_;
  } else {
    --pendingRecvs_;
    ++messagesReceived_;
  }
  events_->complete(r, mixcclSuccess);
  if (!send) checkLeft();
}

void OfiConnection::opDone(OfiOp* op, size_t len, uint64_t stamp) {
  OfiOp copy = *op;
  ep_->freeOp(op);
  if (copy.bye) {
    if (!copy.send) {
      byeIn_ = copy.scratch[0];
      peerReceived_ = copy.scratch[1];
      byeArrived_ = true;
      checkLeft();
    }
    return;
  }
  TransportRequest* r = copy.request;
  if (!copy.send && stamp != r->stamp) {
    // Judged before the size, which differs too as often as not: the stamp names the call.
    events_->callMismatch(peer(), stamp, r->stamp);
    return;
  }
  if (!copy.send && len != copy.len) {
    // A shorter message matched the receive: the calls differ between the two ranks.
    events_->protocolError(peer(), "sent a message of " +
                                       std::to_string(r->bytes - copy.len + len) +
                                       " bytes to a receive of " + std::to_string(r->bytes) +
                                       " bytes (mismatched calls?)");
    return;
  }
  bytes_ += len;
  r->done += len;
  requestPieceDone(r);
}

void OfiConnection::opFailed(OfiOp* op, const fi_cq_err_entry& err, const std::string& text) {
  OfiOp copy = *op;
  ep_->freeOp(op);
  // Providers disagree on the sign of err (shm reports -FI_ETRUNC).
  const int code = err.err < 0 ? -err.err : err.err;
  if (code == FI_ECANCELED) return;  // we cancelled it (abandon): the engine fails requests
  if (!copy.send && code == FI_ETRUNC && copy.request) {
    // olen is the part that did not fit, where the provider reports it (rxm says 0).
    std::string sent = err.olen ? std::to_string(copy.request->bytes + err.olen)
                                : "more than " + std::to_string(copy.request->bytes);
    // The stamp of a truncated message may not be reported: the peer, whose receive meets this
    // rank's smaller message, names both calls (TransportEvents::callSizeMismatch).
    if (copy.request->stamp) {
      events_->callSizeMismatch(peer(), copy.request->stamp, sent, copy.request->bytes);
      return;
    }
    events_->protocolError(peer(), "sent a message of " + sent + " bytes to a receive of " +
                                       std::to_string(copy.request->bytes) +
                                       " bytes (mismatched calls?)");
    return;
  }
  // After the peer's clean bye its end is closed. A send it received (its bye counts it) may
  // still fail here, its completion lost with the peer's endpoint: it was delivered. Others
  // are the "left with work pending" that checkLeft already reported.
  if (byeArrived_) {
    if (copy.send && copy.request && messagesSent_ <= peerReceived_) {
      copy.request->done += copy.len;
      requestPieceDone(copy.request);
    }
    return;
  }
  fail(std::string("libfabric ") + (copy.bye ? "bye " : "") + (copy.send ? "send" : "receive") +
       " failed: " + text);
}

void OfiConnection::checkLeft() {
  if (!byeArrived_ || leftReported_ || messagesReceived_ < byeIn_) return;
  leftReported_ = true;
  // Sends count as pending only beyond what the peer says it received: the completion of a
  // delivered send may still be on its way to our queue when the bye arrives.
  bool pending = pendingRecvs_ > 0 || messagesSent_ > peerReceived_;
  events_->peerLeft(peer(), pending);
}

void OfiConnection::fail(const std::string& what) {
  if (events_) events_->peerFailed(peer(), what);
}

bool OfiConnection::progress() {
  if (ep_->progress() <= 0) return false;
  handledSinceBlock_ = true;
  return true;
}

void OfiConnection::onEvent(int lane, uint32_t) {
  if (lane == 1) {
    uint64_t expirations;
    ssize_t rc = read(timerFd_, &expirations, sizeof(expirations));
    (void)rc;  // EAGAIN: already read; the progress below is what matters
  }
  progress();
}

bool OfiConnection::needsPolling() const { return progressOwner_ && ep_->waitFd() < 0; }

bool OfiConnection::poll() { return progress(); }

bool OfiConnection::prepareToBlock() {
  // Pieces the provider refused wait for room that only progress makes: keep going.
  if (!backlog_.empty()) {
    progress();
    return false;
  }
  if (!progressOwner_) return true;
  if (timerFd_ >= 0) {
    backoffUs_ = handledSinceBlock_ ? kMinBackoffUs : std::min(backoffUs_ * 2, kMaxBackoffUs);
    handledSinceBlock_ = false;
    itimerspec t{};
    t.it_value.tv_nsec = (long)backoffUs_ * 1000;
    timerfd_settime(timerFd_, 0, &t, nullptr);
    return true;
  }
  if (ep_->tryWait()) return true;
  // Completions are queued (or the provider needs a turn) but the fd may not say so: read them
  // now rather than sleep on an fd that stays quiet.
  progress();
  return false;
}

void OfiConnection::afterBlock() {
  if (timerFd_ < 0) return;
  itimerspec off{};
  timerfd_settime(timerFd_, 0, &off, nullptr);
}

void OfiConnection::onDoorbell() { progress(); }

void OfiConnection::goodbye() {
  if (byeSent_ || abandoned_) return;
  byeSent_ = true;
  byeOut_ = messagesSent_;
  byeReceivedOut_ = messagesReceived_;
  Piece bye;
  bye.bye = true;
  bye.send = true;
  bye.len = sizeof(OfiOp::scratch);
  if (!backlog_.empty() || !post(bye)) backlog_.push_back(bye);
  // The endpoint lets it (and every send before it) complete before it closes.
}

void OfiConnection::abandon() {
  abandoned_ = true;
  backlog_.clear();
  ep_->abandon();
}

}  // namespace mixccl
