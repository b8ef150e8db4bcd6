// A stage's fixed cost per pass (profile part "pass"): what a forward and a backward pass cost
// whatever the stage's layers, paid once per micro-batch by every stage. Old profiles have no
// such entries and price as before.
#include <gtest/gtest.h>

#include <string>

#include "mixccl/train/memory_model.h"
#include "mixccl/train/plan_evaluator.h"
#include "mixccl/train/profile.h"
#include "test_specs.h"

namespace mixccl::train {
namespace {

using testing::FastSlow;
using testing::PriceSlowThenFast;
using testing::ProfileJson;
using testing::SmallModel;

// One layer 1 + 2 ms per sequence on "fast", 2 + 4 on "slow", measured at micro-batches 1 and
// 4; embedding and head 0.01 ms per sequence each way. With `passes`, the fixed cost of a pass
// on fast is 0.5 + 1.0 ms at micro-batch 1 and 0.8 + 1.4 at 4, twice that on slow.
LayerProfile Profile(bool passes) {
  ProfileJson json;
  for (const std::string type : {"fast", "slow"}) {
    const double k = type == "fast" ? 1.0 : 2.0;
    for (int mb : {1, 4}) {
      json.Add(type, "layer", mb, k * mb, 2 * k * mb);
      json.Add(type, "embedding", mb, 0.01 * mb, 0.01 * mb);
      json.Add(type, "head", mb, 0.01 * mb, 0.01 * mb);
    }
    if (passes) {
      json.Add(type, "pass", 1, 0.5 * k, 1.0 * k);
      json.Add(type, "pass", 4, 0.8 * k, 1.4 * k);
    }
  }
  return ParseProfile(json.Text(), "p.json");
}

TEST(StagePass, ComesFromTheProfileAndStaysFixedOutsideItsMeasurements) {
  const ModelSpec model = SmallModel(4, 24);
  const ClusterSpec cluster = FastSlow();
  const LayerProfile with = Profile(true);
  const CostModel cost(model, cluster, &with);
  EXPECT_DOUBLE_EQ(cost.StagePass(0, 1, 1).forward_s, 0.5e-3);
  EXPECT_DOUBLE_EQ(cost.StagePass(1, 1, 4).backward_s, 2.8e-3);
  // A third of the way from 1 to 4.
  EXPECT_NEAR(cost.StagePass(0, 1, 2).forward_s, 0.6e-3, 1e-15);
  EXPECT_NEAR(cost.StagePass(0, 1, 2).backward_s, (1.0 + 0.4 / 3) * 1e-3, 1e-15);
  // Beyond the largest measurement a fixed cost stays what it was (a layer's time scales).
  EXPECT_DOUBLE_EQ(cost.StagePass(0, 1, 8).forward_s, 0.8e-3);
  EXPECT_DOUBLE_EQ(cost.Layer(0, 1, 8).forward_s, 8e-3);
  // tp 2 not measured, an old profile, no profile: no fixed cost.
  EXPECT_EQ(cost.StagePass(0, 2, 4).forward_s, 0.0);
  const LayerProfile old = Profile(false);
  EXPECT_EQ(CostModel(model, cluster, &old).StagePass(0, 1, 4).backward_s, 0.0);
  EXPECT_EQ(CostModel(model, cluster, nullptr).StagePass(0, 1, 4).forward_s, 0.0);
}

TEST(StagePass, EveryStagePaysItOncePerMicroBatch) {
  const ModelSpec model = SmallModel(4, 24);
  const ClusterSpec cluster = FastSlow();
  const MemoryModel memory(model);
  const LayerProfile with = Profile(true);
  const LayerProfile old = Profile(false);
  const CostModel cost(model, cluster, &with);
  const CostModel cost_old(model, cluster, &old);
  // slow (1 layer + embedding) -> fast (3 layers + head), 6 micro-batches of 4.
  const Plan p = PriceSlowThenFast(PlanEvaluator(cost, memory), 6, 4);
  const Plan q = PriceSlowThenFast(PlanEvaluator(cost_old, memory), 6, 4);
  ASSERT_EQ(p.stages.size(), 2u);
  // Per micro-batch slow: layer 8 + 16, embedding 0.04 + 0.04, pass 1.6 + 2.8 = 28.48 ms;
  // fast: 3 x (4 + 8), head 0.04 + 0.04, pass 0.8 + 1.4 = 38.28 ms; each stage also sends
  // once per micro-batch (activations forward, their gradient back over the same link).
  const double send = cost.PointToPoint(1, 1, 0, 1, false, 4);
  EXPECT_NEAR(p.stages[0].busy_s, 6 * (28.48e-3 + send), 1e-9);
  EXPECT_NEAR(p.stages[1].busy_s, 6 * (38.28e-3 + send), 1e-9);
  EXPECT_NEAR(q.stages[0].busy_s, 6 * (24.08e-3 + send), 1e-9);
  EXPECT_NEAR(q.stages[1].busy_s, 6 * (36.08e-3 + send), 1e-9);
  EXPECT_GT(p.predicted.step_time_s, q.predicted.step_time_s + 6 * 2.2e-3);
}

TEST(StagePass, SizesMicroBatchesWithTheFixedCost) {
  const ModelSpec model = SmallModel(4, 24);
  const ClusterSpec cluster = FastSlow();
  const MemoryModel memory(model);
  const LayerProfile with = Profile(true);
  const CostModel cost(model, cluster, &with);
  const PlanEvaluator evaluator(cost, memory);
  // Whole model on fast at micro-batch 4: 4 x 12 + 2.2 ms.
  EXPECT_NEAR(evaluator.IdealMicroBatchTime(GroupTemplate{{0}, {1}, {1}, 1}, 4), 50.2e-3, 1e-12);
  // slow -> fast with fractional layers n_s + n_f = 4 finishing together:
  // 4.4 + 24 n_s = 2.2 + 12 n_f, so T = (4 + 4.4/24 + 2.2/12) / (1/24 + 1/12) = 34.9333 ms.
  EXPECT_NEAR(evaluator.IdealMicroBatchTime(GroupTemplate{{1, 0}, {1, 1}, {1, 1}, 1}, 4),
              (4 + 4.4 / 24 + 2.2 / 12) / (1.0 / 24 + 1.0 / 12) * 1e-3, 1e-12);
}

}  // namespace
}  // namespace mixccl::train
