// One peer over UCX: tagged sends and receives on the communicator's worker (ucx_worker.h),
// tags per ucx_tag.h, the endpoint made from the address that came over the authenticated
// control connection (ucx_handshake.h).
//
// Progress: the worker is shared by all of a communicator's UCX peers, so exactly one of them
// (drivesWorker) is polled by the engine and registers the worker's event fd: the engine spins
// on ucp_worker_progress for MIXCCL_SPIN_US, then prepareToBlock() arms the fd
// (ucp_worker_arm) and the engine sleeps in epoll until UCX signals it.
//
// Leaving: the goodbye (tag: the goodbye key, number 0) carries how many messages this rank
// sent to the peer and received from it. UCX matches by tag, so the goodbye can be matched
// before data the peer sent earlier has found its receive (posted later by the program); the
// peer counts as gone only once this rank has received as many messages as its goodbye says it
// sent, and its leaving is clean when nothing of ours is left over (a receive beyond those, or
// a send it never received).
//
// Failure: the endpoint uses UCP_ERR_HANDLING_MODE_PEER; UCX's error callback becomes
// peerFailed() naming the peer. Transports without peer-failure detection in UCX (UCX_TLS=sm)
// are covered by the control connection, which ends when the peer's process does.
//
// Memory: every UCX request keeps a small Op record that the completion callback consumes. On
// abandon() the records forget their TransportRequest (the engine fails those), the receives
// are cancelled and the endpoint is closed with UCP_EP_CLOSE_FLAG_FORCE, and the worker is
// progressed (bounded) until UCX has let go of every user buffer, so no late completion can
// write into memory the caller has already reused.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "transport/transport.h"
#include "transport/ucx/ucx_worker.h"

namespace mixccl {

// UCX's completion callbacks of every request of a UcxConnection (user data: its Op).
void ucxSendDone(void* request, ucs_status_t status, void* user);
void ucxRecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user);

struct UcxKeys {
  uint32_t sendKey = 0, sendByeKey = 0;  // the peer's keys for our messages
  uint32_t recvKey = 0, recvByeKey = 0;  // ours for its messages
};

class UcxConnection : public Connection {
 public:
  UcxConnection(int peer, std::string peerName, std::shared_ptr<UcxWorker> worker,
                const UcxKeys& keys, bool drivesWorker);
  ~UcxConnection() override;

  // Creates the endpoint to the peer's worker address (before start()).
  Result open(int rank, const std::vector<uint8_t>& peerAddress);
  // A pair connected on first use: start(), which runs under the engine's progress, creates the
  // endpoint, claims the worker's driving if no connection has it yet, and posts the wire-up
  // messages, which then finish as the engine progresses (nothing waits for them).
  void openAtStart(int rank, std::vector<uint8_t> peerAddress);
  // Wire-up: one empty message each way (tag: the goodbye key, number 1), posted here and
  // finished by progressing the worker (UcxTransport::connect). An endpoint UCX has wired up
  // needs nothing from the peer to send later, so a goodbye at Destroy never waits for a peer
  // that has already gone; and a UCX that cannot reach the peer fails init, not a collective.
  void postHello();
  bool helloDone() const { return helloPending_ == 0; }
  // UCX reported the endpoint failed (status in *why).
  bool endpointDead(std::string* why) const;

  const char* transportName() const override { return "ucx"; }
  bool canMove(MemoryKind kind) const override {
    return kind == MemoryKind::Host || worker_->movesDeviceMemory();
  }
  Result start(TransportEvents* events) override;
  void postSend(TransportRequest* r) override;
  void postRecv(TransportRequest* r) override;
  void onEvent(int lane, uint32_t events) override;
  bool needsPolling() const override { return drivesWorker_; }
  bool poll() override;
  bool prepareToBlock() override;
  void onDoorbell() override;
  void onControlGoodbye() override;
  void goodbye() override;
  void abandon() override;
  uint64_t bytesMoved() const override { return bytes_; }
  // The UCX transports of the endpoint's lanes, "tcp" or "posix,cma" (from ucp_ep_print_info,
  // the one place UCX 1.13 names them).
  std::string detail() const override { return lanes_; }
  // This rank's worker address (tests play a stranger who learned it).
  const std::vector<uint8_t>& localAddress() const { return worker_->address(); }

