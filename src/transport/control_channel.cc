#include "transport/control_channel.h"

#include <sys/socket.h>

#include <cerrno>

namespace mixccl {

void ControlChannel::flush() {
  while (!out_.empty()) {
    ssize_t k = ::send(socket_.fd(), out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;  // full (retried on the next round) or dead (the read side tells)
    out_.erase(0, (size_t)k);
  }
}

void ControlChannel::send(uint32_t flags, uint32_t seq, bool droppable) {
  if (!socket_.valid()) return;
  flush();
  if (!out_.empty() && droppable) return;
  FrameHeader h{kFrameMagic, seq, 0, 0, 0, flags};
  out_.append(reinterpret_cast<const char*>(&h), sizeof(h));
  flush();
}

ControlChannel::Read ControlChannel::read(FrameHeader* frame) {
  for (;;) {
    ssize_t k = ::recv(socket_.fd(), reinterpret_cast<char*>(&in_) + inDone_,
                       sizeof(FrameHeader) - inDone_, MSG_DONTWAIT);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Read::Empty;
    if (k < 0) return Read::Failed;
    if (k == 0) return Read::Ended;
    inDone_ += (size_t)k;
    if (inDone_ < sizeof(FrameHeader)) continue;
    inDone_ = 0;
    *frame = in_;
    return Read::Frame;
  }
}

}  // namespace mixccl
