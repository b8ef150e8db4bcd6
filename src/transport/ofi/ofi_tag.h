// The 64-bit tag of every libfabric message mixccl sends. Receives are posted with ignore bits
// 0, so a message matches only when every field is right:
//
//   63            37  36  35        20  19           0
//   [ pair key 27 ][bye][ sender rank ][ sequence 20 ]
//
// The pair key is random, agreed over the pair's authenticated control connection
// (ofi_transport.cc), so another communicator of the same processes, or a stranger that learned
// an endpoint's address, cannot produce a matching tag without the key. The sender rank makes
// the tag unambiguous where the provider cannot direct a receive to one source address
// (no FI_DIRECTED_RECV). The sequence numbers each direction's messages; matching is in posting
// order, so 2^20 messages in flight per direction would be needed to alias, far beyond any
// algorithm's window. The bye bit marks the one message that ends a pair cleanly.
#pragma once

#include <cstdint>

namespace mixccl {

constexpr int kOfiSeqBits = 20;
constexpr int kOfiRankBits = 16;
constexpr int kOfiKeyBits = 27;
constexpr uint32_t kOfiSeqMask = (1u << kOfiSeqBits) - 1;
constexpr uint32_t kOfiKeyMask = (1u << kOfiKeyBits) - 1;
constexpr int kOfiMaxRanks = 1 << kOfiRankBits;
static_assert(kOfiSeqBits + kOfiRankBits + 1 + kOfiKeyBits == 64, "the tag has 64 bits");

inline uint64_t ofiTag(uint32_t key, bool bye, int senderRank, uint32_t seq) {
  return ((uint64_t)(key & kOfiKeyMask) << (kOfiSeqBits + kOfiRankBits + 1)) |
         ((uint64_t)(bye ? 1 : 0) << (kOfiSeqBits + kOfiRankBits)) |
         ((uint64_t)((uint32_t)senderRank & ((1u << kOfiRankBits) - 1)) << kOfiSeqBits) |
         (uint64_t)(seq & kOfiSeqMask);
}

}  // namespace mixccl
