// Messages between a rank and its rendezvous root(s) (after authentication), and the pure
// functions that check them. Everything read from a socket goes through one of the check
// functions before any field is used; they take no sockets, so they are fuzzed directly
// (tests/fuzz/fuzz_bootstrap.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/exchange_tree.h"
#include "bootstrap/peer_info.h"
#include "base/result.h"

namespace mixccl {

constexpr uint32_t kRankHelloMagic = 0x4c4c4548;  // "HELL"
constexpr int32_t kMaxRanks = 1 << 20;

// rootIndex of nroots: which root of the job this connection is to (0 of 1 unless the ranks
// share the rendezvous among several, exchange_tree.h). exchangeAddr: where this rank accepts
// its children in the peer-info exchange (peer_exchange.h).
struct RankHello {
  uint32_t magic;
  int32_t nranks;
  int32_t rank;
  int32_t nroots;
  PeerInfo info;
  int32_t rootIndex;
  uint32_t reserved;
  WireAddress exchangeAddr;
};
static_assert(sizeof(RankHello) == 208, "RankHello is part of the wire format");

// The root answers each rank with a status (0 = ok, else a mixcclResult_t) and, if ok, the
// rank's place in the exchange tree (RootPlacement): the ranks, not the whole table, so the
// root sends O(nranks) small messages instead of nranks tables. A refusal carries a NUL-terminated reason (for example
// which rank left during the rendezvous) so every rank can report it.
struct RootReply {
  int32_t status;
  int32_t nranks;
  char message[248];
};
static_assert(sizeof(RootReply) == 256, "RootReply is part of the wire format");

// A neighbour in the exchange tree, as a root describes it to a rank.
struct TreeNeighbour {
  int32_t rank;
  uint32_t reserved;
  PeerInfo info;
  WireAddress exchangeAddr;
};
constexpr int kMaxTreeChildren = 4;  // exchange_tree.h: 2 in the block, 2 leaders of blocks
struct RootPlacement {
  int32_t hasParent;  // 1: parent is set (this root is the one that knows it)
  int32_t nchildren;  // children[0, nchildren) in increasing rank order
  TreeNeighbour parent;
  TreeNeighbour children[kMaxTreeChildren];
};
static_assert(sizeof(RootPlacement) == 968, "RootPlacement is part of the wire format");

// A peer's strings terminated, its listen address decodable.
bool checkPeerInfo(const PeerInfo& p, std::string* why);
// An address a rank listens on: a known family and a port.
bool checkListenAddress(const WireAddress& a, std::string* why);

// Structure of one hello: magic, rank in [0, nranks), nranks in [1, kMaxRanks], nroots in
// [1, nranks], rootIndex one of the roots that serve this rank (exchange_tree.h), the peer's
// strings terminated, its addresses decodable. why receives the reason on failure.
bool checkRankHello(const RankHello& h, std::string* why);

// The placement root `root` sent to rank: exactly the neighbours exchange_tree.h says that
// root tells it, each described (strings terminated, addresses decodable).
bool checkRootPlacement(const RootPlacement& p, const ExchangeTree& tree, int rank, int root,
                        std::string* why);
// What root `root` tells rank (the table holds every rank the root serves).
RootPlacement placementFor(const ExchangeTree& tree, int rank, int root,
                           const std::vector<PeerInfo>& table,
                           const std::vector<WireAddress>& exchangeAddrs);

// A root's reply as a rank sees it: status a result code, nranks what this rank asked for.
// On a refusal (*refusal set to the code) the message is returned terminated in *why.
bool checkRootReply(const RootReply& r, int nranks, Result* refusal, std::string* why);

// The table the root sent: entry i says rank i, strings terminated, addresses decodable.
bool checkPeerTable(const PeerInfo* table, int nranks, std::string* why);

// The root's bookkeeping of admitted ranks, without sockets: offer() takes a checked hello
// and says whether it joins (the first hello fixes nranks, nroots and which root this is, and
// so the ranks it expects: exchange_tree.h; a rank may join once).
class RendezvousTable {
 public:
  enum class Verdict { Admitted, BadHello, WrongSize, Duplicate };
  Verdict offer(const RankHello& h, std::string* why);
  // Forgets rank r (its connection ended before the table went out).
  void drop(int r);
  int nranks() const { return nranks_; }
  int nroots() const { return nroots_; }
  int rootIndex() const { return rootIndex_; }
  int arrived() const { return arrived_; }
  int expected() const { return (int)expectedRanks_.size(); }
  bool complete() const { return nranks_ > 0 && arrived_ == expected(); }
  bool has(int r) const { return r >= 0 && r < nranks_ && present_[r]; }
  // The ranks this root serves, in the order exchange_tree.h lists them.
  const std::vector<int>& expectedRanks() const { return expectedRanks_; }
  // By rank; only the entries of expectedRanks() that arrived are filled.
  const std::vector<PeerInfo>& table() const { return table_; }
  const std::vector<WireAddress>& exchangeAddrs() const { return exchangeAddrs_; }

 private:
  int nranks_ = -1, nroots_ = 0, rootIndex_ = 0;
  int arrived_ = 0;
  std::vector<int> expectedRanks_;
  std::vector<PeerInfo> table_;
  std::vector<WireAddress> exchangeAddrs_;
  std::vector<bool> present_;
};

}  // namespace mixccl
