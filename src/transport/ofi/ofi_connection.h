// One peer over libfabric: the i-th send to the peer and the peer's i-th receive from this rank
// carry the same tag (ofi_tag.h: pair key, sender rank, sequence), so matching in posting order
// is the provider's tag matching. A message larger than the pair's piece size (the smaller
// max_msg_size of the two ends) goes as several tagged messages with consecutive sequence
// numbers; both ends cut it alike because sizes must match exactly.
//
// All peers share one endpoint and completion queue (ofi_endpoint.h). The first connection of a
// communicator (progressOwner) registers the queue's wait fd with the engine and arms it with
// fi_trywait before the engine blocks (prepareToBlock). Where the provider has no wait fd that
// a peer's message wakes (waitFdHearsPeers), the owner is polled every round instead and,
// before the engine sleeps, arms a timerfd that wakes it after 20 us, doubling while nothing
// comes to 1 ms: sleeping on nothing would cost the engine's whole 100 ms epoll bound per
// message, and spinning would take the core from the very peer it waits for. A clean end is one tagged "bye" carrying the number of messages
// sent, so the peer can tell "left after everything arrived" from "left with work pending".
#pragma once

#include <rdma/fabric.h>

#include <deque>
#include <memory>
#include <string>

#include "transport/ofi/ofi_endpoint.h"
#include "transport/transport.h"

namespace mixccl {

class OfiConnection : public Connection, private OfiOpOwner {
 public:
  // key: the pair's tag key; pieceBytes: largest single libfabric message of the pair.
  OfiConnection(int peer, int rank, std::shared_ptr<OfiEndpoint> ep, fi_addr_t addr,
                uint32_t key, size_t pieceBytes, bool progressOwner);
  // A pair connected on first use: start(), which runs under the engine's progress, inserts
  // the peer's address into the shared address vector, joins the endpoint's owners and takes
  // the progress if no connection has it yet.
  OfiConnection(int peer, int rank, std::shared_ptr<OfiEndpoint> ep, std::string peerAddress,
                uint32_t key, size_t pieceBytes);
  ~OfiConnection() override;

  const char* transportName() const override { return "ofi"; }
  Result start(TransportEvents* events) override;
  void postSend(TransportRequest* r) override;
  void postRecv(TransportRequest* r) override;
  void onEvent(int lane, uint32_t events) override;
  bool needsPolling() const override;
  bool poll() override;
  bool prepareToBlock() override;
  void afterBlock() override;
  void onDoorbell() override;
  void goodbye() override;
  void abandon() override;
  void peerGone() override { ep_->unlinkPeerShmName(peer()); }
  uint64_t bytesMoved() const override { return bytes_; }

  const OfiEndpoint& endpoint() const { return *ep_; }
  uint32_t key() const { return key_; }

 private:
  // One libfabric message not handed to the provider yet (it answered FI_EAGAIN).
  struct Piece {
    TransportRequest* request = nullptr;  // null: the bye
    bool send = false;
    bool bye = false;
    size_t offset = 0, len = 0;
    uint32_t seq = 0;
  };

  void opDone(OfiOp* op, size_t len, uint64_t stamp) override;
  void opFailed(OfiOp* op, const fi_cq_err_entry& err, const std::string& text) override;
  void retryBacklog() override;

  void enqueue(TransportRequest* r, bool send);
  // Hands p to the provider; false if it must wait (FI_EAGAIN).
  bool post(const Piece& p);
  void requestPieceDone(TransportRequest* r);
  void checkLeft();
  size_t piecesOf(size_t bytes) const;
  void fail(const std::string& what);
  bool progress();  // true when the endpoint handled completions

  int rank_;
  std::shared_ptr<OfiEndpoint> ep_;
  fi_addr_t addr_;
  uint32_t key_;
  size_t pieceBytes_;
  bool progressOwner_;
  std::string addressAtStart_;  // the second constructor: inserted by start()
  bool owning_ = false;         // in the endpoint's owners
  TransportEvents* events_ = nullptr;
  std::deque<Piece> backlog_;
  uint32_t sendSeq_ = 0, recvSeq_ = 0;
  uint64_t messagesSent_ = 0;     // send requests posted (what our bye announces)
  uint64_t messagesReceived_ = 0; // receive requests completed
  int pendingSends_ = 0, pendingRecvs_ = 0;
  uint64_t byeOut_ = 0, byeIn_ = 0;           // messages sent, as our / the peer's bye says
  uint64_t byeReceivedOut_ = 0, peerReceived_ = 0;  // messages received, likewise
  bool byeArrived_ = false, leftReported_ = false, byeSent_ = false, abandoned_ = false;
  uint64_t bytes_ = 0;
  int timerFd_ = -1;          // polled providers: wakes the sleeping engine (see above)
  int backoffUs_ = kMinBackoffUs;
  bool handledSinceBlock_ = false;
  static constexpr int kMinBackoffUs = 20;
  static constexpr int kMaxBackoffUs = 1000;
};

}  // namespace mixccl
