#include "transport/ucx/ucx_connection.h"

#include <sched.h>

#include <cstring>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/ucx/ucx_stamped.h"
#include "transport/ucx/ucx_tag.h"

namespace mixccl {
namespace {

// How long Destroy may spend letting UCX finish with this peer: sending our goodbye, then
// draining what a forced close cancelled. Past it the endpoint is given up on (UCX releases it
// with the worker); a dead or stopped peer never makes Destroy hang.
constexpr int kByeBoundMs = 200;
constexpr int kDrainBoundMs = 500;
// The goodbye's payload: messages sent, messages received (Op::counts).
constexpr size_t kByeBytes = 2 * sizeof(uint64_t);

void onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<UcxConnection*>(arg)->endpointFailed(status);
}

bool inProgress(void* request) {
  return request && ucp_request_check_status(request) == UCS_INPROGRESS;
}

}  // namespace

void ucxSendDone(void* request, ucs_status_t status, void* user) {
  auto* op = static_cast<UcxConnection::Op*>(user);
  op->ucxRequest = nullptr;
  ucp_request_free(request);
  if (op->conn)
    op->conn->finish(op, status, 0);
  else
    delete op;  // its connection is gone (Destroy gave up waiting for it)
}

void ucxRecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* op = static_cast<UcxConnection::Op*>(user);
  op->ucxRequest = nullptr;
  size_t length = status == UCS_OK && info ? info->length : 0;
  ucp_request_free(request);
  if (op->posting) {  // completed inside ucp_tag_recv_nbx: the poster finishes it
    op->completedInline = true;
    op->status = status;
    op->length = length;
    return;
  }
  if (op->conn)
    op->conn->finish(op, status, length);
  else
    delete op;
}

UcxConnection::UcxConnection(int peer, std::string peerName, std::shared_ptr<UcxWorker> worker,
                             const UcxKeys& keys, bool drivesWorker)
    : Connection(peer), peerName_(std::move(peerName)), worker_(std::move(worker)), keys_(keys),
      drivesWorker_(drivesWorker) {}

Result UcxConnection::open(int rank, const std::vector<uint8_t>& peerAddress) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t*>(peerAddress.data());
  // PEER: UCX detects a dead peer (where the transport can) and fails its requests instead of
  // leaving them pending; also what a forced close requires on both sides.
  p.err_mode = worker_->peerErrorMode() ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  p.err_handler.cb = onEndpointError;
  p.err_handler.arg = this;
  ucs_status_t st = ucp_ep_create(worker_->handle(), &p, &ep_);
  if (st == UCS_ERR_UNREACHABLE && p.err_mode == UCP_ERR_HANDLING_MODE_PEER) {
    // The transports in force (UCX_TLS=sm: posix, sysv, cma) cannot detect a dead peer, so
    // UCX refuses PEER mode; without it the control connection still tells of a peer's death.
    worker_->disablePeerErrorMode();
    INFO(kLogInit | kLogNet, "rank %d: UCX cannot detect peer failures over the transports in "
         "force (%s): endpoints without UCP_ERR_HANDLING_MODE_PEER; the control connection "
         "detects a dead peer", rank, ucxTlsSetting().c_str());
    p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    st = ucp_ep_create(worker_->handle(), &p, &ep_);
  }
  if (st != UCS_OK) {
    ep_ = nullptr;
    return raiseError(mixcclSystemError, "rank %d: transport 'ucx': cannot create an endpoint to "
                      "%s: %s (%s)", rank, peerName_.c_str(), ucxStatusText(st),
                      ucxTlsSetting().c_str());
  }
  peerErrorMode_ = p.err_mode == UCP_ERR_HANDLING_MODE_PEER;
  std::string info = ucxEndpointInfo(ep_);
  lanes_ = ucxEndpointTransports(info);
  size_t eager = ucxEagerShortBytes(info);
  if (eager) lanes_ += ", eager up to " + std::to_string(eager) + " bytes";
  return mixcclSuccess;
}

