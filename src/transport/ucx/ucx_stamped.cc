// The data messages of UcxConnection with their call stamps (ucx_stamped.h says the forms).
#include <cstring>
#include <string>

#include "transport/ucx/ucx_connection.h"
#include "transport/ucx/ucx_stamped.h"
#include "transport/ucx/ucx_tag.h"

namespace mixccl {
namespace {

constexpr size_t kStampBytes = sizeof(uint64_t);

// The IOV [stamp][payload] of op.
void fillIov(UcxConnection::Op* op, void* buf, size_t bytes) {
  op->iov[0].buffer = &op->stamp;
  op->iov[0].length = kStampBytes;
  op->iov[1].buffer = buf;
  op->iov[1].length = bytes;
}

bool bounced(const TransportRequest& r) {
  return r.bytes <= kUcxBounceBytes && r.memory == MemoryKind::Host;
}

std::string sizeMismatch(const std::string& sent, size_t posted) {
  return "sent a message of " + sent + " bytes to a receive of " + std::to_string(posted) +
         " bytes (mismatched calls?)";
}

}  // namespace

void UcxConnection::postStampedSend(Op* op, TransportRequest* r) {
  const uint64_t tag = ucxTag(keys_.sendKey, r->seq);
  op->stamp = r->stamp;
  if (!r->callStart) {
    op->plain = true;
    postTagSend(op, r->buf, r->bytes, tag);
    return;
  }
  if (bounced(*r)) {
    op->bounce.reset(new char[kStampBytes + r->bytes]);
    memcpy(op->bounce.get(), &op->stamp, kStampBytes);
    if (r->bytes) memcpy(op->bounce.get() + kStampBytes, r->buf, r->bytes);
    postTagSend(op, op->bounce.get(), kStampBytes + r->bytes, tag);
    return;
  }
  fillIov(op, r->buf, r->bytes);
  postTagSend(op, op->iov, 2, tag, /*iov=*/true);
}

void UcxConnection::postStampedRecv(Op* op, TransportRequest* r) {
  const uint64_t tag = ucxTag(keys_.recvKey, r->seq);
  op->stamp = 0;
  if (!r->callStart) {
    op->plain = true;
    postTagRecv(op, r->buf, r->bytes, tag);
    return;
  }
  if (bounced(*r)) {
    op->bounce.reset(new char[kStampBytes + r->bytes]);
    postTagRecv(op, op->bounce.get(), kStampBytes + r->bytes, tag);
    return;
  }
  fillIov(op, r->buf, r->bytes);
  postTagRecv(op, op->iov, 2, tag, /*iov=*/true);
}

// A message too long for the receive (UCX truncates it) may not have delivered its stamp: the
// engine then waits briefly for the peer, which meets this rank's smaller message, to name both
// calls (TransportEvents::callSizeMismatch).
bool UcxConnection::checkStampedRecv(Op* op, TransportRequest* r, ucs_status_t status,
                                     size_t length) {
  // Whether the stamp is in front of this message's payload.
  const bool stampHere = !op->plain;
  if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    const std::string sent = "more than " + std::to_string(r->bytes);
    if (stampHere && r->stamp) events_->callSizeMismatch(peer(), r->stamp, sent, r->bytes);
    else events_->protocolError(peer(), sizeMismatch(sent, r->bytes));
    return false;
  }
  if (status != UCS_OK) return true;  // cancelled or failed: finish() reports it
  uint64_t theirs = op->stamp;
  if (stampHere && op->bounce && length >= kStampBytes)
    memcpy(&theirs, op->bounce.get(), kStampBytes);
  if (stampHere && length >= kStampBytes && theirs != r->stamp) {
    events_->callMismatch(peer(), theirs, r->stamp);
    return false;
  }
  const size_t expected = (stampHere ? kStampBytes : 0) + r->bytes;
  if (length != expected) {
    size_t sent = stampHere ? (length < kStampBytes ? 0 : length - kStampBytes) : length;
    events_->protocolError(peer(), sizeMismatch(std::to_string(sent), r->bytes));
    return false;
  }
  if (stampHere && op->bounce && r->bytes)
    memcpy(r->buf, op->bounce.get() + kStampBytes, r->bytes);
  return true;
}

}  // namespace mixccl
