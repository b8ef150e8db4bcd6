// How a data message carries its call stamp (base/call_stamp.h) over UCX, whose 64-bit tag is
// taken by the key and the message number (ucx_tag.h). The form depends on the size alone, so
// both ranks of a pair choose the same one for matching calls:
//  - up to kUcxBounceBytes of host memory: one contiguous message [stamp | payload], a copy
//    (UCX's inline eager protocol takes contiguous buffers only; the copy costs nanoseconds);
//  - up to kUcxSplitBytes: one message as an IOV [stamp][payload], packed by UCX's eager copy;
//  - larger (the split form): the stamp alone under message number s, then the payload
//    contiguous under s + 1, so the rendezvous moves it straight between the users' buffers
//    (an IOV rendezvous ran 8-16% slower at 1-64 MiB, UCX 1.13 over tcp).
// A receive reads a single-form message into an IOV of the same shape, and a split-form stamp
// into a buffer a single-form message also fits: a peer that sent another size (another call)
// is found by the stamp of whatever arrived, before the sizes are compared.
#pragma once

#include <cstddef>

namespace mixccl {

constexpr size_t kUcxBounceBytes = 1024;
constexpr size_t kUcxSplitBytes = 8192;

// Whether a message of bytes travels in the split form (two message numbers).
inline bool ucxStampSplit(size_t bytes) { return bytes > kUcxSplitBytes; }

}  // namespace mixccl
