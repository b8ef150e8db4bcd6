// Reading plans for execution: mixccl-plan's own output, roles, gradient intervals.
#include "mixccl/train/exec_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mixccl::train {
namespace {

TEST(ExecPlan, ReadsThePlannersOutputAndItsRanks) {
  // The planner writes each stage's ranks with the rank map; parsing checks them against the
  // same map, so the two sides agree on every shipped example.
  const std::string out = ::testing::TempDir() + "/exec_plan_" + std::to_string(getpid());
  const std::string cmd = std::string(MIXCCL_PLAN_BINARY) + " --model " +
                          MIXCCL_TRAIN_EXAMPLES "/models/llama2-7b.json --cluster " +
                          MIXCCL_TRAIN_EXAMPLES "/clusters/h100-a100-v100.json --json >" + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(out.c_str());
  const ExecPlan plan = ParseExecPlan(text.str(), "plan");
  EXPECT_GT(plan.num_ranks(), 1);
  EXPECT_EQ(plan.global_batch, 1024);
  EXPECT_EQ(plan.seq_length, 4096);
  // Every rank has a role, and the first stages of the replicas (tensor-parallel index 0)
  // cover each micro-batch slot exactly once, without gaps.
  std::vector<int> taken(plan.global_batch / plan.micro_batches, 0);
  for (int r = 0; r < plan.num_ranks(); ++r) {
    const RankRole role = RoleOfRank(plan, r);
    if (role.stage != 0 || PlaceRank(plan.structure, r).tp_index != 0) continue;
    for (int i = 0; i < role.micro_batch; ++i) ++taken.at(role.slot_offset + i);
  }
  EXPECT_EQ(taken, std::vector<int>(taken.size(), 1));
}

TEST(ExecPlan, TensorParallelRolesFollowTheRankMap) {
  // tp 2 x a two-stage pipeline x replicas of 5 and 3 sequences: 8 ranks. Each rank's
  // tensor-parallel index is the rank map's (innermost), its device type and micro-batch the
  // plan's, and the plan fits a model with 4 heads.
  const ExecPlan p = ParseExecPlan(R"({"global_batch_size": 16, "micro_batches": 2, "stages": [
    {"group": 0, "stage": 0, "device_type": "x", "layers": [0, 1], "tp": 2, "dp": 1,
     "micro_batch": 5, "ranks": [0, 1]},
    {"group": 0, "stage": 0, "device_type": "x", "layers": [0, 1], "tp": 2, "dp": 1,
     "micro_batch": 3, "ranks": [4, 5]},
    {"group": 0, "stage": 1, "device_type": "x", "layers": [1, 3], "tp": 2, "dp": 1,
     "micro_batch": 5, "ranks": [2, 3]},
    {"group": 0, "stage": 1, "device_type": "x", "layers": [1, 3], "tp": 2, "dp": 1,
     "micro_batch": 3, "ranks": [6, 7]}]})",
                                   "tp");
  TrainOptions o;
  o.model.num_layers = 3;
  o.global_batch = 16;
  o.micro_batches = 2;
  CheckExecPlan(p, o, 8);
  EXPECT_EQ(ReplicaMicroBatches(p), (std::vector<int>{5, 3}));
  for (int r = 0; r < 8; ++r) {
    const RankRole role = RoleOfRank(p, r);
    EXPECT_EQ(role.tp.size, 2);
    EXPECT_EQ(role.tp.index, r % 2) << r;
    EXPECT_EQ(role.stage, (r / 2) % 2) << r;
    EXPECT_EQ(role.replica, r / 4) << r;
    EXPECT_EQ(role.micro_batch, r < 4 ? 5 : 3) << r;
    EXPECT_EQ(role.device_type, "x");
  }
}

ExecPlan Mixed() {
  return ParseExecPlan(R"({"global_batch_size": 16, "micro_batches": 2, "stages": [
    {"group": 0, "stage": 0, "layers": [0, 3], "tp": 1, "dp": 2, "micro_batch": 3},
    {"group": 0, "stage": 0, "layers": [0, 3], "tp": 1, "dp": 1, "micro_batch": 2},
    {"group": 1, "stage": 0, "layers": [0, 2], "tp": 1, "dp": 1, "micro_batch": 0},
    {"group": 1, "stage": 1, "layers": [2, 3], "tp": 1, "dp": 1, "micro_batch": 0}]})",
                       "mixed");
}

TEST(ExecPlan, RolesAndSlotOffsets) {
  ExecPlan p;
  try {
    p = Mixed();
    FAIL() << "accepted micro_batch 0";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "mixed: group 1 stage 0: \"micro_batch\" must be an integer >= 1");
  }
  p = ParseExecPlan(R"({"global_batch_size": 20, "micro_batches": 2, "stages": [
    {"group": 0, "stage": 0, "layers": [0, 3], "tp": 1, "dp": 2, "micro_batch": 3},
    {"group": 0, "stage": 0, "layers": [0, 3], "tp": 1, "dp": 1, "micro_batch": 2},
    {"group": 1, "stage": 0, "layers": [0, 2], "tp": 1, "dp": 1, "micro_batch": 2},
    {"group": 1, "stage": 1, "layers": [2, 3], "tp": 1, "dp": 1, "micro_batch": 2}]})",
                    "mixed");
  ASSERT_EQ(p.num_ranks(), 5);
  TrainOptions o;
  o.model.num_layers = 3;
  o.global_batch = 20;
  o.micro_batches = 2;
  CheckExecPlan(p, o, 5);
  // Replicas 0, 1 (3 sequences), 2 (2), then group 1's pipeline (2) as replica 3.
  const int offsets[] = {0, 3, 6, 8, 8};
  const int batches[] = {3, 3, 2, 2, 2};
  const int stages[] = {0, 0, 0, 0, 1};
  for (int r = 0; r < 5; ++r) {
    const RankRole role = RoleOfRank(p, r);
    EXPECT_EQ(role.slot_offset, offsets[r]) << r;
    EXPECT_EQ(role.micro_batch, batches[r]) << r;
    EXPECT_EQ(role.stage, stages[r]) << r;
    EXPECT_EQ(role.num_replicas, 4);
  }
  EXPECT_EQ(RoleOfRank(p, 4).range.first_layer, 2);
  EXPECT_TRUE(RoleOfRank(p, 4).range.head);
  EXPECT_FALSE(RoleOfRank(p, 3).range.head);
  EXPECT_EQ(GradientCuts(p, 3), (std::vector<int>{0, 2, 3}));
}

TEST(ExecPlan, SegmentsCoverTheStageOnce) {
  GptConfig c;
  c.num_layers = 3;
  c.channels = 8;
  c.num_heads = 2;
  const GptStage whole(c, StageRange::Whole(c));
  const std::vector<GradientSegment> segs = SegmentsOfStage({0, 2, 3}, whole);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].offset, 0u);
  EXPECT_EQ(segs[1].offset, whole.FindTensor("block2.ln1_w")->offset);
  EXPECT_EQ(segs[1].offset + segs[1].count, whole.params().size());
  const GptStage last(c, {2, 3, false, true, 0});
  const std::vector<GradientSegment> tail = SegmentsOfStage({0, 2, 3}, last);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].interval, 1);
  EXPECT_EQ(tail[0].count, last.params().size());
  // The whole model's interval 1 and the last stage hold the same tensors.
  EXPECT_EQ(segs[1].count, tail[0].count);
}

}  // namespace
}  // namespace mixccl::train
