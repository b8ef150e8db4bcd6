#include "transport/stream_connection.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mixccl {

namespace {
// Read-ahead buffer per lane: frames with payloads below half of it cost one read.
constexpr size_t kStageBytes = 16 << 10;
}  // namespace

StreamConnection::StreamConnection(int peer, size_t lanes) : Connection(peer), lanes_(lanes) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    lanes_[i].index = (int)i;
    lanes_[i].stage.resize(kStageBytes);
  }
}

Result StreamConnection::start(TransportEvents* events) {
  events_ = events;
  for (Lane& l : lanes_) wantRead(l, true);
  return mixcclSuccess;
}

void StreamConnection::wantRead(Lane& l, bool on) {
  if (l.fd < 0) return;
  uint32_t want = (on ? (uint32_t)(EPOLLIN | EPOLLRDHUP) : 0u) | (l.interest & EPOLLOUT);
  if (want == l.interest) return;
  l.interest = want;
  events_->setInterest(this, l.index, l.fd, want);
}

void StreamConnection::wantWrite(Lane& l, bool on) {
  if (l.fd < 0) return;
  uint32_t want = (l.interest & ~(uint32_t)EPOLLOUT) | (on ? (uint32_t)EPOLLOUT : 0u);
  if (want == l.interest) return;
  l.interest = want;
  events_->setInterest(this, l.index, l.fd, want);
}

void StreamConnection::postSend(TransportRequest* r) {
  r->seq = nextSendSeq_++;
  sendQueue_.push_back(r);
  for (Lane& l : lanes_) pumpSend(l);
}

void StreamConnection::postRecv(TransportRequest* r) {
  r->seq = nextRecvSeq_++;
  recvSlots_.push_back(r);
  for (Lane& l : lanes_) {
    // A lane paused on a frame for a later receive stays paused (and out of epoll) until that
    // receive is posted: waking it for every post costs two epoll_ctl calls each time.
    if (!l.paused || l.recvHdr.seq - recvBase_ >= recvSlots_.size()) continue;
    l.paused = false;
    wantRead(l, true);
    if (matchFrame(l)) pumpRecv(l);
  }
}

// A lane pauses on the first frame of a message no receive matches yet (matchFrame): the next
// unmatched message has arrived when some lane holds a frame with its sequence number. Its
// header carries the message's total size, whichever of its frames came first.
bool StreamConnection::nextUnmatchedMessage(uint64_t* bytes) const {
  for (const Lane& l : lanes_)
    if (l.paused && l.recvHdr.seq == nextRecvSeq_) {
      *bytes = l.recvHdr.total;
      return true;
    }
  return false;
}

void StreamConnection::onEvent(int lane, uint32_t events) {
  Lane& l = lanes_[lane];
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) pumpRecv(l);
  if (events & EPOLLOUT) pumpSend(l);
}

void StreamConnection::goodbye() {
  // Only a lane with no half-written frame can carry a clean goodbye.
  for (Lane& l : lanes_)
    if (!l.sendOp) laneGoodbye(l);
}

void StreamConnection::abandon() {
  sendQueue_.clear();
  recvSlots_.clear();
  for (Lane& l : lanes_) {
    l.sendOp = nullptr;
    l.recvOp = nullptr;
    l.sendIsDescriptor = l.recvIsDescriptor = false;
    wantRead(l, false);
    wantWrite(l, false);
  }
}

bool StreamConnection::assignFrame(Lane& l) {
  if (sendQueue_.empty()) return false;
  TransportRequest* op = sendQueue_.front();
  if (op->assigned == 0 && startDescriptorSend(l, op)) {
    l.sendIsDescriptor = true;
    l.sendOp = op;
    l.sendHdrDone = 0;
    l.sendBodyDone = 0;
    op->assigned = op->bytes;
    op->headerSent = true;
    sendQueue_.pop_front();
    return true;
  }
  size_t len = std::min(frameBytesFor(*op), op->bytes - op->assigned);
  l.sendHdr = FrameHeader{kFrameMagic, op->seq, op->bytes, op->assigned, (uint32_t)len, 0,
                          op->stamp};
  l.sendOp = op;
  l.sendHdrDone = 0;
  l.sendBodyDone = 0;
  op->assigned += len;
  op->headerSent = true;
  if (op->assigned == op->bytes) sendQueue_.pop_front();
  return true;
}

