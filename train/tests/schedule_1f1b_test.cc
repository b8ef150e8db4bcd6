// The 1F1B generator shared by the planner's simulator and the trainer.
#include "mixccl/train/schedule_1f1b.h"

#include <gtest/gtest.h>

#include <set>

#include "mixccl/train/pipeline_sim.h"

namespace mixccl::train {
namespace {

std::string Render(const std::vector<PipelineOp>& ops) {
  std::string s;
  for (const PipelineOp& op : ops) {
    s += (op.forward ? "F" : "B") + std::to_string(op.micro_batch) + " ";
  }
  return s;
}

TEST(Schedule1F1B, ThreeStagesFourMicroBatchesByHand) {
  EXPECT_EQ(Render(OneFOneBOrder(0, 3, 4)), "F0 F1 F2 B0 F3 B1 B2 B3 ");
  EXPECT_EQ(Render(OneFOneBOrder(1, 3, 4)), "F0 F1 B0 F2 B1 F3 B2 B3 ");
  EXPECT_EQ(Render(OneFOneBOrder(2, 3, 4)), "F0 B0 F1 B1 F2 B2 F3 B3 ");
  // Fewer micro-batches than warm-up slots: all forwards first.
  EXPECT_EQ(Render(OneFOneBOrder(0, 4, 2)), "F0 F1 B0 B1 ");
}

TEST(Schedule1F1B, EveryMicroBatchOnceForwardBeforeBackwardWithinTheInFlightBound) {
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 9; ++m) {
      for (int j = 0; j < p; ++j) {
        const std::vector<PipelineOp> ops = OneFOneBOrder(j, p, m);
        ASSERT_EQ(ops.size(), 2u * m);
        std::set<int> live, done;
        int next_forward = 0, next_backward = 0;
        for (const PipelineOp& op : ops) {
          if (op.forward) {
            EXPECT_EQ(op.micro_batch, next_forward++);  // forwards in order
            live.insert(op.micro_batch);
          } else {
            EXPECT_EQ(op.micro_batch, next_backward++);  // backwards in order
            EXPECT_EQ(live.count(op.micro_batch), 1u);
            live.erase(op.micro_batch);
          }
          // The trainer keeps MaxInFlight activation slots, indexed by micro-batch modulo.
          EXPECT_LE(static_cast<int>(live.size()), MaxInFlight(j, p, m));
        }
        EXPECT_TRUE(live.empty());
      }
    }
  }
}

TEST(Schedule1F1B, SimulatorFollowsTheGeneratorsOrder) {
  // A slow last stage: with the generator's order the first stage's backward of micro-batch
  // i waits for the last stage, and the makespan is the hand-derived one.
  //   S0: F0 [0,1] F1 [1,2]           B0 [5,6]        B1 [9,10]
  //   S1:          F0 [1,3] B0 [3,5]  F1 [5,7] B1 [7,9]
  const SimResult r = Simulate1F1B({{1, 1, 0, 0}, {2, 2, 0, 0}}, 2);
  EXPECT_DOUBLE_EQ(r.finish_s[1], 9.0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 10.0);
}

}  // namespace
}  // namespace mixccl::train
