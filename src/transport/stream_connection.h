// A connection over byte streams ("lanes"): the framing and sequence matching that the socket
// and shared-memory transports share. A message is cut into self-describing frames (frame.h)
// spread over the lanes; the receiver matches each frame to the posted receive with the same
// sequence number, validates it, and only then copies. Subclasses say how a lane reads and
// writes (a socket, a ring pair) and may send a frame whose body is a small descriptor instead
// of the payload (cross-memory attach).
#pragma once

#include <sys/uio.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "transport/frame.h"
#include "transport/transport.h"

namespace mixccl {

class StreamConnection : public Connection {
 public:
  StreamConnection(int peer, size_t lanes);

  Result start(TransportEvents* events) override;
  void postSend(TransportRequest* r) override;
  void postRecv(TransportRequest* r) override;
  void onEvent(int lane, uint32_t events) override;
  void goodbye() override;
  void abandon() override;
  bool canProbe() const override { return true; }
  bool nextUnmatchedMessage(uint64_t* bytes) const override;

 protected:
  // Largest descriptor body a frame may carry instead of payload.
  static constexpr size_t kMaxDescriptorBytes = 32;

  struct Lane {
    int index = -1;
    int fd = -1;             // -1: no fd (a ring pair)
    uint32_t interest = 0;   // epoll events asked for
    bool byeReceived = false;
    // Send side: the frame being written.
    TransportRequest* sendOp = nullptr;
    FrameHeader sendHdr{};
    size_t sendHdrDone = 0;
    size_t sendBodyDone = 0;
    bool sendIsDescriptor = false;
    char sendDesc[kMaxDescriptorBytes];
    // Receive side: the frame being read.
    FrameHeader recvHdr{};
    std::vector<char> stage;  // bytes read ahead of the current frame
    size_t stageBegin = 0;
    size_t stageEnd = 0;
    size_t lastFrameBytes = 0;  // payload of the previous frame: predicts the next one
    TransportRequest* recvOp = nullptr;
    size_t recvBodyDone = 0;
    bool recvIsDescriptor = false;
    char recvDesc[kMaxDescriptorBytes];
    bool paused = false;  // holds a header for a receive that is not posted yet
  };

  // Writes into / reads from the lane; -1 with errno EAGAIN when nothing fits or nothing is
  // there, 0 from laneRecv at the stream's end. With spill, bytes beyond n (up to spillBytes)
  // may land in spill, their count in *spilled (the return value counts only those into buf).
  virtual ssize_t laneSend(Lane& l, const iovec* iov, int n) = 0;
  virtual ssize_t laneRecv(Lane& l, void* buf, size_t n, void* spill, size_t spillBytes,
                           size_t* spilled) = 0;
  // Payload bytes per frame for r (the share of one lane).
  virtual size_t frameBytesFor(const TransportRequest& r) const = 0;
  // Whether the end of the lane's stream between frames is a clean goodbye (a closed ring);
  // otherwise only an explicit bye frame is.
  virtual bool endIsGoodbye() const { return false; }
  // Readiness interest on a lane with an fd (sockets); rings are polled instead.
  void wantRead(Lane& l, bool on);
  void wantWrite(Lane& l, bool on);
  // Descriptor frames (flag kFrameFlagCma): the subclass decides to send one instead of the
  // payload (fills l.sendHdr/l.sendDesc, returns true), whether a received one is acceptable,
  // and what finishes each side.
  virtual bool startDescriptorSend(Lane& l, TransportRequest* r) { return false; }
  virtual bool acceptsDescriptors() const { return false; }
  virtual FrameCheck validateDescriptorFrame(const FrameHeader& h, const TransportRequest& r) const {
    return FrameCheck::BadFlags;
  }
  virtual void descriptorSent(Lane& l, TransportRequest* r) {}
  virtual bool finishDescriptorRecv(Lane& l, TransportRequest* r) { return false; }
  // Writes the in-band goodbye of a lane with no half-written frame.
  virtual void laneGoodbye(Lane& l) = 0;
  // Lanes of this connection, for subclasses.
  std::vector<Lane>& lanes() { return lanes_; }
  bool hasQueuedSends() const { return !sendQueue_.empty(); }

  void pumpSend(Lane& l);
  void pumpRecv(Lane& l);
  // Finishes a receive whose bytes are all in (in the slot order bookkeeping).
  void finishRecv(TransportRequest* r);
  void fail(const std::string& what) { events_->peerFailed(peer(), what); }

  TransportEvents* events_ = nullptr;

 private:
  bool assignFrame(Lane& l);
  bool matchFrame(Lane& l);
  bool fillStage(Lane& l, size_t want);
  void handleBye(Lane& l);

  std::vector<Lane> lanes_;
  std::deque<TransportRequest*> sendQueue_;  // sends with bytes not yet cut into frames
  std::deque<TransportRequest*> recvSlots_;  // posted receives by seq from recvBase_; null: done
  uint32_t nextSendSeq_ = 0;
  uint32_t nextRecvSeq_ = 0;
  uint32_t recvBase_ = 0;
  int byes_ = 0;
};

}  // namespace mixccl
