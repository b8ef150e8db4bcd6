// Rendering plans for people (a table) and for programs (JSON).
#pragma once

#include <string>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/model_spec.h"
#include "mixccl/train/planner.h"

namespace mixccl::train {

std::string PlansToJson(const ModelSpec& model, const ClusterSpec& cluster,
                        const PlanResult& result);
std::string PlansToTable(const ModelSpec& model, const ClusterSpec& cluster,
                         const PlanResult& result);

}  // namespace mixccl::train
