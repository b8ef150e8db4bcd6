// What a point-to-point message costs the stages themselves (profile part "message"): the
// trainer's posts, hand-offs and wake-ups, paid per micro-batch on top of the link's time.
// Profiles without such entries price as before.
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
// 4. With `messages`, a message costs 0.3 ms at micro-batch 1 and 0.4 at 4 on fast, 0.25 and
// 0.5 on slow.
LayerProfile Profile(bool messages) {
  ProfileJson json;
  for (const std::string type : {"fast", "slow"}) {
    const double k = type == "fast" ? 1.0 : 2.0;
    for (int mb : {1, 4}) json.Add(type, "layer", mb, k * mb, 2 * k * mb);
  }
  if (messages) {
    json.Add("fast", "message", 1, 0.3, 0.3);
    json.Add("fast", "message", 4, 0.4, 0.4);
    json.Add("slow", "message", 1, 0.25, 0.25);
    json.Add("slow", "message", 4, 0.5, 0.5);
  }
  return ParseProfile(json.Text(), "p.json");
}

TEST(MessageCost, ComesFromTheProfileAndStaysFixedOutsideItsMeasurements) {
  const ModelSpec model = SmallModel(4, 24);
  const ClusterSpec cluster = FastSlow();
  const LayerProfile with = Profile(true);
  const CostModel cost(model, cluster, &with);
  EXPECT_DOUBLE_EQ(cost.MessageCost(0, 1, 1), 0.3e-3);
  EXPECT_DOUBLE_EQ(cost.MessageCost(1, 1, 4), 0.5e-3);
  EXPECT_NEAR(cost.MessageCost(0, 1, 2), (0.3 + 0.1 / 3) * 1e-3, 1e-15);  // interpolated
  EXPECT_DOUBLE_EQ(cost.MessageCost(0, 1, 24), 0.4e-3);  // a fixed cost: not scaled up
  // tp 2 not measured, an old profile, no profile: nothing beyond the link.
  EXPECT_EQ(cost.MessageCost(0, 2, 4), 0.0);
  const LayerProfile old = Profile(false);
  EXPECT_EQ(CostModel(model, cluster, &old).MessageCost(0, 1, 4), 0.0);
  EXPECT_EQ(CostModel(model, cluster, nullptr).MessageCost(0, 1, 4), 0.0);
  // A link between the two types pays the dearer side's message on top of its own time.
  const CostModel link_only(model, cluster, &old);
  EXPECT_NEAR(cost.PointToPoint(1, 1, 0, 1, false, 1),
              link_only.PointToPoint(1, 1, 0, 1, false, 1) + 0.3e-3, 1e-15);
  EXPECT_NEAR(cost.PointToPoint(0, 1, 1, 1, false, 4),
              link_only.PointToPoint(0, 1, 1, 1, false, 4) + 0.5e-3, 1e-15);
}

TEST(MessageCost, APipelinePaysItOncePerMicroBatchOnEachStage) {
  const ModelSpec model = SmallModel(4, 24);
  const ClusterSpec cluster = FastSlow();
  const MemoryModel memory(model);
  const LayerProfile with = Profile(true);
  const LayerProfile old = Profile(false);
  const CostModel cost(model, cluster, &with);
  const CostModel cost_old(model, cluster, &old);
  // slow (1 layer) -> fast (3 layers), 24 micro-batches of 1: each stage sends once per
  // micro-batch (activations forward, their gradient back), so each is 24 x 0.3 ms busier.
  const Plan p = PriceSlowThenFast(PlanEvaluator(cost, memory), 24, 1);
  const Plan q = PriceSlowThenFast(PlanEvaluator(cost_old, memory), 24, 1);
  ASSERT_EQ(p.stages.size(), 2u);
  ASSERT_EQ(q.stages.size(), 2u);
  EXPECT_NEAR(p.stages[0].busy_s, q.stages[0].busy_s + 24 * 0.3e-3, 1e-9);
  EXPECT_NEAR(p.stages[1].busy_s, q.stages[1].busy_s + 24 * 0.3e-3, 1e-9);
  // The bottleneck stage (fast: 3 x 3 ms a micro-batch against slow's 6) pays it on the step.
  EXPECT_GT(p.predicted.step_time_s, q.predicted.step_time_s + 24 * 0.3e-3 - 1e-9);
  // One stage sends nothing: the same price either way.
  Structure one;
  one.groups.push_back(GroupTemplate{{0}, {1}, {1}, 1});
  EXPECT_DOUBLE_EQ(
      PlanEvaluator(cost, memory).Price(one, 24, {{{1, 1}}}, {{4}}, {{0}}).predicted.step_time_s,
      PlanEvaluator(cost_old, memory).Price(one, 24, {{{1, 1}}}, {{4}}, {{0}}).predicted.step_time_s);
}

}  // namespace
}  // namespace mixccl::train
