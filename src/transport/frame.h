// The wire format of the socket transport. A message (one send matched with one receive) is cut
// into frames; each frame carries this header and is self-describing, so the frames of one
// message may travel on different connections to the same peer. The receiver checks every
// field against what it posted before it touches memory (see validateFrame).
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
  uint32_t flags;   // reserved, 0
};
static_assert(sizeof(FrameHeader) == 32, "FrameHeader is part of the wire format");

enum class FrameCheck { Ok, BadMagic, BadFlags, SizeMismatch, OutOfBounds, Overfull };

// Validates a header against the receive it matched: posted bytes, bytes already received,
// and the total announced by earlier frames (UINT64_MAX if none yet).
FrameCheck validateFrame(const FrameHeader& h, size_t postedBytes, size_t receivedBytes,
                         uint64_t knownTotal);
const char* frameCheckName(FrameCheck c);

}  // namespace mixccl
