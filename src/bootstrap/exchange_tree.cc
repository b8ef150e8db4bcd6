#include "bootstrap/exchange_tree.h"

#include <algorithm>

namespace mixccl {

int ExchangeTree::blockBegin(int k) const { return (int)((long long)k * nranks_ / nroots_); }
int ExchangeTree::blockEnd(int k) const { return blockBegin(k + 1); }

int ExchangeTree::blockOf(int rank) const {
  // The inverse of blockBegin: the largest k with blockBegin(k) <= rank.
  int k = (int)(((long long)rank * nroots_ + nroots_ - 1) / nranks_);
  while (k > 0 && blockBegin(k) > rank) --k;
  while (k + 1 < nroots_ && blockBegin(k + 1) <= rank) ++k;
  return k;
}

int ExchangeTree::parent(int rank) const {
  const int k = blockOf(rank), lo = blockBegin(k), i = rank - lo;
  if (i > 0) return lo + (i - 1) / 2;
  return k == 0 ? -1 : blockBegin((k - 1) / 2);
}

std::vector<int> ExchangeTree::children(int rank) const {
  const int k = blockOf(rank), lo = blockBegin(k), hi = blockEnd(k), i = rank - lo;
  std::vector<int> c;
  for (int j : {2 * i + 1, 2 * i + 2})
    if (lo + j < hi) c.push_back(lo + j);
  if (i == 0)
    for (int b : {2 * k + 1, 2 * k + 2})
      if (b < nroots_) c.push_back(blockBegin(b));
  std::sort(c.begin(), c.end());
  return c;
}

std::vector<int> ExchangeTree::subtree(int rank) const {
  std::vector<int> all{rank};
  for (size_t i = 0; i < all.size(); ++i)
    for (int c : children(all[i])) all.push_back(c);
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<int> ExchangeTree::servedBy(int k) const {
  std::vector<int> s;
  for (int r = blockBegin(k); r < blockEnd(k); ++r) s.push_back(r);
  for (int b : {2 * k + 1, 2 * k + 2})
    if (b < nroots_) s.push_back(blockBegin(b));
  return s;
}

int ExchangeTree::rootTellingParent(int rank) const {
  const int k = blockOf(rank);
  if (rank != blockBegin(k)) return k;
  return k == 0 ? -1 : (k - 1) / 2;
}

}  // namespace mixccl
