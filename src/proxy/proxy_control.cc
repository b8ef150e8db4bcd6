// The proxy's side of a peer's control connection: doorbells, goodbye, notices and its end
// (pumpControl) and a failed connection blamed on the right rank (peerFailed). The notices
// themselves are handled in proxy_notices.cc; the one pass that fails a communicator
// (failEverything) stays with the progress loop in proxy.cc.
#include <cerrno>
#include <cstring>

#include "proxy/proxy.h"

namespace mixccl {

void Proxy::peerFailed(int peer, const std::string& what) {
  if (stopRequested_.load()) return;
  // A rank that gives up sends its notice on the control connection before it cuts the data
  // connections, but this rank may see the cut first (the fds' order in one epoll round is
  // arbitrary): read the notices already there, so that the failure is blamed as the notice
  // says and not on the rank that only passed it on.
  readNotices(peer);
  failConnection(peer, what);
}

// Doorbells are skipped (the communicator fails either way); a goodbye stays for pumpControl.
void Proxy::readNotices(int peer) {
  ControlChannel& c = control_[peer];
  while (c.valid() && !byeHeard_[peer] && !health_.failed()) {
    FrameHeader h;
    std::string payload;
    if (c.read(&h, &payload) != ControlChannel::Read::Frame) break;
    if (h.flags == kFrameFlagBye) {
      c.putBack(h, std::move(payload));
      break;
    }
    if (h.flags != kFrameFlagDoorbell) handleNotice(peer, h, payload);
  }
}

void Proxy::failConnection(int peer, const std::string& what) {
  if (stopRequested_.load()) return;
  health_.fail(mixcclRemoteError,
               me() + ": connection to " + params_.peerNames[peer] + " failed: " + what, peer);
}

void Proxy::protocolError(int peer, const std::string& what) {
  health_.fail(mixcclRemoteError, me() + ": " + params_.peerNames[peer] + " " + what);
}

void Proxy::peerLeft(int peer, bool pendingWork) {
  left_[peer] = true;
  if (pendingWork)
    health_.fail(mixcclRemoteError, me() + ": " + params_.peerNames[peer] +
                                        " destroyed the communicator with operations pending");
}

// The control connection of a peer: doorbells, goodbye, failure notices, its end.
void Proxy::pumpControl(int peer) {
  ControlChannel& c = control_[peer];
  c.flush();
  while (!health_.failed() && !byeHeard_[peer]) {
    FrameHeader h;
    std::string payload;
    ControlChannel::Read got = c.read(&h, &payload);
    if (got == ControlChannel::Read::Empty) return;
    if (got == ControlChannel::Read::Ended || got == ControlChannel::Read::Failed) {
      failConnection(peer, got == ControlChannel::Read::Ended
                               ? "it closed the connection (process ended or crashed)"
                               : std::string("receive failed: ") + strerror(errno));
      return;
    }
    if (got == ControlChannel::Read::Invalid) {
      health_.fail(mixcclRemoteError, me() + ": " + params_.peerNames[peer] +
                                          " sent an invalid frame on its control connection");
      return;
    }
    if (h.magic == kFrameMagic && h.flags == kFrameFlagDoorbell) {
      if (conns_[peer]) conns_[peer]->onDoorbell();
      continue;
    }
    if (h.magic == kFrameMagic && h.flags == kFrameFlagBye) {
      // The data stream's own end (after the frames still in it) completes the goodbye; the
      // control connection's end, which follows, is no longer watched.
      byeHeard_[peer] = true;
      applyInterest(controlSlot_[peer], 0);
      if (conns_[peer]) conns_[peer]->onControlGoodbye();
      return;
    }
    // isControlHeader() let only the four control flags through: the rest are notices.
    handleNotice(peer, h, payload);
  }
}

}  // namespace mixccl
