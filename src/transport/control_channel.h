// The control connection of a pair of ranks: one authenticated TCP connection per peer, whatever
// transport moves the data, carrying goodbyes, peer-failed and waiting notices and doorbells as
// frame headers (frame.h), the notices with a small payload (wait_notice.h). Its end without a
// goodbye is how a rank learns that a peer died, so failure detection does not depend on the
// data transport. Never blocks.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/socket.h"
#include "transport/frame.h"

namespace mixccl {

class ControlChannel {
 public:
  // Invalid: the header is not a control frame (magic, flags, or a payload length its flag
  // does not allow); nothing after it can be trusted.
  enum class Read { Frame, Empty, Ended, Failed, Invalid };

  ControlChannel() = default;
  ControlChannel(int peer, Socket socket) : peer_(peer), socket_(std::move(socket)) {}
  ControlChannel(ControlChannel&&) = default;
  ControlChannel& operator=(ControlChannel&&) = default;

  int peer() const { return peer_; }
  int fd() const { return socket_.fd(); }
  bool valid() const { return socket_.valid(); }

  // Queues one control frame (with payload, for the flags that take one) and writes what the
  // socket takes now. A droppable frame (a doorbell) is dropped while bytes are still queued:
  // those wake the peer just as well.
  void send(uint32_t flags, uint32_t seq, bool droppable, const std::string& payload = {});
  // Queues a whole header without payload (a notice that uses more fields than seq).
  void send(const FrameHeader& frame);
  // Writes queued bytes; what does not fit waits for the next call.
  void flush();
  // Reads one whole frame (header into *frame, payload into *payload) if one is there. Ended:
  // the peer closed the connection; Failed: errno says why.
  Read read(FrameHeader* frame, std::string* payload);
  // The next read() returns this frame again (one frame: a look ahead that must not consume).
  void putBack(const FrameHeader& frame, std::string payload) {
    held_ = true;
    heldFrame_ = frame;
    heldPayload_ = std::move(payload);
  }
  // Cuts the connection (peers notice at once). Idempotent.
  void shutdown() { socket_.shutdown(); }

 private:
  int peer_ = -1;
  Socket socket_;
  FrameHeader in_{};
  size_t inDone_ = 0;
  std::string inPayload_;
  size_t payloadDone_ = 0;
  bool invalid_ = false;
  bool held_ = false;
  FrameHeader heldFrame_{};
  std::string heldPayload_;
  std::string out_;
};

// Whether h may travel on a control connection: the magic, exactly one control flag, and a
// payload length that flag allows (none for goodbyes and doorbells, a wait list's size at most
// for the notices).
bool isControlHeader(const FrameHeader& h);

}  // namespace mixccl
