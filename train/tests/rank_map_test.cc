// The rank map shared by mixccl-plan's output and mixccl-train.
#include "mixccl/train/rank_map.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

namespace mixccl::train {
namespace {

// Group 0: [type 0 tp2 x2 | type 1 tp1 x1] x2; group 1: [type 2 tp1 x3] x1.
Structure Example() {
  Structure s;
  GroupTemplate a;
  a.types = {0, 1};
  a.tp = {2, 1};
  a.stages = {2, 1};
  a.dp = 2;
  GroupTemplate b;
  b.types = {2};
  b.tp = {1};
  b.stages = {3};
  b.dp = 1;
  s.groups = {a, b};
  return s;
}

TEST(RankMap, NumbersBlockByBlockWithTensorParallelInnermost) {
  const Structure s = Example();
  // Block (group 0, type 0): 2 replicas x 2 stages x tp 2 = ranks 0..7.
  EXPECT_EQ(RankOf(s, {0, 0, 0, 0}), 0);
  EXPECT_EQ(RankOf(s, {0, 0, 0, 1}), 1);
  EXPECT_EQ(RankOf(s, {0, 0, 1, 0}), 2);
  EXPECT_EQ(RankOf(s, {0, 1, 0, 0}), 4);
  EXPECT_EQ(RankOf(s, {0, 1, 1, 1}), 7);
  // Block (group 0, type 1): stage 2 of both replicas = ranks 8, 9.
  EXPECT_EQ(RankOf(s, {0, 0, 2, 0}), 8);
  EXPECT_EQ(RankOf(s, {0, 1, 2, 0}), 9);
  // Group 1 follows: ranks 10..12.
  EXPECT_EQ(RankOf(s, {1, 0, 0, 0}), 10);
  EXPECT_EQ(RankOf(s, {1, 0, 2, 0}), 12);
}

TEST(RankMap, PlaceRankInvertsRankOf) {
  const Structure s = Example();
  ASSERT_EQ(s.num_devices(), 13);
  std::set<int> seen;
  for (int r = 0; r < s.num_devices(); ++r) {
    const RankPlacement p = PlaceRank(s, r);
    EXPECT_EQ(RankOf(s, p), r);
    seen.insert(r);
  }
  EXPECT_EQ(seen.size(), 13u);
}

TEST(RankMap, RefusesPlacesOutsideThePlan) {
  const Structure s = Example();
  try {
    PlaceRank(s, 13);
    FAIL();
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "rank 13 is not among the plan's 13 devices");
  }
  EXPECT_THROW(RankOf(s, {0, 2, 0, 0}), std::out_of_range);
  EXPECT_THROW(RankOf(s, {0, 0, 2, 1}), std::out_of_range);  // stage 2 has tp 1
}

}  // namespace
}  // namespace mixccl::train
