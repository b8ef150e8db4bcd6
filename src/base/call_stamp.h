// The call stamp: which collective call a message belongs to, in 64 bits that every transport
// carries with every message (stream frames in their header, UCX in front of the payload,
// libfabric as remote completion data). The receiver compares the stamp of what arrives with
// the stamp of the receive it posted, so ranks that called different collectives (or the same
// one with another count, datatype, op or root) find out at their first message instead of
// returning wrong data (docs/reliability.md "Mismatched calls").
//
// Layout (bit 63 first):
//   [kind+1: 4][datatype: 4][op: 4][root+1: 16][count: 36]
// kind+1 == 0 is the stamp of everything that is no collective (point-to-point transfers and
// the library's internal exchanges), and the whole stamp is then 0. Every field is exact for
// the values it can hold: op 0-4 are the built-in ops, 14 any user-created op (their handles
// are per rank), 15 none; a root of 65534 or more shares the field's last value; a count of
// 2^35 or more sets bit 35 and keeps 35 bits of a hash of it, so two such counts differ in
// the stamp except with a chance of 2^-35.
#pragma once

#include <cstdint>
#include <string>

namespace mixccl {

// What a collective call looks like to the other ranks: the stamp's fields, also what
// MIXCCL_CHECK_MISMATCH exchanges in full (core/mismatch_check.h) and what logs name.
struct CollDesc {
  int32_t kind = -1;      // CollKind; -1: no collective
  int32_t datatype = -1;  // mixcclDataType_t
  int32_t op = -1;        // mixcclRedOp_t; -1: the collective does not reduce
  int32_t root = -1;      // -1: the collective has no root
  uint64_t count = 0;     // the count argument of the call
};

// Ops in the stamp beyond the built-in ones.
constexpr int32_t kStampUserOp = 14;
constexpr int32_t kStampNoOp = 15;
// The count field's flag for counts of 2^35 and more (hashed).
constexpr uint64_t kStampLargeCount = 1ull << 35;

uint64_t encodeCallStamp(const CollDesc& d);

// "mixcclAllReduce (count 262144, datatype float, op sum)"; "no collective (a point-to-point
// transfer or an internal exchange)" for 0. Every field is range-checked: stamps come from
// other processes.
std::string describeCallStamp(uint64_t stamp);

// The message a rank gives when a message from peerName carries theirs where it expected mine:
// "rank 1 (host) called mixcclAllReduce (count 524288, ...) while this rank (rank 0) called
// mixcclAllReduce (count 262144, ...)".
std::string callMismatchMessage(const std::string& peerName, uint64_t theirs, int myRank,
                                uint64_t mine);

}  // namespace mixccl
