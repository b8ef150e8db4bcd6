#include "transport/control_channel.h"

#include <sys/socket.h>

#include <cerrno>

#include "transport/wait_notice.h"

namespace mixccl {

bool isControlHeader(const FrameHeader& h) {
  if (h.magic != kFrameMagic) return false;
  switch (h.flags) {
    case kFrameFlagBye:
    case kFrameFlagDoorbell:
    case kFrameFlagCallMismatch:
    case kFrameFlagRevoked:
      return h.length == 0;
    case kFrameFlagPeerFailed:
      return h.length <= kWaitNoticeMaxBytes;
    case kFrameFlagWaiting:
      return h.length > 0 && h.length <= kWaitNoticeMaxBytes;
    default:
      return false;
  }
}

void ControlChannel::flush() {
  while (!out_.empty()) {
    ssize_t k = ::send(socket_.fd(), out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;  // full (retried on the next round) or dead (the read side tells)
    out_.erase(0, (size_t)k);
  }
}

void ControlChannel::send(uint32_t flags, uint32_t seq, bool droppable, const std::string& payload) {
  if (!socket_.valid()) return;
  flush();
  if (!out_.empty() && droppable) return;
  FrameHeader h{kFrameMagic, seq, 0, 0, (uint32_t)payload.size(), flags, 0};
  out_.append(reinterpret_cast<const char*>(&h), sizeof(h));
  out_.append(payload);
  flush();
}

void ControlChannel::send(const FrameHeader& frame) {
  if (!socket_.valid()) return;
  FrameHeader h = frame;
  h.length = 0;
  out_.append(reinterpret_cast<const char*>(&h), sizeof(h));
  flush();
}

ControlChannel::Read ControlChannel::read(FrameHeader* frame, std::string* payload) {
  if (held_) {
    held_ = false;
    *frame = heldFrame_;
    payload->swap(heldPayload_);
    heldPayload_.clear();
    return Read::Frame;
  }
  if (invalid_) return Read::Invalid;  // the stream lost its framing for good
  for (;;) {
    const bool inHeader = inDone_ < sizeof(FrameHeader);
    char* at = inHeader ? reinterpret_cast<char*>(&in_) + inDone_ : &inPayload_[payloadDone_];
    size_t want = inHeader ? sizeof(FrameHeader) - inDone_ : inPayload_.size() - payloadDone_;
    if (want > 0) {
      ssize_t k = ::recv(socket_.fd(), at, want, MSG_DONTWAIT);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Read::Empty;
      if (k < 0) return Read::Failed;
      if (k == 0) return Read::Ended;
      if (!inHeader) {
        payloadDone_ += (size_t)k;
      } else if ((inDone_ += (size_t)k) == sizeof(FrameHeader)) {
        // The length is checked before a byte of payload is read: a peer cannot make this
        // rank hold more than one wait list.
        if (!isControlHeader(in_)) {
          invalid_ = true;
          return Read::Invalid;
        }
        inPayload_.assign(in_.length, '\0');
        payloadDone_ = 0;
      }
      continue;
    }
    if (inHeader || payloadDone_ < inPayload_.size()) continue;
    inDone_ = 0;
    *frame = in_;
    payload->swap(inPayload_);
    inPayload_.clear();
    payloadDone_ = 0;
    return Read::Frame;
  }
}

}  // namespace mixccl
