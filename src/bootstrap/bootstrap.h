// The rank side of the bootstrap: tell the rendezvous root(s) this rank's PeerInfo and where it
// accepts neighbours, learn its place in the exchange tree, then exchange everyone's PeerInfo
// along the tree (exchange_tree.h, peer_exchange.h).
#pragma once

#include <vector>

#include "bootstrap/peer_info.h"
#include "bootstrap/peer_exchange.h"
#include "bootstrap/unique_id.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

// ids: one per root, in the same order on every rank (mixcclCommInitRankScalable); rank r
// rendezvous through ids[ExchangeTree::blockOf(r)]. The exchange is authenticated with ids[0]'s
// secret.
Result rendezvous(const std::vector<UniqueIdData>& ids, int rank, int nranks, const PeerInfo& mine,
                  const Deadline& deadline, std::vector<PeerInfo>* all);
Result rendezvous(const UniqueIdData& id, int rank, int nranks, const PeerInfo& mine,
                  const Deadline& deadline, std::vector<PeerInfo>* all);

// The rendezvous alone: on success *place holds this rank's neighbours and its listener, ready
// for TreeExchange (for tests that stop a rank inside the exchange).
Result joinRendezvous(const std::vector<UniqueIdData>& ids, int rank, int nranks,
                      const PeerInfo& mine, const Deadline& deadline, ExchangePlace* place);

}  // namespace mixccl
