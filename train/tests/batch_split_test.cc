#include "mixccl/train/batch_split.h"

#include <gtest/gtest.h>

namespace mixccl::train {
namespace {

// Group 0 is twice as fast as group 1.
double TwoToOne(int g, int mb) { return (g == 0 ? 1.0 : 2.0) * mb; }

int Sequences(const std::vector<std::vector<ReplicaClass>>& split) {
  int n = 0;
  for (const auto& group : split) {
    for (const ReplicaClass& c : group) n += c.replicas * c.micro_batch;
  }
  return n;
}

TEST(BatchSplit, MicroBatchProportionalToSpeed) {
  // 2 fast replicas and 4 slow ones share 16 sequences: 4 each for the fast, 2 for the slow,
  // so every replica needs 4 time units.
  const auto split = SplitMicroBatch(16, {2, 4}, TwoToOne);
  ASSERT_EQ(split.size(), 2u);
  ASSERT_EQ(split[0].size(), 1u);
  EXPECT_EQ(split[0][0].replicas, 2);
  EXPECT_EQ(split[0][0].micro_batch, 4);
  ASSERT_EQ(split[1].size(), 1u);
  EXPECT_EQ(split[1][0].replicas, 4);
  EXPECT_EQ(split[1][0].micro_batch, 2);
  EXPECT_EQ(Sequences(split), 16);
}

TEST(BatchSplit, RemainderKeepsTheTotalExact) {
  // One more sequence goes to a single fast replica (it finishes at 5, a slow one at 6).
  const auto split = SplitMicroBatch(17, {2, 4}, TwoToOne);
  ASSERT_EQ(split[0].size(), 2u);
  EXPECT_EQ(split[0][0].replicas, 1);
  EXPECT_EQ(split[0][0].micro_batch, 5);
  EXPECT_EQ(split[0][1].replicas, 1);
  EXPECT_EQ(split[0][1].micro_batch, 4);
  EXPECT_EQ(Sequences(split), 17);
  for (int slot = 9; slot < 200; ++slot) {  // 9 replicas
    EXPECT_EQ(Sequences(SplitMicroBatch(slot, {2, 4, 3},
                                        [](int g, int mb) { return (1.0 + g) * mb + 0.5; })),
              slot);
  }
}

TEST(BatchSplit, TooFewSequences) {
  EXPECT_TRUE(SplitMicroBatch(5, {2, 4}, TwoToOne).empty());
  const auto one_each = SplitMicroBatch(6, {2, 4}, TwoToOne);
  EXPECT_EQ(one_each[0][0].micro_batch, 1);
  EXPECT_EQ(one_each[1][0].micro_batch, 1);
}

}  // namespace
}  // namespace mixccl::train
