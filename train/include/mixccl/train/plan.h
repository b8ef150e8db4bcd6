// What the planner produces: the structure of a parallel layout and its predicted cost.
#pragma once

#include <string>
#include <vector>

namespace mixccl::train {

// One pipeline, replicated `dp` times. Its stages run on the device types listed in `types`,
// in that order: `stages[i]` consecutive stages of type `types[i]`, each stage on `tp[i]`
// devices of one domain. A device type appears in at most one group.
struct GroupTemplate {
  std::vector<int> types;
  std::vector<int> tp;
  std::vector<int> stages;
  int dp = 1;

  int num_stages() const;
  int num_devices() const;
  // Device type and tensor-parallel size of stage `j`, and its index within its type's block.
  int stage_type(int j) const;
  int stage_tp(int j) const;
  int stage_local_index(int j) const;
  int block_of_stage(int j) const;
  bool operator==(const GroupTemplate& o) const {
    return types == o.types && tp == o.tp && stages == o.stages && dp == o.dp;
  }
};

// Several groups train the same model together: each replica of each group takes its share of
// every micro-batch slot and all replicas AllReduce their gradients at the end of the step.
struct Structure {
  std::vector<GroupTemplate> groups;
  int replicas() const;
  int num_devices() const;
  bool operator==(const Structure& o) const { return groups == o.groups; }
};

struct StagePlan {
  int group = 0;
  int stage = 0;  // position in the group's pipeline
  int device_type = 0;
  std::string device_name;
  int num_devices = 0;  // tp * dp
  int first_layer = 0;
  int last_layer = 0;  // exclusive
  int tp = 1;
  int dp = 1;  // replicas of this stage with this micro-batch size
  int micro_batch = 1;
  int recompute = 0;  // layers of the stage that recompute their forward pass
  bool embedding = false;
  bool head = false;
  double memory_gib = 0.0;   // predicted peak per device, reserve included
  double forward_s = 0.0;    // per micro-batch, sends included
  double backward_s = 0.0;   // per micro-batch, recomputation and sends included
  double compute_s = 0.0;    // forward + backward + recompute per step, communication excluded
  double allreduce_s = 0.0;  // data-parallel gradient AllReduce at the end of the step
  double update_s = 0.0;     // zeroing the gradients, their norm and the optimizer, per step
  double busy_s = 0.0;       // per step: computing and sending (the 1F1B simulation's busy time)
  // Per step: waiting for other ranks, the rest of the step: the 1F1B bubble, a slower
  // replica or stage, a longer AllReduce or update elsewhere (plan_evaluator.h).
  double wait_s = 0.0;
};

struct Prediction {
  double step_time_s = 0.0;
  double tokens_per_s = 0.0;
  double balance = 0.0;          // busiest / least busy stage compute time per step
  double pipeline_s = 0.0;       // 1F1B makespan of the slowest replica
  double allreduce_s = 0.0;      // largest data-parallel AllReduce
  double update_s = 0.0;         // largest per-step update (zeroing, norm, optimizer)
  double bubble_fraction = 0.0;  // idle share of the bottleneck-free makespan
};

struct Plan {
  Structure structure;
  int micro_batches = 0;  // per step, the same for every replica
  Prediction predicted;
  std::vector<StagePlan> stages;
};

}  // namespace mixccl::train
