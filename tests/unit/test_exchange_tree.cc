// The shape of the peer-info exchange (bootstrap/exchange_tree.h): every rank reaches rank 0
// exactly once, each root serves its block and the leaders below it, and the depth stays
// logarithmic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "bootstrap/exchange_tree.h"

namespace mixccl {
namespace {

TEST(ExchangeTree, OneRootIsABinaryHeap) {
  ExchangeTree t(7, 1);
  EXPECT_EQ(t.parent(0), -1);
  EXPECT_EQ(t.parent(5), 2);
  EXPECT_EQ(t.children(1), (std::vector<int>{3, 4}));
  EXPECT_EQ(t.children(3), (std::vector<int>{}));
  EXPECT_EQ(t.subtree(2), (std::vector<int>{2, 5, 6}));
  EXPECT_EQ(t.servedBy(0).size(), 7u);
  EXPECT_EQ(t.rootTellingParent(0), -1);
}

// 10 ranks over 3 roots: blocks 0-2, 3-5, 6-9; the leaders 3 and 6 hang below rank 0 and join
// root 0 as guests.
TEST(ExchangeTree, ThreeRootsLinkTheirBlocksThroughTheLeaders) {
  ExchangeTree t(10, 3);
  EXPECT_EQ(t.blockBegin(1), 3);
  EXPECT_EQ(t.blockBegin(2), 6);
  EXPECT_EQ(t.blockOf(5), 1);
  EXPECT_EQ(t.blockOf(6), 2);
  EXPECT_EQ(t.parent(3), 0);
  EXPECT_EQ(t.parent(6), 0);
  EXPECT_EQ(t.parent(9), 7);
  EXPECT_EQ(t.children(0), (std::vector<int>{1, 2, 3, 6}));
  EXPECT_EQ(t.servedBy(0), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(t.servedBy(2), (std::vector<int>{6, 7, 8, 9}));
  EXPECT_EQ(t.rootTellingParent(6), 0);
  EXPECT_EQ(t.rootTellingParent(7), 2);
}

TEST(ExchangeTree, EveryShapeIsOneTreeServedOnceByTheRightRoots) {
  for (int n = 1; n <= 70; ++n) {
    for (int roots = 1; roots <= n; roots += (n > 20 ? 7 : 1)) {
      SCOPED_TRACE(std::to_string(n) + " ranks, " + std::to_string(roots) + " roots");
      ExchangeTree t(n, roots);
      std::vector<int> seen(n, 0), told(n, 0);
      int depthMax = 0;
      for (int r = 0; r < n; ++r) {
        ASSERT_GE(t.blockOf(r), 0);
        ASSERT_LT(t.blockOf(r), roots);
        EXPECT_GE(r, t.blockBegin(t.blockOf(r)));
        EXPECT_LT(r, t.blockEnd(t.blockOf(r)));
        EXPECT_LE(t.children(r).size(), 4u);
        for (int c : t.children(r)) EXPECT_EQ(t.parent(c), r);
        int depth = 0;
        for (int a = r; a != 0; a = t.parent(a)) {
          ASSERT_GE(t.parent(a), 0);
          ASSERT_LT(++depth, n);
        }
        depthMax = std::max(depthMax, depth);
      }
      EXPECT_EQ(t.subtree(0).size(), (size_t)n);
      EXPECT_LE(depthMax, std::log2(n) + 2 * std::log2(roots) + 2);
      for (int k = 0; k < roots; ++k)
        for (int r : t.servedBy(k)) {
          ++seen[r];
          if (t.rootTellingParent(r) == k) ++told[r];
        }
      for (int r = 0; r < n; ++r) {
        // Each rank joins its own root, and a leader of a block below the first also the root
        // that knows its parent; exactly one root tells it its parent (none for rank 0).
        EXPECT_EQ(seen[r], t.blockBegin(t.blockOf(r)) == r && t.blockOf(r) > 0 ? 2 : 1) << r;
        EXPECT_EQ(told[r], r == 0 ? 0 : 1) << r;
      }
    }
  }
}

}  // namespace
}  // namespace mixccl
