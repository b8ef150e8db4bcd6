// The 64-bit UCP tags of one communicator's messages. A tag is [key:32][seq:32]:
//  - key: a random 32-bit number the RECEIVER chose for one sender (and told that sender over
//    the pair's authenticated control connection, ucx_handshake.h). A receiver's keys are
//    distinct, so the key also says which peer rank a message comes from, and a stranger who
//    reaches the worker (UCX's listening port) without the key matches nothing but by a
//    2^-32 guess per message;
//  - seq: the message number of that direction of the pair, so the i-th send matches the i-th
//    receive (transport.h's contract). It wraps after 2^32 messages, harmless because a pair
//    never has anywhere near that many messages outstanding.
// Receives are posted with the full mask: no bit of a posted receive's tag is a wildcard.
// Each communicator has its own UCP worker, so tags of different communicators never meet.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"

namespace mixccl {

constexpr uint64_t kUcxFullTagMask = ~0ull;

inline uint64_t ucxTag(uint32_t key, uint32_t seq) { return ((uint64_t)key << 32) | seq; }
inline uint32_t ucxTagKey(uint64_t tag) { return (uint32_t)(tag >> 32); }
inline uint32_t ucxTagSeq(uint64_t tag) { return (uint32_t)tag; }

// The keys one receiver hands out: [2 * peer] for data messages from peer, [2 * peer + 1] for
// its goodbye; every key distinct (cryptographically random, redrawn on a collision).
Result makeUcxKeys(int nranks, std::vector<uint32_t>* keys);

}  // namespace mixccl
