#include "bootstrap/rendezvous_wire.h"

#include <sys/socket.h>

#include <cstring>

namespace mixccl {
namespace {

bool terminated(const char* s, size_t cap) { return memchr(s, 0, cap) != nullptr; }

bool checkNeighbour(const TreeNeighbour& n, int rank, const char* role, std::string* why) {
  std::string detail;
  if (n.rank != rank)
    detail = "names rank " + std::to_string(n.rank) + ", expected " + std::to_string(rank);
  else if (n.info.rank != rank)
    detail = "carries the peer info of rank " + std::to_string(n.info.rank);
  else if (!checkPeerInfo(n.info, &detail) || !checkListenAddress(n.exchangeAddr, &detail))
    detail = "rank " + std::to_string(rank) + ": " + detail;
  if (detail.empty()) return true;
  *why = std::string(role) + " " + detail;
  return false;
}

TreeNeighbour neighbourOf(int r, const std::vector<PeerInfo>& table,
                          const std::vector<WireAddress>& exchangeAddrs) {
  TreeNeighbour n{};
  n.rank = r;
  n.info = table[r];
  n.exchangeAddr = exchangeAddrs[r];
  return n;
}

}  // namespace

bool checkListenAddress(const WireAddress& a, std::string* why) {
  if (a.family != AF_INET && a.family != AF_INET6) {
    *why = "listen address has unknown family " + std::to_string(a.family);
    return false;
  }
  if (a.port == 0) {
    *why = "listen address has port 0";
    return false;
  }
  return true;
}

bool checkPeerInfo(const PeerInfo& p, std::string* why) {
  if (!terminated(p.hostname, sizeof(p.hostname))) {
    *why = "host name is not terminated";
    return false;
  }
  if (!terminated(p.adaptor, sizeof(p.adaptor))) {
    *why = "adaptor name is not terminated";
    return false;
  }
  if (p.connectAsked > kConnectInvalid || p.lazyAlone > 1 || p.rdmaPort > 1) {
    *why = "connection mode is not one of auto, eager, lazy, invalid";
    return false;
  }
  return checkListenAddress(p.listenAddr, why);
}

bool checkRankHello(const RankHello& h, std::string* why) {
  if (h.magic != kRankHelloMagic) {
    *why = "not a rank hello (bad magic)";
    return false;
  }
  if (h.nranks < 1 || h.nranks > kMaxRanks || h.rank < 0 || h.rank >= h.nranks) {
    *why = "rank " + std::to_string(h.rank) + " of " + std::to_string(h.nranks) + " is invalid";
    return false;
  }
  if (h.nroots < 1 || h.nroots > h.nranks || h.rootIndex < 0 || h.rootIndex >= h.nroots) {
    *why = "rank " + std::to_string(h.rank) + ": root " + std::to_string(h.rootIndex) + " of " +
           std::to_string(h.nroots) + " is invalid for " + std::to_string(h.nranks) + " ranks";
    return false;
  }
  const ExchangeTree tree(h.nranks, h.nroots);
  if (tree.blockOf(h.rank) != h.rootIndex && tree.rootTellingParent(h.rank) != h.rootIndex) {
    *why = "rank " + std::to_string(h.rank) + " of " + std::to_string(h.nranks) +
           " does not rendezvous through root " + std::to_string(h.rootIndex) + " of " +
           std::to_string(h.nroots) + " (its root is " + std::to_string(tree.blockOf(h.rank)) +
           ")";
    return false;
  }
  std::string detail;
  if (!checkPeerInfo(h.info, &detail) || !checkListenAddress(h.exchangeAddr, &detail)) {
    *why = "rank " + std::to_string(h.rank) + ": " + detail;
    return false;
  }
  return true;
}

bool checkRootPlacement(const RootPlacement& p, const ExchangeTree& tree, int rank, int root,
                        std::string* why) {
  const bool wantParent = tree.rootTellingParent(rank) == root;
  if (p.hasParent != (wantParent ? 1 : 0)) {
    *why = std::string("placement ") + (wantParent ? "lacks" : "has") + " a parent";
    return false;
  }
  if (wantParent && !checkNeighbour(p.parent, tree.parent(rank), "placement's parent", why))
    return false;
  const std::vector<int> children =
      tree.blockOf(rank) == root ? tree.children(rank) : std::vector<int>{};
  if (p.nchildren != (int)children.size()) {
    *why = "placement has " + std::to_string(p.nchildren) + " children, expected " +
           std::to_string(children.size());
    return false;
  }
  for (size_t i = 0; i < children.size(); ++i)
    if (!checkNeighbour(p.children[i], children[i], "placement's child", why)) return false;
  return true;
}

RootPlacement placementFor(const ExchangeTree& tree, int rank, int root,
                           const std::vector<PeerInfo>& table,
                           const std::vector<WireAddress>& exchangeAddrs) {
  RootPlacement p{};
  if (tree.rootTellingParent(rank) == root) {
    p.hasParent = 1;
    p.parent = neighbourOf(tree.parent(rank), table, exchangeAddrs);
  }
  if (tree.blockOf(rank) == root)
    for (int c : tree.children(rank)) p.children[p.nchildren++] = neighbourOf(c, table, exchangeAddrs);
  return p;
}

bool checkRootReply(const RootReply& r, int nranks, Result* refusal, std::string* why) {
  *refusal = mixcclSuccess;
  if (r.status != 0) {
    *refusal = (r.status > 0 && r.status < mixcclNumResults) ? (Result)r.status
                                                              : mixcclRemoteError;
    *why = std::string(r.message, strnlen(r.message, sizeof(r.message)));
    if (why->empty()) *why = "no reason given";
    return false;
  }
  if (r.nranks != nranks) {
    *refusal = mixcclRemoteError;
    *why = "answered with " + std::to_string(r.nranks) + " ranks, expected " +
           std::to_string(nranks);
    return false;
  }
  return true;
}

bool checkPeerTable(const PeerInfo* table, int nranks, std::string* why) {
  for (int i = 0; i < nranks; ++i) {
    if (table[i].rank != i) {
      *why = "table entry " + std::to_string(i) + " says rank " + std::to_string(table[i].rank);
      return false;
    }
    std::string detail;
    if (!checkPeerInfo(table[i], &detail)) {
      *why = "table entry " + std::to_string(i) + ": " + detail;
      return false;
    }
  }
  return true;
}

RendezvousTable::Verdict RendezvousTable::offer(const RankHello& h, std::string* why) {
  if (!checkRankHello(h, why)) return Verdict::BadHello;
  if (nranks_ < 0) {
    nranks_ = h.nranks;
    nroots_ = h.nroots;
    rootIndex_ = h.rootIndex;
    expectedRanks_ = ExchangeTree(nranks_, nroots_).servedBy(rootIndex_);
    table_.assign(nranks_, PeerInfo{});
    exchangeAddrs_.assign(nranks_, WireAddress{});
    present_.assign(nranks_, false);
  } else if (h.nranks != nranks_) {
    *why = "rank " + std::to_string(h.rank) + " says nranks=" + std::to_string(h.nranks) +
           ", others said " + std::to_string(nranks_);
    return Verdict::WrongSize;
  } else if (h.nroots != nroots_ || h.rootIndex != rootIndex_) {
    // Ranks that passed their ids in different orders, or a different number of them.
    *why = "rank " + std::to_string(h.rank) + " says this is root " +
           std::to_string(h.rootIndex) + " of " + std::to_string(h.nroots) + ", others said " +
           std::to_string(rootIndex_) + " of " + std::to_string(nroots_);
    return Verdict::WrongSize;
  }
  if (present_[h.rank]) {
    *why = "rank " + std::to_string(h.rank) + " joined twice";
    return Verdict::Duplicate;
  }
  table_[h.rank] = h.info;
  table_[h.rank].rank = h.rank;
  exchangeAddrs_[h.rank] = h.exchangeAddr;
  present_[h.rank] = true;
  ++arrived_;
  return Verdict::Admitted;
}

void RendezvousTable::drop(int r) {
  if (!has(r)) return;
  present_[r] = false;
  --arrived_;
}

}  // namespace mixccl
