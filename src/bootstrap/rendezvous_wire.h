// Messages between a rank and the rendezvous root (after authentication).
#pragma once

#include <cstdint>

#include "bootstrap/peer_info.h"

namespace mixccl {

constexpr uint32_t kRankHelloMagic = 0x4c4c4548;  // "HELL"
constexpr int32_t kMaxRanks = 1 << 20;

struct RankHello {
  uint32_t magic;
  int32_t nranks;
  int32_t rank;
  uint32_t reserved;
  PeerInfo info;
};

// The root answers each rank with a status (0 = ok, else a mixcclResult_t) and, if ok, the
// table of nranks PeerInfo entries.
struct RootReply {
  int32_t status;
  int32_t nranks;
};

}  // namespace mixccl