UcxConnection::~UcxConnection() {
  bool clean = !abandoned_ && !failed_ && !(events_ && events_->failed());
  if (clean) {
    // Our goodbye must leave before the endpoint goes, so the peer tells our exit from a
    // crash. A flush would wait for the peer to progress (UCX acknowledges over tcp with a
    // message), which a peer that left first never does; the goodbye's local completion
    // needs nothing from the peer, the endpoint being wired up since init.
    Deadline d = Deadline::afterSeconds(kByeBoundMs / 1000.0);
    auto byePending = [&] {
      for (Op* op : ops_)
        if (op->kind == Op::ByeSend) return true;
      return false;
    };
    while (byePending() && !d.expired())
      if (!worker_->progress()) sched_yield();
  }
  for (Op* op : ops_) op->req = nullptr;
  closeEndpoint(true, kDrainBoundMs);
  // What UCX still holds after the bound is orphaned: its callback frees the record.
  for (Op* op : ops_) op->conn = nullptr;
}

void UcxConnection::openAtStart(int rank, std::vector<uint8_t> peerAddress) {
  rank_ = rank;
  addressAtStart_ = std::move(peerAddress);
}

Result UcxConnection::start(TransportEvents* events) {
  events_ = events;
  if (!addressAtStart_.empty()) {
    MIXCCL_CHECK(open(rank_, addressAtStart_));
    addressAtStart_.clear();
    drivesWorker_ = worker_->claimDriver();
    postHello();
  }
  if (drivesWorker_) events_->setInterest(this, 0, worker_->eventFd(), EPOLLIN);
  postByeRecv();
  if (failed_) endpointFailed(failure_);  // UCX spoke up before the engine existed
  return mixcclSuccess;
}

void UcxConnection::postHello() {
  helloPending_ = 2;
  Op* recv = new Op;
  recv->conn = this;
  recv->kind = Op::HelloRecv;
  postTagRecv(recv, nullptr, 0, ucxTag(keys_.recvByeKey, 1));
  Op* send = new Op;
  send->conn = this;
  send->kind = Op::HelloSend;
  postTagSend(send, nullptr, 0, ucxTag(keys_.sendByeKey, 1));
}

bool UcxConnection::endpointDead(std::string* why) const {
  if (!failed_) return false;
  *why = ucxStatusText(failure_);
  return true;
}

void UcxConnection::postByeRecv() {
  Op* op = new Op;
  op->conn = this;
  op->kind = Op::ByeRecv;
  postTagRecv(op, op->counts, kByeBytes, ucxTag(keys_.recvByeKey, 0));
}

// UCX 1.13 leaves recv_info unfilled when a tagged receive completes at once (a message that
// was already waiting), so the length of such a message would be unknown. Denying immediate
// completion makes UCX report every receive through the callback, with its length; the
// callback may then run inside ucp_tag_recv_nbx, which op->posting tells it.
void UcxConnection::postTagRecv(Op* op, void* buf, size_t bytes, uint64_t tag, bool iov) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  if (iov) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_iov();
  }
  p.cb.recv = ucxRecvDone;
  p.user_data = op;
  op->posting = true;
  // The full mask: only a message with exactly this key and number can land in buf.
  ucs_status_ptr_t sp = ucp_tag_recv_nbx(worker_->handle(), buf, bytes, tag, kUcxFullTagMask, &p);
  op->posting = false;
  if (op->completedInline) {
    finish(op, op->status, op->length);
  } else if (UCS_PTR_IS_PTR(sp)) {
    op->ucxRequest = sp;
    ops_.insert(op);
  } else {
    finish(op, UCS_PTR_STATUS(sp), 0);
  }
}

void UcxConnection::postTagSend(Op* op, const void* buf, size_t bytes, uint64_t tag, bool iov) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  if (iov) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_iov();
  }
  p.cb.send = ucxSendDone;
  p.user_data = op;
  ucs_status_ptr_t sp = ucp_tag_send_nbx(ep_, buf, bytes, tag, &p);
  if (UCS_PTR_IS_PTR(sp)) {
    op->ucxRequest = sp;
    ops_.insert(op);
  } else {
    finish(op, UCS_PTR_STATUS(sp), 0);  // done at once (UCS_OK) or refused
  }
}

