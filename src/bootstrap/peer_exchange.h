// The peer-info exchange that follows the rendezvous: the root(s) told each rank only its
// neighbours in the exchange tree (exchange_tree.h); the ranks now gather their records up the
// tree to rank 0 and pass the whole table back down. No process handles more than its own
// subtree's records plus one table per child, and the rendezvous root handles only O(n) small
// messages.
//
// Failure stays bounded: a neighbour that closes its connection, sends something malformed or
// nothing within the deadline fails this rank with a cause that names it, and the cause is sent
// on to every other neighbour in place of the records, so it crosses the whole tree: every rank
// of the job reports the same cause ("rank 5 (host pid 123) left during the peer-info exchange
// ..."). Links are authenticated with the communicator's secret like the rendezvous.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

// What a rank knows of its place after the rendezvous.
struct ExchangePlace {
  int rank = 0, nranks = 0, nroots = 1;
  Secret secret{};
  uint64_t commHash = 0;
  PeerInfo mine{};
  Socket listener;  // opened before the hello that told the root its address
  bool hasParent = false;
  TreeNeighbour parent{};
  std::vector<TreeNeighbour> children;  // in increasing rank order
};

class TreeExchange {
 public:
  TreeExchange(ExchangePlace place, const Deadline& deadline);

  // The three steps in order (run() does all three; a test may stop between them). After a
  // failure every later step fails at once with the same result.
  Result connect();  // to the parent, and every child to this rank
  Result gather();   // the subtree's records from the children, on to the parent
  Result broadcast(std::vector<PeerInfo>* all);  // the whole table from the parent, on down
  Result run(std::vector<PeerInfo>* all);

 private:
  std::string prefix() const;
  // A failure found here: raised with this rank's prefix, and its cause sent on.
  Result fail(Result code, const std::string& cause);
  // A failure a callee raised already (its message is the cause), sent on.
  Result failRaised(Result code);
  // Sends the cause to every neighbour but `except` (the one it came from), briefly.
  void tellNeighbours(Result code, const std::string& cause, const Socket* except);
  // Receives n bytes from a neighbour; any failure becomes a cause naming it.
  Result recvFrom(const Socket& s, const TreeNeighbour& who, void* buf, size_t n);
  Result sendTo(const Socket& s, const TreeNeighbour& who, const void* buf, size_t n);
  // Reads a header from who: records to come (true), or a failure it relays (fails here).
  Result recvHeader(const Socket& s, const TreeNeighbour& who, int expectedCount);
  Result acceptChildren();

  ExchangePlace place_;
  Deadline deadline_;
  Socket parentLink_;
  std::vector<Socket> childLinks_;  // by index in place_.children
  std::vector<PeerInfo> records_;   // this subtree's (gather), then the whole table
  Result failed_ = mixcclSuccess;
  std::string failure_;
};

}  // namespace mixccl
