#include "bootstrap/exchange_wire.h"

#include <algorithm>
#include <cstring>

#include "bootstrap/rendezvous_wire.h"

namespace mixccl {

bool checkExchangeHello(const ExchangeHello& h, uint64_t commHash,
                        const std::vector<int>& children, std::string* why) {
  if (h.magic != kExchangeHelloMagic) {
    *why = "not an exchange hello (bad magic)";
    return false;
  }
  if (h.commHash != commHash) {
    *why = "rank " + std::to_string(h.rank) + " of another communicator";
    return false;
  }
  if (std::find(children.begin(), children.end(), h.rank) == children.end()) {
    *why = "rank " + std::to_string(h.rank) + " is not a child of this rank in the exchange tree";
    return false;
  }
  return true;
}

bool checkExchangeHeader(const ExchangeHeader& h, int expectedCount, Result* failure,
                         std::string* why) {
  *failure = mixcclSuccess;
  if (h.status != 0) {
    *failure = (h.status > 0 && h.status < mixcclNumResults) ? (Result)h.status
                                                              : mixcclRemoteError;
    *why = std::string(h.message, strnlen(h.message, sizeof(h.message)));
    if (why->empty()) *why = "no reason given";
    return false;
  }
  if (h.count != expectedCount) {
    *failure = mixcclRemoteError;
    *why = "announced " + std::to_string(h.count) + " records, expected " +
           std::to_string(expectedCount);
    return false;
  }
  return true;
}

bool checkSubtreeRecords(const PeerInfo* records, const std::vector<int>& subtree,
                         std::string* why) {
  for (size_t i = 0; i < subtree.size(); ++i) {
    std::string detail;
    if (records[i].rank != subtree[i])
      detail = "says rank " + std::to_string(records[i].rank) + ", expected " +
               std::to_string(subtree[i]);
    else if (!checkPeerInfo(records[i], &detail))
      detail = "rank " + std::to_string(subtree[i]) + ": " + detail;
    if (!detail.empty()) {
      *why = "record " + std::to_string(i) + " " + detail;
      return false;
    }
  }
  return true;
}

}  // namespace mixccl