void UcxConnection::postSend(TransportRequest* r) {
  r->seq = sendSeq_++;
  ++messagesSent_;
  Op* op = new Op;
  op->conn = this;
  op->req = r;
  op->kind = Op::Send;
  postStampedSend(op, r);
}

void UcxConnection::postRecv(TransportRequest* r) {
  r->seq = recvSeq_++;
  Op* op = new Op;
  op->conn = this;
  op->req = r;
  op->kind = Op::Recv;
  postStampedRecv(op, r);
}

void UcxConnection::finish(Op* op, ucs_status_t status, size_t length) {
  ops_.erase(op);
  TransportRequest* r = op->req;
  Op::Kind kind = op->kind;
  // A receive's stamp and size are judged before anything else (ucx_stamped.cc).
  bool stampOk = !r || !events_ || kind != Op::Recv || checkStampedRecv(op, r, status, length);
  const uint64_t counts[2] = {op->counts[0], op->counts[1]};
  delete op;
  if (!stampOk) return;
  if (kind == Op::ByeSend) return;
  if (kind == Op::HelloSend || kind == Op::HelloRecv) {
    if (status == UCS_OK) --helloPending_;
    else if (!failed_ && status != UCS_ERR_CANCELED) endpointFailed(status);
    return;
  }
  if (kind == Op::ByeRecv) {
    if (abandoned_ || !events_) return;
    if (status == UCS_ERR_MESSAGE_TRUNCATED || (status == UCS_OK && length != kByeBytes)) {
      events_->protocolError(peer(), "sent a goodbye of " +
                                         std::string(status == UCS_OK ? "" : "more than ") +
                                         std::to_string(status == UCS_OK ? length : kByeBytes) +
                                         " bytes (expected " + std::to_string(kByeBytes) + ")");
      return;
    }
    if (status == UCS_OK) onPeerGoodbye(counts);
    return;  // otherwise cancelled (abandon, destroy)
  }
  if (!r || !events_) return;  // abandoned: the engine has failed the request itself
  // After the peer's goodbye its end is closed (forced), and UCX may fail a send whose
  // completion had not come back yet. If the peer received every send of ours, this one was
  // delivered.
  if (status != UCS_OK && kind == Op::Send && byeArrived_ && messagesSent_ <= peerReceived_)
    status = UCS_OK;
  if (status != UCS_OK) {
    fail(std::string(kind == Op::Send ? "send" : "receive") + " failed in UCX: " +
         ucxStatusText(status));
    return;
  }
  bytes_ += r->bytes;
  events_->complete(r, mixcclSuccess);
  if (kind == Op::Recv) {
    ++messagesReceived_;
    checkLeft();
  }
}

void UcxConnection::onPeerGoodbye(const uint64_t counts[2]) {
  if (byeArrived_) return;
  // What the peer says must fit what happened here: it cannot have received more than this
  // rank sent, nor sent fewer than this rank already received.
  if (counts[1] > messagesSent_ || counts[0] < messagesReceived_) {
    events_->protocolError(peer(), "said goodbye having sent " + std::to_string(counts[0]) +
                                       " and received " + std::to_string(counts[1]) +
                                       " messages, but this rank received " +
                                       std::to_string(messagesReceived_) + " and sent " +
                                       std::to_string(messagesSent_));
    return;
  }
  byeArrived_ = true;
  peerSent_ = counts[0];
  peerReceived_ = counts[1];
  checkLeft();
}

void UcxConnection::checkLeft() {
  // Receives complete only for messages the peer sent, so once as many as it sent have
  // completed, every one of them has (whatever order UCX completed them in).
  if (!byeArrived_ || peerLeft_ || messagesReceived_ < peerSent_) return;
  peerLeft_ = true;
  // Left over: a receive beyond what the peer sent, or a send it never received. A send it
  // did receive may still await UCX's completion here: that is no pending work.
  bool pending = messagesSent_ > peerReceived_;
  for (Op* o : ops_) pending = pending || o->kind == Op::Recv;
  events_->peerLeft(peer(), pending);
}

