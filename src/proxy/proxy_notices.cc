// The proxy's notices to and from its peers about failures and waits (frame.h,
// wait_notice.h): the peer-failed notice a failing rank sends, and how a rank that hears one
// reports it; the waiting notices that let a rank whose wait runs out blame the rank that
// stopped rather than one that waits for it (stall_tracker.h, docs/reliability.md "Naming the
// cause"); the notice of mismatched calls (docs/reliability.md "Mismatched calls").
#include <algorithm>
#include <chrono>

#include "base/call_stamp.h"
#include "proxy/proxy.h"
#include "transport/wait_notice.h"

namespace mixccl {

// Waiting notices go out a quarter of the timeout before the deadline (0.1-2 s): long enough
// for the peers a notice names to answer with theirs, and for their peers, before any of the
// ranks that wait reaches its deadline; short enough that a wait that merely takes long
// rarely sends one.
Clock::duration waitingNoticeLead(double timeoutS) {
  double s = std::min(2.0, std::max(0.1, timeoutS / 4));
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

void Proxy::handleNotice(int from, const FrameHeader& h, const std::string& payload) {
  if (h.flags == kFrameFlagPeerFailed) handlePeerFailedNotice(from, h, payload);
  if (h.flags == kFrameFlagWaiting) handleWaitingNotice(from, h, payload);
  if (h.flags == kFrameFlagCallMismatch) handleCallMismatchNotice(from, h);
  if (h.flags == kFrameFlagRevoked) handleRevokedNotice(from, h);
}

// The message every rank of a revoked communicator reports, the revoking rank's included.
static std::string revokedMessage(const std::string& me, const std::string& by) {
  return me + ": the communicator was revoked by " + by + " (mixcclCommRevoke)";
}

void Proxy::revoke() {
  if (health_.failed()) return;
  revokedBy_.store(params_.rank);
  // The revoking rank's own calls were made invalid by its own call: mixcclInvalidUsage, as
  // after mixcclCommAbort; the peers hear of it as a remote error.
  if (!health_.fail(mixcclInvalidUsage, revokedMessage(me(), "this rank"))) {
    revokedBy_.store(-1);  // another failure came first: failEverything reports that one
    return;
  }
  // The notices go out before this returns: a caller that destroys the communicator next would
  // otherwise cut the connections first, and the peers would hear of a crash, not a revoke.
  // (A caller waiting in another thread holds the lock for one round at most: the failure
  // woke it.)
  std::lock_guard<std::mutex> lock(progressMutex_);
  failOnceIfFailed();
}

// seq: the revoking rank. Relayed as it came (failEverything), so every rank names the same one.
void Proxy::handleRevokedNotice(int from, const FrameHeader& notice) {
  if (notice.seq >= (uint32_t)params_.nranks || (int)notice.seq == params_.rank) {
    health_.fail(mixcclRemoteError, me() + ": " + params_.peerNames[from] +
                                        " sent an invalid frame on its control connection");
    return;
  }
  const int by = (int)notice.seq;
  revokedBy_.store(by);
  std::string what = revokedMessage(me(), params_.peerNames[by]);
  if (by != from) what += " (reported by " + params_.peerNames[from] + ")";
  if (!health_.fail(mixcclRemoteError, what, by)) revokedBy_.store(-1);
}

void Proxy::handlePeerFailedNotice(int from, const FrameHeader& h, const std::string& payload) {
  const std::string& sender = params_.peerNames[from];
  if (!payload.empty()) {
    // A timeout elsewhere: say whom it was blamed on, and pass the same list on.
    WaitNotice n;
    std::string why;
    if (!decodeWaitNotice(h.flags, h.seq, from, params_.nranks, payload, &n, &why)) {
      health_.fail(mixcclRemoteError, me() + ": " + sender + " sent an invalid peer-failed " +
                                          "notice on its control connection (" + why + ")");
      return;
    }
    if (health_.fail(mixcclRemoteError,
                     me() + ": " + describeTimeout(n.timedOut, n.edges, params_.peerNames, false) +
                         " (reported by " + sender + ")",
                     n.edges[0].peer))
      failureNotice_ = payload;
    return;
  }
  const uint32_t who = h.seq;
  bool named = who < (uint32_t)params_.nranks && (int)who != params_.rank;
  std::string culprit = named ? params_.peerNames[who] : sender;
  health_.fail(mixcclRemoteError, me() + ": " + culprit + " failed (reported by " + sender + ")",
               who < (uint32_t)params_.nranks ? (int)who : from);
}

void Proxy::handleWaitingNotice(int from, const FrameHeader& h, const std::string& payload) {
  WaitNotice n;
  std::string why;
  if (!decodeWaitNotice(h.flags, h.seq, from, params_.nranks, payload, &n, &why)) {
    health_.fail(mixcclRemoteError, me() + ": " + params_.peerNames[from] + " sent an invalid " +
                                        "waiting notice on its control connection (" + why + ")");
    return;
  }
  const auto now = Clock::now();
  stalls_.heard(from, n.edges, now);
  // The peer waits for this rank. If this rank waits too, it says for whom now rather than
  // near its own deadline: the peer may reach its deadline first, and must then be able to
  // follow the waits past this rank to the one that stopped.
  for (const WaitEdge& e : n.edges)
    if (e.peer == params_.rank && stalls_.waiting()) {
      sampleProgress(now);
      reportWaits(now);
      return;
    }
}

void Proxy::sampleProgress(Clock::time_point now) {
  nextSample_ = now + kSampleEvery;
  progressScratch_.assign(params_.nranks, 0);
  for (const TransportRequest* r : live_)
    if (r->peer >= 0 && r->peer < params_.nranks) progressScratch_[r->peer] += r->done;
  for (int p = 0; p < params_.nranks; ++p)
    if (stalls_.waitingFor(p))
      stalls_.sample(p, progressScratch_[p] + (conns_[p] ? conns_[p]->bytesMoved() : 0), now);
}

void Proxy::reportWaits(Clock::time_point now) {
  if (!stalls_.mayReport(now, reportLead_ / 2)) return;
  WaitNotice n;
  n.edges = stalls_.waits(now);
  if (n.edges.empty()) return;
  const std::string payload = encodeWaitNotice(n);
  for (ControlChannel& c : control_)
    if (c.valid()) c.send(kFrameFlagWaiting, 0, false, payload);
  stalls_.reported(now);
}

void Proxy::failOnTimeout(const TransportRequest* r) {
  const auto now = Clock::now();
  sampleProgress(now);
  WaitNotice n;
  n.timedOut = params_.rank;
  std::vector<bool> canHear(params_.nranks, false);
  for (int p = 0; p < params_.nranks; ++p) canHear[p] = control_[p].valid();
  n.edges = stalls_.blame(now, 2 * reportLead_, canHear);
  // r itself is always among the waits once drained; a request not drained yet still names
  // the peer it was posted to.
  if (n.edges.empty()) n.edges.push_back(WaitEdge{params_.rank, r->peer, 0});
  if (health_.fail(mixcclTimeout,
                   me() + ": " + describeTimeout(params_.rank, n.edges, params_.peerNames, true) +
                       " (MIXCCL_TIMEOUT_S)",
                   n.edges[0].peer))
    failureNotice_ = encodeWaitNotice(n);
}

// The failure's notice to the peers then carries both calls (failEverything), so a rank whose
// part of the call only sends (a Broadcast's root), or that waits on another peer, names them
// too instead of a failed rank.
void Proxy::callMismatch(int peer, uint64_t theirs, uint64_t mine) {
  if (health_.failed()) return;
  mismatchNotice_ = FrameHeader{kFrameMagic, (uint32_t)peer, theirs, (uint64_t)params_.rank, 0,
                                kFrameFlagCallMismatch, mine};
  health_.fail(mixcclInvalidUsage, me() + ": " + callMismatchMessage(params_.peerNames[peer],
                                                                    theirs, params_.rank, mine));
}

// notice: seq = the rank whose message did not match, total = its stamp, offset = the rank
// that found it, stamp = that rank's. Relayed as it came, so every rank names the same two.
void Proxy::handleCallMismatchNotice(int from, const FrameHeader& notice) {
  const uint64_t n = (uint64_t)params_.nranks;
  if (notice.seq >= n || notice.offset >= n || notice.seq == notice.offset) {
    health_.fail(mixcclRemoteError, me() + ": " + params_.peerNames[from] +
                                        " sent an invalid frame on its control connection");
    return;
  }
  const int sender = (int)notice.seq, finder = (int)notice.offset;
  std::string what;
  if (sender == params_.rank)
    what = callMismatchMessage(params_.peerNames[finder], notice.stamp, params_.rank, notice.total);
  else if (finder == params_.rank)
    what = callMismatchMessage(params_.peerNames[sender], notice.total, params_.rank, notice.stamp);
  else
    what = params_.peerNames[sender] + " called " + describeCallStamp(notice.total) + " while " +
           params_.peerNames[finder] + " called " + describeCallStamp(notice.stamp) +
           ": mismatched calls";
  mismatchNotice_ = notice;
  health_.fail(mixcclInvalidUsage,
               me() + ": " + what + " (reported by " + params_.peerNames[from] + ")");
}

// The peer found the mismatch too where its receive met this rank's smaller message; its notice
// names both calls and usually arrives within milliseconds (its failure is reported at once).
constexpr std::chrono::milliseconds kSizeMismatchGrace{200};

void Proxy::callSizeMismatch(int peer, uint64_t mine, const std::string& sent, size_t posted) {
  if (health_.failed() || sizeMismatch_.peer >= 0) return;
  readNotices(peer);
  if (health_.failed()) return;
  sizeMismatch_.peer = peer;
  sizeMismatch_.mine = mine;
  sizeMismatch_.sent = sent;
  sizeMismatch_.posted = posted;
  sizeMismatch_.until = Clock::now() + kSizeMismatchGrace;
}

void Proxy::failSizeMismatch() {
  const int peer = sizeMismatch_.peer;
  sizeMismatch_.peer = -1;
  if (health_.failed()) return;
  health_.fail(mixcclInvalidUsage,
               me() + ": " + params_.peerNames[peer] + " sent a message of " + sizeMismatch_.sent +
                   " bytes to a receive of " + std::to_string(sizeMismatch_.posted) +
                   " bytes of this rank's " + describeCallStamp(sizeMismatch_.mine) +
                   ": mismatched calls (every rank must make the same collective calls in the "
                   "same order)");
}

}  // namespace mixccl
