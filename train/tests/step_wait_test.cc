// The waiting of a synchronised step (PlanEvaluator::Price): a faster data-parallel replica
// waits for the slower one before the gradient AllReduce, a pipeline stage for its slower
// neighbour, every rank for the longest update; and the profiled update itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "mixccl/train/memory_model.h"
#include "mixccl/train/pipeline_sim.h"
#include "mixccl/train/plan_evaluator.h"
#include "mixccl/train/planner.h"
#include "mixccl/train/profile.h"
#include "mixccl/train/spec_error.h"
#include "test_specs.h"

namespace mixccl::train {
namespace {

using testing::FastSlow;
using testing::PriceSlowThenFast;
using testing::SmallModel;

// One layer: 1 + 2 ms per sequence on "fast", 2 + 4 ms on "slow" (proportional in the
// micro-batch); embedding and head 1 us per sequence each way. `update_ms` per million
// parameters on fast, twice that on slow (0: no update entries).
LayerProfile Profile(double update_ms) {
  std::string entries;
  for (const char* t : {"fast", "slow"}) {
    const double k = std::string(t) == "fast" ? 1.0 : 2.0;
    const std::string head = std::to_string(0.001 * k);
    entries += std::string(entries.empty() ? "" : ",") + R"({"device_type": ")" + t +
               R"(", "tp": 1, "micro_batch": 1, "forward_ms": )" + std::to_string(k) +
               R"(, "backward_ms": )" + std::to_string(2 * k) + "}";
    for (const char* part : {"embedding", "head"}) {
      entries += std::string(R"(,{"device_type": ")") + t + R"(", "tp": 1, "micro_batch": 1, )" +
                 R"("part": ")" + part + R"(", "forward_ms": )" + head + R"(, "backward_ms": )" +
                 head + "}";
    }
    if (update_ms > 0.0) {
      entries += std::string(R"(,{"device_type": ")") + t +
                 R"(", "part": "update", "parameters": 1e6, "update_ms": )" +
                 std::to_string(update_ms * k) + "}";
    }
  }
  return ParseProfile(R"({"entries": [)" + entries + "]}", "p.json");
}

const StagePlan& Entry(const Plan& p, int group, int stage) {
  for (const StagePlan& s : p.stages) {
    if (s.group == group && s.stage == stage) return s;
  }
  throw std::runtime_error("no such plan entry");
}

// The small model on the fast/slow cluster, priced with Profile(update) (members in the order
// each needs the ones before it).
struct Pricing {
  explicit Pricing(double update) : profile(Profile(update)) {}
  const ModelSpec model = SmallModel(4, 24);
  const ClusterSpec cluster = FastSlow();
  const LayerProfile profile;
  const CostModel cost{model, cluster, &profile};
  const MemoryModel memory{model};
  const PlanEvaluator evaluator{cost, memory};
};

TEST(StepWait, TheFasterReplicaWaitsForTheSlowerBeforeTheAllReduce) {
  const Pricing w(0.0);
  // One fast and one slow replica of the whole model, 15 + 9 sequences in one micro-batch:
  // fast computes 15 x 4 x 3 ms = 180 ms, slow 9 x 4 x 6 ms = 216 ms (plus the embedding's
  // and head's microseconds), so fast waits 36 ms and slow not at all.
  Structure s;
  s.groups.push_back(GroupTemplate{{0}, {1}, {1}, 1});
  s.groups.push_back(GroupTemplate{{1}, {1}, {1}, 1});
  const Plan p = w.evaluator.Price(s, 1, {{{1, 15}}, {{1, 9}}}, {{4}, {4}}, {{0}, {0}});
  const StagePlan& fast = Entry(p, 0, 0);
  const StagePlan& slow = Entry(p, 1, 0);
  EXPECT_NEAR(fast.busy_s, 0.180 + 15 * 4e-6, 1e-12);
  EXPECT_NEAR(slow.busy_s, 0.216 + 9 * 8e-6, 1e-12);
  EXPECT_GT(fast.allreduce_s, 0.0);
  EXPECT_DOUBLE_EQ(fast.allreduce_s, slow.allreduce_s);
  EXPECT_NEAR(fast.wait_s, slow.busy_s - fast.busy_s, 1e-12);
  EXPECT_NEAR(fast.wait_s, 0.036, 1e-4);
  EXPECT_NEAR(slow.wait_s, 0.0, 1e-12);
  // The AllReduce starts when the slower replica is done.
  EXPECT_NEAR(p.predicted.step_time_s, slow.busy_s + slow.allreduce_s, 1e-12);
  // Swapping the split moves the wait to the slow replica: integer micro-batches, 16 + 8
  // sequences, still leave each replica's fixed parts unequal; here 17 + 7 overloads fast.
  const Plan q = w.evaluator.Price(s, 1, {{{1, 17}}, {{1, 7}}}, {{4}, {4}}, {{0}, {0}});
  EXPECT_NEAR(Entry(q, 0, 0).wait_s, 0.0, 1e-12);
  EXPECT_NEAR(Entry(q, 1, 0).wait_s, Entry(q, 0, 0).busy_s - Entry(q, 1, 0).busy_s, 1e-12);
}

