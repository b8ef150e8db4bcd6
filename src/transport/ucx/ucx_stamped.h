// How a data message carries its call stamp (base/call_stamp.h) over UCX, whose 64-bit tag is
// taken by the key and the message number (ucx_tag.h). Only the first message of a call in each
// direction of a pair carries it (TransportRequest::callStart): for matching calls both ranks
// agree which one that is, and the first message of another call carries another stamp, so the
// later ones need none and go as they are. The first goes
//  - up to kUcxBounceBytes of host memory: as one contiguous message [stamp | payload], copied
//    on both sides (UCX's fastest eager protocols take contiguous buffers only, and the copies
//    cost nanoseconds);
//  - larger: as one message of an IOV datatype [stamp][payload] (UCX packs it into its eager
//    buffer, or moves it by rendezvous: an IOV rendezvous ran 8-16% slower than a contiguous
//    one at 1-64 MiB over tcp, which is why only the first message of a call pays for it; a
//    stamp sent as a message of its own before the payload cost as much per message and, left
//    unmatched after a mismatch, tripped an assertion in UCX 1.13's worker teardown).
// The form depends on the size alone, so both ranks of a pair choose the same one for matching
// calls; a peer that sent another size (another call) is found by the stamp in front of
// whatever arrived, before the sizes are compared.
#pragma once

#include <cstddef>

namespace mixccl {

constexpr size_t kUcxBounceBytes = 1024;
}  // namespace mixccl
