#include "bootstrap/bootstrap.h"

#include <chrono>
#include <string>

#include "bootstrap/auth_connect.h"
#include "bootstrap/exchange_tree.h"
#include "bootstrap/rendezvous_report.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

constexpr int kRootAnswerGraceS = 5;

// One root this rank joins: its connection, and the name errors give it.
struct RootLink {
  int index;
  std::string what;
  Socket conn;
};

Result sendHello(const UniqueIdData& id, int index, int nroots, int rank, int nranks,
                 const PeerInfo& mine, const WireAddress& exchangeAddr, const Deadline& deadline,
                 RootLink* link) {
  SocketAddress rootAddr;
  MIXCCL_CHECK(fromWire(id.root, &rootAddr));
  link->index = index;
  link->what = "rendezvous root " + rootAddr.toString();
  MIXCCL_CHECK(connectAuthenticated(rootAddr, id.secret, deadline, link->what.c_str(), &link->conn));
  RankHello hello{};
  hello.magic = kRankHelloMagic;
  hello.nranks = nranks;
  hello.rank = rank;
  hello.nroots = nroots;
  hello.info = mine;
  hello.rootIndex = index;
  hello.exchangeAddr = exchangeAddr;
  return sendAllBefore(link->conn, &hello, sizeof(hello), deadline, link->what.c_str());
}

Result awaitPlacement(const RootLink& link, const ExchangeTree& tree, int rank, int nranks,
                      const Deadline& deadline, RootPlacement* place) {
  const std::string& what = link.what;
  // When ranks are missing the root answers at its own deadline, which may fall a little after
  // ours (rank 0 starts the root after its deadline; other ranks may start earlier): wait that
  // much longer for its answer, which names the missing ranks, rather than report a bare timeout.
  const Deadline answer(deadline.at() + std::chrono::seconds(kRootAnswerGraceS));
  RootReply reply;
  MIXCCL_CHECK(recvAllBefore(link.conn, &reply, sizeof(reply), answer, what.c_str()));
  Result refusal;
  std::string why;
  if (!checkRootReply(reply, nranks, &refusal, &why)) {
    // The root's own messages already start with "rendezvous root <address>".
    bool named = why.compare(0, what.size(), what) == 0;
    std::string causes =
        refusal == mixcclTimeout ? ": " + missingRanksCauses(startedByMpirun()) : "";
    return raiseError(refusal, "rank %d of %d: %s%s%s%s", rank, nranks, named ? "" : what.c_str(),
                      named ? "" : ": ", why.c_str(), causes.c_str());
  }
  MIXCCL_CHECK(recvAllBefore(link.conn, place, sizeof(*place), deadline, what.c_str()));
  if (!checkRootPlacement(*place, tree, rank, link.index, &why))
    return raiseError(mixcclRemoteError, "%s sent a bad placement: %s", what.c_str(), why.c_str());
  return mixcclSuccess;
}

}  // namespace

Result joinRendezvous(const std::vector<UniqueIdData>& ids, int rank, int nranks,
                      const PeerInfo& mine, const Deadline& deadline, ExchangePlace* place) {
  const int nroots = (int)ids.size();
  if (nroots < 1 || nroots > nranks)
    return raiseError(mixcclInvalidArgument, "rank %d of %d: %d rendezvous roots (unique ids); "
                      "expected 1 to %d", rank, nranks, nroots, nranks);
  const ExchangeTree tree(nranks, nroots);
  place->rank = rank;
  place->nranks = nranks;
  place->nroots = nroots;
  place->secret = ids[0].secret;
  place->commHash = ids[0].commHash;
  place->mine = mine;
  place->mine.rank = rank;
  // Neighbours reach this rank where its transport will listen, on a port of its own.
  SocketAddress exchangeAddr, bound;
  MIXCCL_CHECK(fromWire(mine.listenAddr, &exchangeAddr));
  exchangeAddr.setPort(0);
  MIXCCL_CHECK(listenOn(exchangeAddr, &place->listener, &bound));

  // Every hello goes out before any answer is awaited: a block's leader joins the root above
  // its block as a guest, and that root may wait for it while this rank's own root waits for
  // the leaders below.
  std::vector<RootLink> links(1);
  const int own = tree.blockOf(rank), above = tree.rootTellingParent(rank);
  MIXCCL_CHECK(sendHello(ids[own], own, nroots, rank, nranks, mine, toWire(bound), deadline,
                         &links[0]));
  if (above >= 0 && above != own) {
    links.emplace_back();
    MIXCCL_CHECK(sendHello(ids[above], above, nroots, rank, nranks, mine, toWire(bound),
                           deadline, &links[1]));
  }
  for (const RootLink& link : links) {
    RootPlacement p;
    MIXCCL_CHECK(awaitPlacement(link, tree, rank, nranks, deadline, &p));
    if (p.hasParent) {
      place->hasParent = true;
      place->parent = p.parent;
    }
    for (int i = 0; i < p.nchildren; ++i) place->children.push_back(p.children[i]);
  }
  INFO(kLogBootstrap, "rank %d: rendezvous with %d ranks done (%d root%s), exchanging peer info "
       "with %s%zu children", rank, nranks, nroots, nroots == 1 ? "" : "s",
       place->hasParent ? "a parent and " : "", place->children.size());
  return mixcclSuccess;
}

Result rendezvous(const std::vector<UniqueIdData>& ids, int rank, int nranks, const PeerInfo& mine,
                  const Deadline& deadline, std::vector<PeerInfo>* all) {
  ExchangePlace place;
  MIXCCL_CHECK(joinRendezvous(ids, rank, nranks, mine, deadline, &place));
  TreeExchange exchange(std::move(place), deadline);
  MIXCCL_CHECK(exchange.run(all));
  INFO(kLogBootstrap, "rank %d: peer info of %d ranks exchanged", rank, nranks);
  return mixcclSuccess;
}

Result rendezvous(const UniqueIdData& id, int rank, int nranks, const PeerInfo& mine,
                  const Deadline& deadline, std::vector<PeerInfo>* all) {
  return rendezvous(std::vector<UniqueIdData>{id}, rank, nranks, mine, deadline, all);
}

}  // namespace mixccl
