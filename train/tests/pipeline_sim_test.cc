#include "mixccl/train/pipeline_sim.h"

#include <gtest/gtest.h>

namespace mixccl::train {
namespace {

TEST(PipelineSim, UniformStagesMatchTheClosedForm) {
  // Equal stages without communication: (m + P - 1) * (f + b).
  for (int p : {1, 2, 4, 7}) {
    for (int m : {1, 3, 8, 32}) {
      std::vector<SimStage> stages(p, SimStage{1.0, 2.0, 0.0, 0.0});
      const SimResult r = Simulate1F1B(stages, m);
      EXPECT_DOUBLE_EQ(r.makespan_s, (m + p - 1) * 3.0) << "P=" << p << " m=" << m;
      EXPECT_DOUBLE_EQ(r.busy_s[0], m * 3.0);
    }
  }
}

TEST(PipelineSim, TwoUnequalStagesByHand) {
  // Stage 0: f=1 b=2; stage 1: f=3 b=4; m=2.
  //   S0: F0 [0,1]  F1 [1,2]                    B0 [8,10]        B1 [15,17]
  //   S1:           F0 [1,4] B0 [4,8] F1 [8,11] B1 [11,15]
  const SimResult r = Simulate1F1B({{1, 2, 0, 0}, {3, 4, 0, 0}}, 2);
  EXPECT_DOUBLE_EQ(r.makespan_s, 17.0);
  EXPECT_DOUBLE_EQ(r.finish_s[0], 17.0);
  EXPECT_DOUBLE_EQ(r.finish_s[1], 15.0);
  EXPECT_DOUBLE_EQ(r.busy_s[0], 6.0);
  EXPECT_DOUBLE_EQ(r.busy_s[1], 14.0);
}

TEST(PipelineSim, SendsAreOnTheCriticalPath) {
  // One micro-batch through two stages: F0, send, F1, B1, send back, B0.
  const SimResult r = Simulate1F1B({{1, 2, 0.5, 9.0}, {3, 4, 9.0, 0.25}}, 1);
  EXPECT_DOUBLE_EQ(r.makespan_s, 1 + 0.5 + 3 + 4 + 0.25 + 2);
}

TEST(PipelineSim, SlowStageSetsTheSteadyStateAndCreatesBubbles) {
  // The middle stage is 3x slower (f=3, b=6). It can start once stage 0 has done F0 (t=1) and
  // from then on always has work: the last stage answers each forward within 3 time units,
  // less than the 9 the middle stage spends per micro-batch. So it runs 16 * 9 = 144 without a
  // gap, ending at 145, and stage 0's last backward (2) closes the step at 147, which is the
  // lower bound f_0 + m * (f_1 + b_1) + b_0.
  const int m = 16;
  std::vector<SimStage> stages = {{1, 2, 0, 0}, {3, 6, 0, 0}, {1, 2, 0, 0}};
  const SimResult r = Simulate1F1B(stages, m);
  EXPECT_DOUBLE_EQ(r.makespan_s, 147.0);
  EXPECT_DOUBLE_EQ(r.finish_s[1], 145.0);
  EXPECT_DOUBLE_EQ(r.busy_s[1], 144.0);
  // The fast stages idle most of the step: these are the bubbles the slow stage causes,
  // which the uniform formula (m + P - 1) * (f + b) = 54 would ignore.
  EXPECT_DOUBLE_EQ(r.busy_s[0], m * 3.0);
  EXPECT_LT(r.busy_s[0] / r.makespan_s, 0.35);
  // The slow stage placed last: the others still wait for it, and the makespan is again one
  // pass through the fast stages plus m times the slow one.
  const SimResult last = Simulate1F1B({{1, 2, 0, 0}, {1, 2, 0, 0}, {3, 6, 0, 0}}, m);
  EXPECT_DOUBLE_EQ(last.makespan_s, 1 + 1 + m * 9.0 + 2 + 2);
}

TEST(PipelineSim, FewerMicroBatchesThanStages) {
  // m < P: warm-up is cut short; one micro-batch goes down and back: sum of all f and b, and
  // the second follows one slowest-stage forward later at most.
  std::vector<SimStage> stages(4, SimStage{1.0, 1.0, 0.0, 0.0});
  EXPECT_DOUBLE_EQ(Simulate1F1B(stages, 1).makespan_s, 8.0);
  EXPECT_DOUBLE_EQ(Simulate1F1B(stages, 2).makespan_s, 10.0);
}

}  // namespace
}  // namespace mixccl::train