void UcxConnection::fail(const std::string& what) {
  if (abandoned_ || !events_) return;
  events_->peerFailed(peer(), what);
}

void UcxConnection::endpointFailed(ucs_status_t status) {
  failed_ = true;
  failure_ = status;
  // After the peer's goodbye its endpoint going away is the expected end, not a failure.
  if (byeArrived_ || controlGoodbye_ || abandoned_ || !events_) return;
  events_->peerFailed(peer(), std::string("UCX reports the endpoint failed (") +
                                  ucxStatusText(status) + ")");
}

void UcxConnection::onEvent(int, uint32_t) { worker_->progress(); }

bool UcxConnection::poll() { return worker_->progress(); }

bool UcxConnection::prepareToBlock() {
  if (!drivesWorker_) return true;
  if (worker_->progress()) return false;
  return worker_->arm();
}

void UcxConnection::onDoorbell() { worker_->progress(); }

// The peer has left cleanly: whatever UCX reports of its endpoint from now on (the peer's
// forced close) is its exit, not a failure. Whether it left work behind is for its UCX
// goodbye to say, which was sent before this one and counts its messages (checkLeft): the
// control connection can overtake UCX, and messages the peer sent may not have found their
// receives here yet, so nothing about the pair is decided here.
void UcxConnection::onControlGoodbye() {
  controlGoodbye_ = true;
  worker_->progress();
}

void UcxConnection::goodbye() {
  if (byeSent_ || failed_ || abandoned_ || !ep_) return;
  byeSent_ = true;
  Op* op = new Op;
  op->conn = this;
  op->kind = Op::ByeSend;
  op->counts[0] = messagesSent_;
  op->counts[1] = messagesReceived_;
  postTagSend(op, op->counts, kByeBytes, ucxTag(keys_.sendByeKey, 0));  // finish() frees it
}

void UcxConnection::abandon() {
  if (abandoned_) return;
  abandoned_ = true;
  for (Op* op : ops_) op->req = nullptr;
  closeEndpoint(true, kDrainBoundMs);
}

void UcxConnection::closeEndpoint(bool force, int boundMs) {
  // Receives wait in the worker's queue, not on the endpoint: cancel them explicitly (their
  // callbacks may run inside the cancel, so walk a copy).
  std::vector<Op*> recvs;
  for (Op* op : ops_)
    if ((op->kind == Op::Recv || op->kind == Op::ByeRecv) && op->ucxRequest) recvs.push_back(op);
  for (Op* op : recvs)
    if (ops_.count(op) && op->ucxRequest) ucp_request_cancel(worker_->handle(), op->ucxRequest);
  void* closing = nullptr;
  if (ep_) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    // A forced close is defined only for endpoints in PEER mode; the others flush (bounded
    // below: a flush to a dead shared-memory peer completes locally).
    p.flags = force && peerErrorMode_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t sp = ucp_ep_close_nbx(ep_, &p);
    ep_ = nullptr;
    if (UCS_PTR_IS_PTR(sp)) closing = sp;
  }
  // Wait for the receives only: they are what could still write into a caller's buffer. A
  // forced close has completed the sends; without PEER mode (shared memory) a rendezvous send
  // to a dead peer never completes, but nothing of ours reads its buffer any more (the peer
  // would have fetched it), so it is left to UCX rather than delaying the failure report.
  auto receiving = [&] {
    for (Op* op : ops_)
      if (op->kind == Op::Recv || op->kind == Op::ByeRecv || op->kind == Op::HelloRecv) return true;
    return false;
  };
  Deadline d = Deadline::afterSeconds(boundMs / 1000.0);
  while ((inProgress(closing) || receiving()) && !d.expired())
    if (!worker_->progress()) sched_yield();
  if (closing) ucp_request_free(closing);
  if (receiving())
    WARN(kLogNet, "transport 'ucx': a receive from %s still held by UCX after %d ms; left to "
         "UCX", peerName_.c_str(), boundMs);
}

}  // namespace mixccl
