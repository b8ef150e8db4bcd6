// The shape of the peer-info exchange: which rendezvous root serves which ranks, and the tree
// the ranks then pass their peer info along (peer_exchange.h). Pure functions of (nranks,
// nroots), so every rank and every root computes the same shape without telling each other,
// and a neighbour's message can be checked against it.
//
// With nroots roots (mixcclCommInitRankScalable) the ranks form nroots contiguous blocks, as
// even as possible: block k is [k*nranks/nroots, (k+1)*nranks/nroots) and rendezvous through
// root k. Inside a block the ranks form a binary tree by their index in the block (children of
// index i: 2i+1 and 2i+2). The blocks' first ranks (leaders) form a binary tree by block index:
// block k's leader hangs below the leader of block (k-1)/2. Depth ~log2(nranks/nroots) +
// log2(nroots); each rank has at most 4 neighbours below it.
//
// A root knows only its own block, so the leader of block k > 0 also joins root (k-1)/2 as a
// guest, which tells it its parent and tells the parent about it.
#pragma once

#include <vector>

namespace mixccl {

class ExchangeTree {
 public:
  // 1 <= nroots <= nranks (checked by the caller).
  ExchangeTree(int nranks, int nroots) : nranks_(nranks), nroots_(nroots) {}

  int nranks() const { return nranks_; }
  int nroots() const { return nroots_; }
  int blockBegin(int k) const;  // first rank of block k (its leader)
  int blockEnd(int k) const;    // one past its last rank
  int blockOf(int rank) const;  // the root a rank rendezvous through

  // -1 for rank 0.
  int parent(int rank) const;
  // In increasing rank order.
  std::vector<int> children(int rank) const;
  // The ranks of rank's subtree, itself included, in increasing order.
  std::vector<int> subtree(int rank) const;

  // The ranks root k hears from: its block, then the leaders of the blocks below it (guests).
  std::vector<int> servedBy(int k) const;
  // The root that tells rank its parent: its own block's, or for a leader of block k > 0 the
  // parent block's (-1 for rank 0).
  int rootTellingParent(int rank) const;

 private:
  int nranks_, nroots_;
};

}  // namespace mixccl