void StreamConnection::pumpSend(Lane& l) {
  while (!events_->failed()) {
    if (!l.sendOp && !assignFrame(l)) {
      wantWrite(l, false);
      return;
    }
    iovec iov[2];
    int n = 0;
    if (l.sendHdrDone < sizeof(FrameHeader)) {
      iov[n].iov_base = reinterpret_cast<char*>(&l.sendHdr) + l.sendHdrDone;
      iov[n].iov_len = sizeof(FrameHeader) - l.sendHdrDone;
      ++n;
    }
    size_t bodyLeft = l.sendHdr.length - l.sendBodyDone;
    if (bodyLeft > 0) {
      iov[n].iov_base = l.sendIsDescriptor ? l.sendDesc + l.sendBodyDone
                                           : l.sendOp->buf + l.sendHdr.offset + l.sendBodyDone;
      iov[n].iov_len = bodyLeft;
      ++n;
    }
    ssize_t k = n ? laneSend(l, iov, n) : 0;
    if (k < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // A full ring has no fd to wait on: the engine polls it (and sleeps on its doorbell).
        wantWrite(l, true);
        return;
      }
      if (errno == EINTR) continue;
      fail(std::string("send failed: ") + strerror(errno));
      return;
    }
    size_t hdrPart = std::min((size_t)k, sizeof(FrameHeader) - l.sendHdrDone);
    l.sendHdrDone += hdrPart;
    l.sendBodyDone += (size_t)k - hdrPart;
    if (l.sendHdrDone == sizeof(FrameHeader) && l.sendBodyDone == l.sendHdr.length) {
      TransportRequest* op = l.sendOp;
      l.sendOp = nullptr;
      if (l.sendIsDescriptor) {
        l.sendIsDescriptor = false;
        descriptorSent(l, op);  // finished when the receiver says it has copied the message
        continue;
      }
      op->done += l.sendHdr.length;
      if (op->done == op->bytes && op->assigned == op->bytes && op->headerSent)
        events_->complete(op, mixcclSuccess);
    }
  }
}

// Finds the posted receive for the header just read; pauses the lane when that receive is not
// posted yet (the bytes wait in the kernel or the ring, never in an unbounded buffer of ours).
bool StreamConnection::matchFrame(Lane& l) {
  const FrameHeader& h = l.recvHdr;
  // Invariant: recvBase_ + recvSlots_.size() == nextRecvSeq_.
  uint32_t idx = h.seq - recvBase_;
  if (h.magic == kFrameMagic && idx >= recvSlots_.size() && idx < (1u << 31)) {
    l.paused = true;
    wantRead(l, false);  // a ring pauses by not being read
    return false;
  }
  TransportRequest* op =
      (h.magic == kFrameMagic && idx < recvSlots_.size()) ? recvSlots_[idx] : nullptr;
  // Descriptors only where the subclass can act on them; anywhere else, bad flags.
  bool descriptor = acceptsDescriptors() && h.flags == kFrameFlagCma;
  // A frame of another call: named before its size is judged, which then differs too as often
  // as not and would only say "mismatched calls?".
  if (op && (h.flags == 0 || descriptor) && h.stamp != op->stamp) {
    events_->callMismatch(peer(), h.stamp, op->stamp);
    return false;
  }
  FrameCheck check = !op ? (h.magic == kFrameMagic ? FrameCheck::OutOfBounds : FrameCheck::BadMagic)
                     : descriptor ? validateDescriptorFrame(h, *op)
                                  : validateFrame(h, op->bytes, op->done, op->knownTotal);
  if (check != FrameCheck::Ok) {
    std::string detail = std::string("sent an invalid frame: ") + frameCheckName(check);
    if (op && check == FrameCheck::SizeMismatch)
      detail = "sent a message of " + std::to_string(h.total) + " bytes to a receive of " +
               std::to_string(op->bytes) + " bytes (mismatched calls?)";
    events_->protocolError(peer(), detail);
    return false;
  }
  op->knownTotal = h.total;
  l.recvOp = op;
  l.recvIsDescriptor = descriptor;
  l.recvBodyDone = 0;
  return true;
}

