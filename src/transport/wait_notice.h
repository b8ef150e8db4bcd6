// The payload of the control connection's waiting and peer-failed notices (frame.h): which rank
// waits for which, and for how long nothing has moved between them. With it a rank that times
// out can tell a stopped peer from one that only waits for the stopped one, and the ranks that
// hear of the timeout learn whom it was blamed on (docs/reliability.md, "Naming the cause").
// Encoded in host byte order like FrameHeader; every field is checked before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mixccl {

struct WaitEdge {
  int waiter = -1;      // the rank that waits
  int peer = -1;        // the rank it waits for (requests posted to it and not finished)
  uint32_t idleMs = 0;  // how long nothing moved between them
};

struct WaitNotice {
  // Peer-failed: the rank whose timeout this notice reports (edges name whom it blamed, seen by
  // whichever rank waited for them). Waiting: -1 (edges are the sender's own waits).
  int timedOut = -1;
  std::vector<WaitEdge> edges;
};

// At most this many edges per notice (a rank waits for few peers at once; the rest of a longer
// list is dropped from the end, so put the longest-idle first).
constexpr size_t kMaxWaitEdges = 16;
// Wire: uint32 timedOut (UINT32_MAX: none), uint32 count, count x {uint32 waiter, uint32 peer,
// uint32 idleMs}.
constexpr size_t kWaitNoticeHeaderBytes = 8;
constexpr size_t kWaitEdgeBytes = 12;
constexpr size_t kWaitNoticeMaxBytes = kWaitNoticeHeaderBytes + kMaxWaitEdges * kWaitEdgeBytes;

std::string encodeWaitNotice(const WaitNotice& notice);

// Checks and decodes the payload of a control frame with flags (kFrameFlagWaiting or
// kFrameFlagPeerFailed) and seq, sent by rank `sender` of a communicator of nranks:
// size 8 + 12 x count with 1 <= count <= kMaxWaitEdges, every rank < nranks, no rank waiting
// for itself. Waiting: no timedOut, seq 0, every waiter is the sender. Peer-failed: timedOut a
// rank, seq the first edge's peer (the rank the notice blames first). On failure returns false
// and says why in *why.
bool decodeWaitNotice(uint32_t flags, uint32_t seq, int sender, int nranks, const std::string& bytes,
                      WaitNotice* out, std::string* why);

}  // namespace mixccl
