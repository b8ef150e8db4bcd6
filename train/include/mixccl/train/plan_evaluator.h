// Turns a structure and a micro-batch count into a fully costed plan: micro-batch sizes,
// layer split, recomputation, memory, 1F1B simulation and gradient AllReduce.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "mixccl/train/batch_split.h"
#include "mixccl/train/cost_model.h"
#include "mixccl/train/memory_model.h"
#include "mixccl/train/plan.h"

namespace mixccl::train {

enum class SplitMethod { kDynamicProgramming, kExhaustive };

// The nearest miss among infeasible candidates: what does not fit and by how much.
struct MemoryShortfall {
  double short_bytes = std::numeric_limits<double>::infinity();
  std::string what;
  void Offer(double bytes, const std::string& description);
};

class PlanEvaluator {
 public:
  PlanEvaluator(const CostModel& cost, const MemoryModel& memory);

  // Micro-batch counts m that divide the global batch and leave every replica at least one
  // sequence per micro-batch.
  std::vector<int> MicroBatchCounts(const Structure& s) const;

  // Full evaluation; nullopt when some stage does not fit even with full recomputation (then
  // `shortfall`, if given, is offered the smallest overflow of this candidate).
  std::optional<Plan> Evaluate(const Structure& s, int micro_batches, SplitMethod method,
                               MemoryShortfall* shortfall) const;

  // Quick estimate of the step time used to rank candidates before the full evaluation:
  // greedy integral split without the memory-aware DP, closed-form 1F1B time
  // (sum of stage times + (m-1) * bottleneck), the gradient AllReduce and the update. `fits`
  // tells whether that split fits in memory (with greedy recomputation).
  //
  // Both price a step as the trainer synchronises it: every rank waits for the slowest
  // pipeline of the job (the gradient AllReduce's interval sums wait for the slowest replica
  // holding the interval, and the loss and the gradient norm are summed over the job after
  // them), then the longest AllReduce, then the longest update (zeroing, norm, optimizer:
  // CostModel::Update). Price gives each plan entry the wait this implies (StagePlan::wait_s).
  double Estimate(const Structure& s, int micro_batches, bool* fits) const;

  // The prediction of a plan whose choices are made: per group its replica classes (larger
  // micro-batch first), layers per stage and recomputed layers per stage. Evaluate makes the
  // choices and calls it; it also prices a hand-written plan (train/bench/plan_predict.cc).
  Plan Price(const Structure& s, int micro_batches,
             const std::vector<std::vector<ReplicaClass>>& classes,
             const std::vector<std::vector<int>>& layers,
             const std::vector<std::vector<int>>& recompute) const;

  // Time per micro-batch of one replica of `g` at micro-batch `mb` with a fractional (ideal)
  // layer split: the speed measure used to size micro-batches.
  double IdealMicroBatchTime(const GroupTemplate& g, int mb) const;

 private:
  struct StageShape;
  std::vector<StageShape> Shapes(const Structure& s, int group, int mb, int m) const;

  const CostModel& cost_;
  const MemoryModel& memory_;
};

}  // namespace mixccl::train
