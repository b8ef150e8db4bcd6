#include "transport/frame.h"

namespace mixccl {

FrameCheck validateFrame(const FrameHeader& h, size_t postedBytes, size_t receivedBytes,
                         uint64_t knownTotal) {
  if (h.magic != kFrameMagic) return FrameCheck::BadMagic;
  if (h.flags != 0) return FrameCheck::BadFlags;
  // A message must be received with exactly the size it was sent with (NCCL semantics); a
  // mismatch is an error rather than a silent truncation.
  if (h.total != postedBytes) return FrameCheck::SizeMismatch;
  if (knownTotal != UINT64_MAX && h.total != knownTotal) return FrameCheck::SizeMismatch;
  if (h.offset > h.total || h.length > h.total - h.offset) return FrameCheck::OutOfBounds;
  if (h.length > h.total - receivedBytes) return FrameCheck::Overfull;
  return FrameCheck::Ok;
}

const char* frameCheckName(FrameCheck c) {
  switch (c) {
    case FrameCheck::Ok: return "ok";
    case FrameCheck::BadMagic: return "bad magic (not a mixccl frame)";
    case FrameCheck::BadFlags: return "unknown flags";
    case FrameCheck::SizeMismatch: return "message size differs from the posted receive";
    case FrameCheck::OutOfBounds: return "frame beyond the message";
    case FrameCheck::Overfull: return "more bytes than the message holds";
  }
  return "?";
}

}  // namespace mixccl
