// What two ranks tell each other before either creates a UCX endpoint, over the pair's
// authenticated control connection (the mesh's connection 0, HMAC challenge-response of the
// job secret): the worker address and the tag keys the receiver wants (ucx_tag.h). An endpoint
// is made only from an address that came this way, and the keys never travel elsewhere, so a
// process that is not part of the job neither learns where to send nor what tag would match.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "bootstrap/socket.h"

namespace mixccl {

// A worker address longer than this is refused (a peer must not make us allocate at will;
// real addresses are a few hundred bytes to a few KiB).
constexpr uint32_t kUcxMaxAddressBytes = 64 << 10;

struct UcxPeerSetup {
  std::vector<uint8_t> address;  // the peer's worker address
  uint32_t sendKey = 0;          // the key the peer chose for our data messages to it
  uint32_t sendByeKey = 0;       // ... and for our goodbye
};

// What one rank sends one peer.
struct UcxOffer {
  uint32_t recvKey = 0;     // the key of that peer's data messages to us
  uint32_t recvByeKey = 0;  // ... and of its goodbye
};

// Exchanges offers with every peer in peers (send to all, then read all, over conns[p][0],
// blocking, bounded by deadline). names[i]: peers[i] for messages.
Result exchangeUcxSetup(int rank, uint64_t commHash, const std::vector<int>& peers,
                        const std::vector<std::string>& names,
                        const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                        const std::vector<uint8_t>& myAddress, const std::vector<UcxOffer>& offers,
                        std::vector<UcxPeerSetup>* out);

// One status word each way (1: this side's step succeeded), so that both ranks of a pair fail
// alike when either could not do a step (what: "start UCX", "create its UCX endpoint").
Result exchangeUcxStatus(int rank, const std::vector<int>& peers,
                         const std::vector<std::string>& names,
                         const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                         bool mineOk, const char* what);

}  // namespace mixccl
