// The wire format of the stream transports (socket, shm) and of the control connection. A
// message (one send matched with one receive) is cut into frames; each frame carries this
// header and is self-describing, so the frames of one message may travel on different
// connections to the same peer. The receiver checks every field against what it posted before
// it touches memory (see validateFrame). Every flag of the wire is defined here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mixccl {

constexpr uint32_t kFrameMagic = 0x4d524646;  // "FFRM"

struct FrameHeader {
  uint32_t magic;
  uint32_t seq;     // message number of this (sender, receiver) pair, counted from 0
  uint64_t total;   // bytes of the whole message
  uint64_t offset;  // where this frame's bytes go in the message
  uint32_t length;  // bytes of payload after this header
  uint32_t flags;   // 0 for data, else exactly one of the flags below
  uint64_t stamp;   // data: the call stamp of the message (base/call_stamp.h); control: see flags
};
static_assert(sizeof(FrameHeader) == 40, "FrameHeader is part of the wire format");

// The last frame a rank sends on a stream (and on its control connection) when it leaves
// cleanly, so that the end of the connection that follows is not mistaken for a crash.
constexpr uint32_t kFrameFlagBye = 1u;
// Control connection: a notice a failing rank sends before it cuts its connections; seq carries
// the rank that failed (UINT32_MAX: the sender itself, e.g. after an abort), so that ranks
// hearing of the failure second-hand still name the rank that caused it. length 0, or after a
// timeout a WaitNotice payload of length bytes (wait_notice.h): the rank that timed out and the
// rank(s) it blamed, with whoever waited for them; seq is then the first rank blamed.
constexpr uint32_t kFrameFlagPeerFailed = 2u;
// Control connection: "look at the pair's transport" (shared-memory rings), carries nothing.
constexpr uint32_t kFrameFlagDoorbell = 4u;
// Control connection: "I have waited for these ranks for most of the timeout", sent before the
// sender's deadline and again when a peer's notice says it waits for the sender; a WaitNotice
// payload of length bytes (wait_notice.h) lists the sender's waits; seq is 0. From these a rank
// that times out tells a stopped rank (which sends none) from ranks that wait for it.
constexpr uint32_t kFrameFlagWaiting = 16u;
// Shared-memory ring: the payload is a CmaDescriptor of the whole message, to be read from the
// sender's memory.
constexpr uint32_t kFrameFlagCma = 8u;
// Control connection: mixcclInvalidUsage for mismatched calls. Rank `offset` found a message
// from rank seq carrying the call stamp `total` where its own call, stamped `stamp`, expected
// one; length 0. Every rank that hears it fails naming both calls and passes it on as it came
// (a rank whose part only sends would otherwise learn of the mismatch only as a failed peer).
constexpr uint32_t kFrameFlagCallMismatch = 32u;
// Control connection: rank seq revoked the communicator (mixcclCommRevoke); length 0. Every rank
// that hears it fails naming that rank and passes it on as it came, so ranks not connected to
// the revoking rank hear of it too.
constexpr uint32_t kFrameFlagRevoked = 64u;

enum class FrameCheck { Ok, BadMagic, BadFlags, SizeMismatch, OutOfBounds, Overfull };

// Validates a header against the receive it matched: posted bytes, bytes already received,
// and the total announced by earlier frames (UINT64_MAX if none yet).
FrameCheck validateFrame(const FrameHeader& h, size_t postedBytes, size_t receivedBytes,
                         uint64_t knownTotal);
const char* frameCheckName(FrameCheck c);

}  // namespace mixccl
