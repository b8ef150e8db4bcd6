// The strategy search: which device types form which pipelines, tensor/pipeline/data
// parallel sizes, micro-batches, layer split and recomputation.
#pragma once

#include <string>
#include <vector>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/model_spec.h"
#include "mixccl/train/plan.h"
#include "mixccl/train/profile.h"

namespace mixccl::train {

struct PlannerOptions {
  int top = 3;  // plans reported: the best and top-1 alternatives with distinct structures
  // Evaluate every structure and micro-batch count in full with brute-force layer splits
  // instead of ranking by estimate and splitting by dynamic programming. Exponential; for
  // verification on small inputs.
  bool exhaustive = false;
  // Restrict to one pipeline without data parallelism that uses every device type.
  bool pipeline_only = false;
  // Structures evaluated in full, taken in order of their estimate, among the single-group
  // and, separately, the multi-group candidates (counting only those that fit in memory).
  int refine_limit = 48;
  // For multi-group structures, candidates kept per group of device types, best estimate
  // first, before forming combinations...
  int block_candidates = 10;
  // ...and fewer when a partition into many groups would exceed this many combinations.
  int partition_combinations = 1000;
};

struct SearchStats {
  long templates = 0;         // single-group candidates enumerated
  long combinations = 0;      // multi-group candidates enumerated
  long estimates = 0;         // (structure, m) closed-form estimates
  long full_evaluations = 0;  // (structure, m) full evaluations
};

struct PlanResult {
  std::vector<Plan> plans;  // best first; empty when nothing fits
  std::string error;        // why there is no plan
  SearchStats stats;
};

// Throws SpecError when the inputs are inconsistent (e.g. a profile for another sequence
// length or device type); an infeasible problem is reported through PlanResult::error.
PlanResult PlanTraining(const ModelSpec& model, const ClusterSpec& cluster,
                        const LayerProfile* profile, const PlannerOptions& options);

}  // namespace mixccl::train