TEST(StepWait, AStageWaitsForItsSlowerNeighbourBeyondTheBubble) {
  const Pricing w(0.0);
  // slow (1 layer) -> fast (3 layers), 4 micro-batches of 6: per micro-batch slow computes
  // 6 x 6 = 36 ms, fast 6 x 9 = 54 ms; each stage waits for the rest of the makespan.
  const Plan p = PriceSlowThenFast(w.evaluator, 4, 6);
  const SimResult alone = [&] {
    std::vector<SimStage> st(2);
    st[0].forward_s = 6 * (0.002 + 1e-6 * 2);  // slow: one layer and the embedding
    st[0].backward_s = 6 * (0.004 + 1e-6 * 2);
    st[1].forward_s = 6 * (3 * 0.001 + 1e-6);  // fast: three layers and the head
    st[1].backward_s = 6 * (3 * 0.002 + 1e-6);
    st[0].send_forward_s = Entry(p, 0, 0).forward_s - st[0].forward_s;
    st[1].send_backward_s = Entry(p, 0, 1).backward_s - st[1].backward_s;
    return Simulate1F1B(st, 4);
  }();
  EXPECT_NEAR(p.predicted.step_time_s, alone.makespan_s, 1e-9);
  for (int j = 0; j < 2; ++j) {
    const StagePlan& st = Entry(p, 0, j);
    EXPECT_NEAR(st.busy_s, alone.busy_s[j], 1e-9);
    EXPECT_NEAR(st.wait_s, alone.makespan_s - alone.busy_s[j], 1e-9);
  }
  // The slow stage computes 4 x 36 = 144 ms of the makespan, fast 4 x 54 = 216 ms: the slow
  // stage waits longer, more than the 1F1B bubble of equal stages would make it.
  EXPECT_GT(Entry(p, 0, 0).wait_s, Entry(p, 0, 1).wait_s + 0.05);
}

TEST(StepWait, EveryRankWaitsForTheLongestUpdate) {
  const Pricing w(1.0);  // 1 ns per parameter on fast, 2 on slow
  EXPECT_DOUBLE_EQ(w.cost.Update(0, 2e6), 2e-3);
  EXPECT_DOUBLE_EQ(w.cost.Update(1, 2e6), 4e-3);
  const Plan p = PriceSlowThenFast(w.evaluator, 4, 6);
  const Plan none =
      PriceSlowThenFast(PlanEvaluator(CostModel(w.model, w.cluster, nullptr), w.memory), 4, 6);
  double longest = 0.0;
  for (int j = 0; j < 2; ++j) {
    const StagePlan& st = Entry(p, 0, j);
    StageMemoryQuery q;
    q.num_layers = j == 0 ? 1 : 3;
    q.has_embedding = j == 0;
    q.has_head = j == 1;
    EXPECT_NEAR(st.update_s, w.memory.StageParams(q) * (j == 0 ? 2e-9 : 1e-9), 1e-15);
    longest = std::max(longest, st.update_s);
  }
  EXPECT_DOUBLE_EQ(p.predicted.update_s, longest);
  EXPECT_NEAR(p.predicted.step_time_s, p.predicted.pipeline_s + longest, 1e-12);
  EXPECT_EQ(none.predicted.update_s, 0.0);  // no profile: no update term
  // The stage with the shorter update waits the difference too.
  for (int j = 0; j < 2; ++j) {
    const StagePlan& st = Entry(p, 0, j);
    EXPECT_NEAR(st.wait_s + st.busy_s + st.update_s, p.predicted.step_time_s, 1e-12);
  }
}

TEST(StepWait, AReplicatedUpdateCanMakeThePlannerPreferAPipeline) {
  // Without an update term the two replicas (each holding the whole model) are the best
  // plan; when updating the whole model costs about a step's compute, a pipeline (each rank
  // updating its own layers only) beats them. A planner that ignores the update keeps the
  // replicas.
  const ModelSpec model = SmallModel(4, 24);
  const ClusterSpec cluster = FastSlow();
  PlannerOptions options;
  options.top = 1;
  const LayerProfile cheap = Profile(0.0);
  const PlanResult a = PlanTraining(model, cluster, &cheap, options);
  ASSERT_FALSE(a.plans.empty()) << a.error;
  EXPECT_EQ(a.plans[0].structure.groups.size(), 2u);
  const LayerProfile dear = Profile(1000.0);  // 1 us per parameter on fast
  const PlanResult b = PlanTraining(model, cluster, &dear, options);
  ASSERT_FALSE(b.plans.empty()) << b.error;
  ASSERT_EQ(b.plans[0].structure.groups.size(), 1u);
  EXPECT_EQ(b.plans[0].structure.groups[0].num_stages(), 2);
}

TEST(StepWait, TheUpdateEntryIsCheckedLikeTheOthers) {
  const LayerProfile p = ParseProfile(
      R"({"entries": [{"device_type": "fast", "part": "update", "parameters": 5e5,
          "update_ms": 2}]})",
      "p.json");
  double per = 0.0;
  ASSERT_TRUE(p.UpdateSecondsPerParameter("fast", &per));
  EXPECT_DOUBLE_EQ(per, 4e-9);
  EXPECT_FALSE(p.UpdateSecondsPerParameter("slow", &per));
  EXPECT_EQ(p.device_types(), std::vector<std::string>{"fast"});
  try {
    ParseProfile(R"({"entries": [{"device_type": "fast", "part": "update", "parameters": 5e5,
        "update_ms": 2, "forward_ms": 1}]})",
                 "p.json");
    FAIL() << "accepted forward_ms in an update entry";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("forward_ms"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mixccl::train
