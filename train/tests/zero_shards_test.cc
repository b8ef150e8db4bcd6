// ZeRO-1's pieces in one process: uneven shards tile the range, and AdamW run shard by shard
// updates exactly as one AdamW over everything (the distributed runs are in
// distributed_test.cc).
#include "mixccl/train/zero_shards.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace mixccl::train {
namespace {

TEST(ZeroShards, SplitInProportionToTheMicroBatches) {
  std::vector<ParamRange> s = SplitByWeights({100, 8}, {5, 3});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].offset, 100u);
  EXPECT_EQ(s[0].count, 5u);
  EXPECT_EQ(s[1].offset, 105u);
  EXPECT_EQ(s[1].count, 3u);
  s = SplitByWeights({0, 10}, {1, 1, 1});  // floor(10/3) = 3, floor(20/3) = 6, 10
  EXPECT_EQ(s[0].count, 3u);
  EXPECT_EQ(s[1].count, 3u);
  EXPECT_EQ(s[2].count, 4u);
  s = SplitByWeights({0, 1}, {1, 4});  // a shard may be empty
  EXPECT_EQ(s[0].count, 0u);
  EXPECT_EQ(s[1].offset, 0u);
  EXPECT_EQ(s[1].count, 1u);
}

TEST(ZeroShards, RefusesBadWeights) {
  try {
    SplitByWeights({0, 4}, {0, 0});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "shard weights are all zero");
  }
  try {
    SplitByWeights({0, 4}, {2, -1});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "shard weights must not be negative");
  }
}

TEST(ZeroShards, ShardedAdamWEqualsTheWholeUpdate) {
  // Two tensors, one decayed and one not, cut by shards that cross the tensor boundary.
  const std::vector<ParamTensor> tensors = {{"w", 0, 0, 6, true}, {"b", 1, 6, 4, false}};
  std::vector<float> p(10), g(10);
  for (int i = 0; i < 10; ++i) {
    p[i] = 0.1f * i - 0.3f;
    g[i] = 0.05f * (i % 3) - 0.02f * i;
  }
  AdamWConfig c;
  AdamW whole(c, tensors, 10);
  const std::vector<ParamRange> shards = SplitByWeights({0, 10}, {5, 3});
  AdamW first(c, tensors, 10, {shards[0]}), second(c, tensors, 10, {shards[1]});
  std::vector<float> pw = p, ps = p;
  for (int step = 0; step < 3; ++step) {
    whole.Step(pw.data(), g.data(), 0.5f);
    first.Step(ps.data(), g.data(), 0.5f);
    second.Step(ps.data(), g.data(), 0.5f);
  }
  EXPECT_EQ(pw, ps);
  EXPECT_EQ(first.state_floats() + second.state_floats(), whole.state_floats());
  // The checkpoint view: each shard's moments in place, zeros elsewhere.
  std::vector<float> mw, vw, m1, v1, m2, v2;
  whole.ExportMoments(&mw, &vw);
  first.ExportMoments(&m1, &v1);
  second.ExportMoments(&m2, &v2);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(mw[i], m1[i] + m2[i]) << i;
  AdamW restored(c, tensors, 10, {shards[1]});
  restored.ImportMoments(mw, vw);
  std::vector<float> back_m, back_v;
  restored.ExportMoments(&back_m, &back_v);
  EXPECT_EQ(back_m, m2);
}

}  // namespace
}  // namespace mixccl::train
