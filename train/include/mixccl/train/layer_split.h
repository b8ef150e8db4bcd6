// Splitting the transformer layers into contiguous ranges, one per pipeline stage.
#pragma once

#include <functional>
#include <vector>

namespace mixccl::train {

// Cost of giving stage `stage` a range of `num_layers` layers: its time per micro-batch, or
// +infinity when the stage would not fit in memory. All transformer layers are identical, so a
// range's cost depends only on its length (the embedding and the head are part of the first
// and last stage's cost). It must be non-decreasing in `num_layers`.
using StageCostFn = std::function<double(int stage, int num_layers)>;

struct LayerSplit {
  bool feasible = false;
  double bottleneck = 0.0;  // max over stages of the cost
  double total = 0.0;       // sum over stages of the cost
  std::vector<int> layers;  // per stage, each >= 1, summing to the layer count
};

// Dynamic programming over contiguous layer ranges. Objective, in order: smallest bottleneck
// (it sets the 1F1B steady state), then smallest total (it sets warm-up and cool-down), then
// the lexicographically smallest layer-count vector, i.e. layers pushed towards later stages,
// which keep fewer micro-batches in flight. Phase 1 is best[j][b] = min over a of
// max(best[j-1][a], cost(j, b-a)); because best[j-1][.] is non-decreasing and the cost is
// non-increasing in a, the minimum sits where the two cross and is found by binary search, so
// the phase costs O(P*N*log N) instead of O(P*N^2). Phase 2 minimises the total over ranges
// whose cost stays within the bottleneck, O(P*N*w) with w the longest such range.
LayerSplit SplitLayers(int num_layers, int num_stages, const StageCostFn& cost);

// The same objective by enumerating all C(N-1, P-1) splits; for tests and --exhaustive.
LayerSplit SplitLayersExhaustive(int num_layers, int num_stages, const StageCostFn& cost);

}  // namespace mixccl::train
