// Messages between neighbours of the peer-info exchange (peer_exchange.h), after the
// connection authenticated with the communicator's secret, and the pure functions that check
// them before any field is used (fuzzed with the rest of the bootstrap's wire).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/peer_info.h"
#include "base/result.h"

namespace mixccl {

constexpr uint32_t kExchangeHelloMagic = 0x48435845;  // "EXCH"

// What a child says once authenticated with its parent.
struct ExchangeHello {
  uint32_t magic;
  int32_t rank;
  uint64_t commHash;
};
static_assert(sizeof(ExchangeHello) == 16, "ExchangeHello is part of the wire format");

// Precedes count PeerInfo records (status 0), or says why the exchange failed (status a
// mixcclResult_t, message the cause, count 0): a failure travels the tree like the records do.
struct ExchangeHeader {
  int32_t status;
  int32_t count;
  char message[248];
};
static_assert(sizeof(ExchangeHeader) == 256, "ExchangeHeader is part of the wire format");

// A child's hello: magic, this communicator, one of the children expected.
bool checkExchangeHello(const ExchangeHello& h, uint64_t commHash,
                        const std::vector<int>& children, std::string* why);

// A header: a failure (*failure set to its code, *why to its cause: returns false), or
// records whose count is the one expected.
bool checkExchangeHeader(const ExchangeHeader& h, int expectedCount, Result* failure,
                         std::string* why);

// A child's records: exactly the ranks of its subtree, in increasing order, each described.
bool checkSubtreeRecords(const PeerInfo* records, const std::vector<int>& subtree,
                         std::string* why);

}  // namespace mixccl