  // One UCX request in flight (or the goodbye); public for the C callbacks.
  struct Op {
    enum Kind : uint8_t { Send, Recv, ByeSend, ByeRecv, HelloSend, HelloRecv };
    UcxConnection* conn = nullptr;  // null once the connection is gone
    TransportRequest* req = nullptr;  // null once abandoned (the engine failed it)
    Kind kind = Send;
    void* ucxRequest = nullptr;
    bool posting = false;          // inside ucp_tag_recv_nbx
    bool completedInline = false;  // its callback ran there: status and length below
    ucs_status_t status = UCS_OK;
    size_t length = 0;
    // A data message's call stamp (base/call_stamp.h) and, in the forms of ucx_stamped.h, the
    // IOV of stamp and payload; plain: a message without its stamp (not the first of its call).
    uint64_t stamp = 0;
    ucp_dt_iov_t iov[2];
    bool plain = false;
    std::unique_ptr<char[]> bounce;  // stamp and payload in one contiguous buffer
    // ByeSend / ByeRecv: messages sent and received by the rank that says goodbye.
    uint64_t counts[2] = {0, 0};
  };
  void finish(Op* op, ucs_status_t status, size_t length);
  void endpointFailed(ucs_status_t status);

 private:
  void fail(const std::string& what);
  void postByeRecv();
  // The peer's goodbye arrived (counts: what it sent and received).
  void onPeerGoodbye(const uint64_t counts[2]);
  // Reports the peer as gone once its goodbye has arrived and every message it sent has been
  // received here (see "Leaving" above).
  void checkLeft();
  // Receives under tag into buf (iov: buf is an array of bytes ucp_dt_iov_t entries).
  void postTagRecv(Op* op, void* buf, size_t bytes, uint64_t tag, bool iov = false);
  // A data message with its stamp, in the form its size calls for (ucx_stamped.cc); op is the
  // data part's record.
  void postStampedSend(Op* op, TransportRequest* r);
  void postStampedRecv(Op* op, TransportRequest* r);
  // Whether what a receive got is what r expects: its stamp first, then its size. Reports a
  // difference to the engine and returns false.
  bool checkStampedRecv(Op* op, TransportRequest* r, ucs_status_t status, size_t length);
  // Sends under tag; an op UCX finished at once (or refused) goes to finish() at once.
  void postTagSend(Op* op, const void* buf, size_t bytes, uint64_t tag, bool iov = false);
  // Closes the endpoint (force: without the peer) and progresses the worker until UCX has
  // finished every request of this connection or the bound passes.
  void closeEndpoint(bool force, int boundMs);

  std::string peerName_;
  std::shared_ptr<UcxWorker> worker_;
  UcxKeys keys_;
  bool drivesWorker_;
  ucp_ep_h ep_ = nullptr;
  TransportEvents* events_ = nullptr;
  std::unordered_set<Op*> ops_;
  uint32_t sendSeq_ = 0, recvSeq_ = 0;
  bool abandoned_ = false;
  bool peerErrorMode_ = true;  // the endpoint has UCP_ERR_HANDLING_MODE_PEER
  bool failed_ = false;        // UCX reported the endpoint dead
  ucs_status_t failure_ = UCS_OK;
  uint64_t messagesSent_ = 0;      // sends posted and ...
  uint64_t messagesReceived_ = 0;  // ... receives completed: what our goodbye announces
  bool byeArrived_ = false;        // the peer's goodbye arrived over UCX, saying:
  uint64_t peerSent_ = 0, peerReceived_ = 0;  // ... how many messages it sent and received
  bool peerLeft_ = false;          // reported to the engine (checkLeft)
  bool byeSent_ = false;
  bool controlGoodbye_ = false;  // the peer's goodbye arrived on the control connection
  uint64_t bytes_ = 0;
  std::string lanes_;
  int helloPending_ = 0;
  int rank_ = -1;                       // openAtStart: this rank, and ...
  std::vector<uint8_t> addressAtStart_;  // ... the peer's worker address
};

}  // namespace mixccl
