// The data messages of UcxConnection with their call stamps (ucx_stamped.h says the forms).
#include <cstring>
#include <string>

#include "transport/ucx/ucx_connection.h"
#include "transport/ucx/ucx_stamped.h"
#include "transport/ucx/ucx_tag.h"

namespace mixccl {
namespace {

// The IOV [stamp][payload] of op, with the request parameters every stamped post shares.
ucp_request_param_t iovParam(UcxConnection::Op* op, void* buf, size_t bytes) {
  op->iov[0].buffer = &op->stamp;
  op->iov[0].length = sizeof(op->stamp);
  op->iov[1].buffer = buf;
  op->iov[1].length = bytes;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = ucp_dt_make_iov();
  p.user_data = op;
  return p;
}

std::string sizeMismatch(const std::string& sent, size_t posted) {
  return "sent a message of " + sent + " bytes to a receive of " + std::to_string(posted) +
         " bytes (mismatched calls?)";
}

}  // namespace

void UcxConnection::postStampedSend(Op* op, TransportRequest* r) {
  const uint64_t tag = ucxTag(keys_.sendKey, r->seq);
  op->stamp = r->stamp;
  if (ucxStampSplit(r->bytes)) {
    Op* stamp = new Op;
    stamp->conn = this;
    stamp->req = r;
    stamp->kind = Op::StampSend;
    stamp->stamp = r->stamp;
    op->split = true;
    postTagSend(stamp, &stamp->stamp, sizeof(stamp->stamp), tag);
    postTagSend(op, r->buf, r->bytes, ucxTag(keys_.sendKey, r->seq + 1));
    return;
  }
  ucp_request_param_t p = iovParam(op, r->buf, r->bytes);
  p.cb.send = ucxSendDone;
  ucs_status_ptr_t sp;
  if (r->bytes <= kUcxBounceBytes && r->memory == MemoryKind::Host) {
    op->bounce.reset(new char[sizeof(op->stamp) + r->bytes]);
    memcpy(op->bounce.get(), &op->stamp, sizeof(op->stamp));
    if (r->bytes) memcpy(op->bounce.get() + sizeof(op->stamp), r->buf, r->bytes);
    p.datatype = ucp_dt_make_contig(1);
    sp = ucp_tag_send_nbx(ep_, op->bounce.get(), sizeof(op->stamp) + r->bytes, tag, &p);
  } else {
    sp = ucp_tag_send_nbx(ep_, op->iov, r->bytes ? 2 : 1, tag, &p);
  }
  if (UCS_PTR_IS_PTR(sp)) {
    op->ucxRequest = sp;
    ops_.insert(op);
  } else {
    finish(op, UCS_PTR_STATUS(sp), 0);  // done at once (UCS_OK) or refused
  }
}

// As postTagRecv: no immediate completion, so the callback always reports the length.
void UcxConnection::postStampedRecv(Op* op, TransportRequest* r) {
  const uint64_t tag = ucxTag(keys_.recvKey, r->seq);
  op->stamp = 0;
  if (ucxStampSplit(r->bytes)) {
    r->assigned = 0;  // parts received: 1 the stamp, 2 the payload
    Op* stamp = new Op;
    stamp->conn = this;
    stamp->req = r;
    stamp->kind = Op::StampRecv;
    stamp->bounce.reset(new char[sizeof(uint64_t) + kUcxSplitBytes]);
    op->split = true;
    postTagRecv(stamp, stamp->bounce.get(), sizeof(uint64_t) + kUcxSplitBytes, tag);
    postTagRecv(op, r->buf, r->bytes, ucxTag(keys_.recvKey, r->seq + 1));
    return;
  }
  ucp_request_param_t p = iovParam(op, r->buf, r->bytes);
  p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = ucxRecvDone;
  op->posting = true;
  ucs_status_ptr_t sp =
      ucp_tag_recv_nbx(worker_->handle(), op->iov, r->bytes ? 2 : 1, tag, kUcxFullTagMask, &p);
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

// A message too long for the receive (UCX truncates it) may not have delivered its stamp, so
// only its size can be reported then.
bool UcxConnection::checkStampedRecv(Op* op, TransportRequest* r, ucs_status_t status,
                                     size_t length) {
  const size_t stampBytes = sizeof(uint64_t);
  size_t payload = r->bytes;  // what this part expects after the stamp
  uint64_t theirs = op->stamp;
  bool stampHere = true;
  if (op->kind == Op::StampRecv) {
    payload = 0;
    if (status == UCS_OK && length >= stampBytes) memcpy(&theirs, op->bounce.get(), stampBytes);
  } else if (op->split) {
    stampHere = false;  // the payload of the split form: its size only
  }
  if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    events_->protocolError(peer(),
                           sizeMismatch("more than " + std::to_string(r->bytes), r->bytes));
    return false;
  }
  if (status != UCS_OK) return true;  // cancelled or failed: finish() reports it
  if (stampHere && length >= stampBytes && theirs != r->stamp) {
    events_->callMismatch(peer(), theirs, r->stamp);
    return false;
  }
  const size_t expected = (stampHere ? stampBytes : 0) + payload;
  if (length != expected) {
    size_t sent = stampHere ? (length < stampBytes ? 0 : length - stampBytes) : length;
    // A lone stamp where a whole message was expected: the stamp of a split-form message.
    std::string what = op->kind == Op::Recv && stampHere && length == stampBytes && payload
                           ? "more than " + std::to_string(kUcxSplitBytes)
                           : std::to_string(sent);
    events_->protocolError(peer(), sizeMismatch(what, r->bytes));
    return false;
  }
  return true;
}

}  // namespace mixccl
