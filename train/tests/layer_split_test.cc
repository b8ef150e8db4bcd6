#include "mixccl/train/layer_split.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace mixccl::train {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Random stage costs of the planner's form: fixed part + per-layer time times the layer count,
// a convex-ish recomputation surcharge, and a memory limit beyond which the stage is infeasible.
struct RandomCosts {
  std::vector<double> fixed, per_layer, surcharge;
  std::vector<int> soft, hard;
  double operator()(int j, int n) const {
    if (n > hard[j]) return kInf;
    double c = fixed[j] + n * per_layer[j];
    if (n > soft[j]) c += (n - soft[j]) * surcharge[j];
    return c;
  }
};

RandomCosts MakeCosts(std::mt19937* rng, int stages, int layers, bool integral) {
  std::uniform_int_distribution<int> speed(1, 4), fixed(0, 3), limit(1, layers);
  std::uniform_real_distribution<double> real(0.5, 3.0);
  RandomCosts c;
  for (int j = 0; j < stages; ++j) {
    // Integral costs create many ties, exercising the tie-breaking rules.
    c.per_layer.push_back(integral ? speed(*rng) : real(*rng));
    c.fixed.push_back(integral ? fixed(*rng) : real(*rng));
    c.surcharge.push_back(integral ? 1.0 : real(*rng) * 0.3);
    const int hard = limit(*rng);
    c.hard.push_back(std::max(hard, 1));
    c.soft.push_back(std::uniform_int_distribution<int>(0, c.hard.back())(*rng));
  }
  return c;
}

TEST(LayerSplit, MatchesExhaustiveEnumeration) {
  std::mt19937 rng(12345);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int layers = std::uniform_int_distribution<int>(1, 12)(rng);
    const int stages = std::uniform_int_distribution<int>(1, std::min(layers, 6))(rng);
    const RandomCosts costs = MakeCosts(&rng, stages, layers, trial % 2 == 0);
    const StageCostFn fn = [&](int j, int n) { return costs(j, n); };
    const LayerSplit dp = SplitLayers(layers, stages, fn);
    const LayerSplit brute = SplitLayersExhaustive(layers, stages, fn);
    ASSERT_EQ(dp.feasible, brute.feasible) << "trial " << trial;
    if (!dp.feasible) {
      ++infeasible;
      continue;
    }
    ++feasible;
    EXPECT_EQ(dp.bottleneck, brute.bottleneck) << "trial " << trial;
    EXPECT_NEAR(dp.total, brute.total, 1e-9 * std::fabs(brute.total)) << "trial " << trial;
    EXPECT_EQ(dp.layers, brute.layers) << "trial " << trial;
    int sum = 0;
    for (int n : dp.layers) {
      EXPECT_GE(n, 1);
      sum += n;
    }
    EXPECT_EQ(sum, layers);
  }
  // Both outcomes were exercised.
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 20);
}

TEST(LayerSplit, TwoToOneSpeedGivesTwoToOneLayers) {
  // Stage 0 takes 2 per layer, stage 1 takes 1: 30 layers split 10 / 20.
  const LayerSplit s = SplitLayers(30, 2, [](int j, int n) { return (j == 0 ? 2.0 : 1.0) * n; });
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.layers, (std::vector<int>{10, 20}));
  EXPECT_DOUBLE_EQ(s.bottleneck, 20.0);
}

TEST(LayerSplit, EqualStagesAreUniform) {
  const LayerSplit s = SplitLayers(32, 4, [](int, int n) { return 1.5 * n; });
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.layers, (std::vector<int>{8, 8, 8, 8}));
}

TEST(LayerSplit, SlackGoesToCheaperStagesThenLaterStages) {
  // Per-layer costs 3, 1, 2 and 10 layers: the bottleneck is 6 (at most 2, 6 and 3 layers).
  // Of the splits within it, (1, 6, 3) has the smallest total (3 + 6 + 6): the slack is taken
  // off the most expensive stage.
  const LayerSplit s = SplitLayers(10, 3, [](int j, int n) {
    const double per[] = {3.0, 1.0, 2.0};
    return per[j] * n;
  });
  ASSERT_TRUE(s.feasible);
  EXPECT_DOUBLE_EQ(s.bottleneck, 6.0);
  EXPECT_DOUBLE_EQ(s.total, 15.0);
  EXPECT_EQ(s.layers, (std::vector<int>{1, 6, 3}));
  // Equal stages with slack: layers pushed to later stages (fewer micro-batches in flight).
  const LayerSplit t = SplitLayers(5, 3, [](int, int n) { return n <= 2 ? 1.0 : 5.0; });
  EXPECT_EQ(t.layers, (std::vector<int>{1, 2, 2}));
}

TEST(LayerSplit, InfeasibleWhenNothingFits) {
  EXPECT_FALSE(SplitLayers(10, 2, [](int, int n) { return n > 4 ? kInf : 1.0 * n; }).feasible);
  EXPECT_FALSE(SplitLayers(2, 3, [](int, int n) { return 1.0 * n; }).feasible);
  EXPECT_TRUE(SplitLayers(8, 2, [](int, int n) { return n > 4 ? kInf : 1.0 * n; }).feasible);
}

}  // namespace
}  // namespace mixccl::train
