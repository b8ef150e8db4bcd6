// The shared-memory transport: a same-host peer's frames travel through a pair of /dev/shm rings
// (shm_transport.h sets them up), and with cross-memory attach a large message goes as a
// descriptor the receiver copies from the sender's memory in one copy. Rings have no fd: the
// engine polls the connection, and before it blocks each side says so in the ring header; the
// other side then rings the doorbell on the pair's control connection.
#pragma once

#include <deque>
#include <memory>

#include "transport/shm_transport.h"
#include "transport/stream_connection.h"
#include "transport/transport.h"

namespace mixccl {

class ShmConnection : public StreamConnection {
 public:
  explicit ShmConnection(std::unique_ptr<ShmLink> link);

  const char* transportName() const override { return "shm"; }
  bool needsPolling() const override { return true; }
  bool poll() override;
  bool prepareToBlock() override;
  void afterBlock() override;
  void goodbye() override;
  void abandon() override;
  uint64_t bytesMoved() const override { return bytes_; }
  const ShmLink& link() const { return *link_; }
  std::string detail() const override {
    return "ring " + std::to_string(link_->out.capacity() >> 10) + " KiB, cross-memory attach " +
           (link_->cmaSend ? "on" : "off");
  }

 protected:
  ssize_t laneSend(Lane& l, const iovec* iov, int n) override;
  ssize_t laneRecv(Lane& l, void* buf, size_t n, void* spill, size_t spillBytes,
                   size_t* spilled) override;
  size_t frameBytesFor(const TransportRequest& r) const override;
  bool endIsGoodbye() const override { return true; }
  bool startDescriptorSend(Lane& l, TransportRequest* r) override;
  bool acceptsDescriptors() const override { return link_->cmaRecv; }
  FrameCheck validateDescriptorFrame(const FrameHeader& h, const TransportRequest& r) const override;
  void descriptorSent(Lane& l, TransportRequest* r) override { cmaSends_.push_back(r); }
  bool finishDescriptorRecv(Lane& l, TransportRequest* r) override;
  void laneGoodbye(Lane& l) override {}

 private:
  void pumpCmaDone();
  // The peer said (flag in the shared header) it is about to sleep: wake it with one doorbell.
  void notifyPeer(std::atomic<uint32_t>& sleeping);

  std::unique_ptr<ShmLink> link_;
  std::deque<TransportRequest*> cmaSends_;  // descriptors written, waiting for the peer's cmaDone
  uint64_t cmaAcked_ = 0;                   // cmaDone counted so far
  uint64_t moved_ = 0;                      // progress counter (prepareToBlock compares it)
  uint64_t bytes_ = 0;
};

// Chooses shared memory for pairs of ranks on one host. want: this rank asks for it (both of
// a pair must; a rank that does not still answers its candidates' hello, so both agree).
class ShmTransport : public Transport {
 public:
  ShmTransport(const ShmParams& params, bool want) : params_(params), want_(want) {}
  const char* name() const override { return "shm"; }
  bool canConnect(const PeerInfo& local, const PeerInfo& peer) const override {
    return local.hostHash == peer.hostHash;
  }
  Result connect(const TransportSetup& setup, const std::vector<int>& candidates,
                 std::vector<std::unique_ptr<Connection>>* out) override;

 private:
  ShmParams params_;
  bool want_;
};

}  // namespace mixccl