// Reads what the lane has into the staging buffer. False when nothing more can be read now
// (or the lane failed or ended, which is then reported).
bool StreamConnection::fillStage(Lane& l, size_t want) {
  if (l.stageBegin > 0) {
    memmove(l.stage.data(), l.stage.data() + l.stageBegin, l.stageEnd - l.stageBegin);
    l.stageEnd -= l.stageBegin;
    l.stageBegin = 0;
  }
  size_t room = std::min(want, l.stage.size() - l.stageEnd);
  for (;;) {
    ssize_t k = laneRecv(l, l.stage.data() + l.stageEnd, room, nullptr, 0, nullptr);
    if (k > 0) {
      l.stageEnd += (size_t)k;
      return true;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (k == 0 && endIsGoodbye() && !l.recvOp && l.stageBegin == l.stageEnd) {
      handleBye(l);  // the stream ended cleanly between frames
      return false;
    }
    fail(k == 0 ? "it closed the connection (process ended or crashed)"
                : std::string("receive failed: ") + strerror(errno));
    return false;
  }
}

void StreamConnection::handleBye(Lane& l) {
  l.byeReceived = true;
  wantRead(l, false);
  wantWrite(l, false);
  if (++byes_ < (int)lanes_.size()) return;
  bool pending = !sendQueue_.empty();
  for (TransportRequest* op : recvSlots_) pending = pending || op != nullptr;
  for (Lane& o : lanes_) pending = pending || o.sendOp;
  events_->peerLeft(peer(), pending);
}

void StreamConnection::finishRecv(TransportRequest* op) {
  recvSlots_[op->seq - recvBase_] = nullptr;
  while (!recvSlots_.empty() && recvSlots_.front() == nullptr) {
    recvSlots_.pop_front();
    ++recvBase_;
  }
  events_->complete(op, mixcclSuccess);
}

// Small frames arrive through a staging buffer (header and payload in one read); the payload
// of a large frame is read straight into the user's buffer.
void StreamConnection::pumpRecv(Lane& l) {
  while (!events_->failed() && !l.paused && !l.byeReceived) {
    if (!l.recvOp) {
      if (l.stageEnd - l.stageBegin < sizeof(FrameHeader)) {
        // After a large frame the next is likely large too: read just its header, so the
        // payload goes straight to the user's buffer instead of through the stage.
        size_t want = l.lastFrameBytes >= l.stage.size() / 2
                          ? sizeof(FrameHeader) - (l.stageEnd - l.stageBegin)
                          : l.stage.size();
        if (!fillStage(l, want)) return;
        continue;
      }
      memcpy(&l.recvHdr, l.stage.data() + l.stageBegin, sizeof(FrameHeader));
      l.stageBegin += sizeof(FrameHeader);
      if (l.recvHdr.magic == kFrameMagic && l.recvHdr.flags == kFrameFlagBye) {
        handleBye(l);
        return;
      }
      if (!matchFrame(l)) return;
    }
    TransportRequest* op = l.recvOp;
    char* dst = l.recvIsDescriptor ? l.recvDesc + l.recvBodyDone
                                   : op->buf + l.recvHdr.offset + l.recvBodyDone;
    size_t left = l.recvHdr.length - l.recvBodyDone;
    size_t staged = l.stageEnd - l.stageBegin;
    if (left > 0 && staged > 0) {
      size_t n = std::min(left, staged);
      memcpy(dst, l.stage.data() + l.stageBegin, n);
      l.stageBegin += n;
      l.recvBodyDone += n;
      continue;
    }
    if (left > 0 && left < l.stage.size() / 2) {
      if (!fillStage(l, l.stage.size())) return;
      continue;
    }
    if (left > 0) {
      // A large body goes straight to the user's buffer, and the next frame's header (when it
      // is already there) into the empty stage in the same read.
      size_t extra = 0;
      l.stageBegin = l.stageEnd = 0;  // empty here (staged == 0)
      ssize_t k = laneRecv(l, dst, left, l.stage.data(), sizeof(FrameHeader), &extra);
      if (k <= 0) {
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        fail(k == 0 ? "it closed the connection in the middle of a message"
                    : std::string("receive failed: ") + strerror(errno));
        return;
      }
      l.stageEnd = extra;
      l.recvBodyDone += (size_t)k;
      if (l.recvBodyDone < l.recvHdr.length) continue;
    }
    l.recvOp = nullptr;
    l.lastFrameBytes = l.recvHdr.length;
    if (l.recvIsDescriptor) {
      l.recvIsDescriptor = false;
      if (!finishDescriptorRecv(l, op)) return;
    } else {
      op->done += l.recvHdr.length;
    }
    if (op->done == op->knownTotal) {
      finishRecv(op);
      // Let the waiter look before another read; level-triggered epoll brings us back.
      if (l.stageBegin == l.stageEnd) return;
    }
  }
}

}  // namespace mixccl
