// The control connection of a pair of ranks: one authenticated TCP connection per peer, whatever
// transport moves the data, carrying goodbyes, peer-failed notices and doorbells as bare frame
// headers (frame.h). Its end without a goodbye is how a rank learns that a peer died, so
// failure detection does not depend on the data transport. Never blocks.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/socket.h"
#include "transport/frame.h"

namespace mixccl {

class ControlChannel {
 public:
  enum class Read { Frame, Empty, Ended, Failed };

  ControlChannel() = default;
  ControlChannel(int peer, Socket socket) : peer_(peer), socket_(std::move(socket)) {}
  ControlChannel(ControlChannel&&) = default;
  ControlChannel& operator=(ControlChannel&&) = default;

  int peer() const { return peer_; }
  int fd() const { return socket_.fd(); }
  bool valid() const { return socket_.valid(); }

  // Queues one control frame and writes what the socket takes now. A droppable frame (a
  // doorbell) is dropped while bytes are still queued: those wake the peer just as well.
  void send(uint32_t flags, uint32_t seq, bool droppable);
  // Writes queued bytes; what does not fit waits for the next call.
  void flush();
  // Reads one whole frame header into *frame if one is there. Ended: the peer closed the
  // connection; Failed: errno says why.
  Read read(FrameHeader* frame);
  // Cuts the connection (peers notice at once). Idempotent.
  void shutdown() { socket_.shutdown(); }

 private:
  int peer_ = -1;
  Socket socket_;
  FrameHeader in_{};
  size_t inDone_ = 0;
  std::string out_;
};

}  // namespace mixccl
