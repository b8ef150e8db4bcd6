// What every rank of a plan does, as JSON, for programs that execute plans themselves
// (mixccl.train in Python): the rank map, each rank's role and its 1F1B order. Executors
// compare their own numbering with this one, so a change on either side fails a test
// instead of running a different plan than the planner priced.
#pragma once

#include <string>

#include "mixccl/train/exec_plan.h"

namespace mixccl::train {

// {"num_ranks", "micro_batches", "gradient_cuts", "ranks": [{"rank", "group", "replica"
// (within the group), "replica_number" (over all groups), "stage", "num_stages", "tp_index",
// "layers", "micro_batch", "slot_offset", "recompute", "order": ["F0", "B0", ...]}]}.
std::string PlanLayoutJson(const ExecPlan& plan, int num_layers);

}  // namespace mixccl::train
