// The plan for the devices left after ranks were lost: the planner (the code mixccl-plan runs)
// on the cluster spec with each device type's count cut to its survivors, for the same model
// and global batch, so micro-batches and layers are re-balanced over what is left. The
// survivors keep their order (the shrink renumbers them in it) and their adaptors, so the plan
// taken is the best of the planner's plans whose ranks have the survivors' device types in that
// order and that uses every survivor.
#pragma once

#include <string>
#include <vector>

#include "mixccl/train/exec_plan.h"
#include "mixccl/train/gpt_model.h"

namespace mixccl::train {

// The cluster spec (JSON text) with each type's count = how many of `device_types` are of it;
// types with none left are dropped. Throws std::invalid_argument naming `origin`.
std::string SurvivorsClusterJson(const std::string& cluster_json, const std::string& origin,
                                 const std::vector<std::string>& device_types);

struct SurvivorsPlan {
  std::string cluster_json;  // the survivors' cluster spec
  std::string plan_json;     // the plan taken, in the trainer's --plan format
  ExecPlan plan;
};

// Throws std::runtime_error saying why no plan fits (the planner's reason, or that none of its
// plans has the survivors' device types in their order).
SurvivorsPlan PlanForSurvivors(const GptConfig& model, int global_batch,
                               const std::string& cluster_json, const std::string& cluster_origin,
                               const std::vector<std::string>& device_types);

}  // namespace mixccl::train
