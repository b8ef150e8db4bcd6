#include "mixccl/train/placement.h"

#include <gtest/gtest.h>

namespace mixccl::train {
namespace {

TEST(Placement, ReplicaFillsAHost) {
  // tp 2 x 4 stages = 8 devices = one host per replica: no boundary crosses a host and each
  // stage's replicas are on dp different hosts.
  const BlockLayout b{2, 4, 2, 8};
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(StageBoundaryCrossesDomain(b, i));
  EXPECT_EQ(DomainsOfStage(b, 0), 2);
}

TEST(Placement, ReplicaStraddlesHosts) {
  // tp 4 x 3 stages = 12 devices: replica 0 crosses between stages 1 and 2 (device 8),
  // replica 1 between stages 0 and 1 (device 16).
  const BlockLayout b{4, 3, 2, 8};
  EXPECT_TRUE(StageBoundaryCrossesDomain(b, 0));
  EXPECT_TRUE(StageBoundaryCrossesDomain(b, 1));
  EXPECT_EQ(DomainsOfStage(b, 0), 2);
  // tp 2 x 3 stages, 3 replicas start at devices 0, 6, 12: stage 0 on hosts 0, 0, 1; replica 1
  // crosses from device 7 to device 8 between its stages 0 and 1.
  const BlockLayout c{2, 3, 3, 8};
  EXPECT_EQ(DomainsOfStage(c, 0), 2);
  EXPECT_TRUE(StageBoundaryCrossesDomain(c, 0));
  EXPECT_FALSE(StageBoundaryCrossesDomain(BlockLayout{2, 3, 1, 8}, 0));
}

TEST(Placement, SeveralReplicasShareAHost) {
  // tp 1 x 2 stages, 4 replicas on an 8-device host: everything in one domain.
  const BlockLayout b{1, 2, 4, 8};
  EXPECT_FALSE(StageBoundaryCrossesDomain(b, 0));
  EXPECT_EQ(DomainsOfStage(b, 0), 1);
  EXPECT_EQ(DomainsOfStage(b, 1), 1);
  // One device per host: every stage boundary is a host boundary.
  EXPECT_TRUE(StageBoundaryCrossesDomain(BlockLayout{1, 4, 1, 1}, 2));
  EXPECT_EQ(DomainsOfStage(BlockLayout{1, 4, 3, 1}, 2), 3);
}

}  // namespace
}  // namespace mixccl::train
