// A plan as the trainer executes it: mixccl-plan's JSON, or a hand-written file in the same
// format (docs/training.md lists the fields the trainer reads), checked against the model and
// the job, and each rank's part in it.
#pragma once

#include <string>
#include <vector>

#include "mixccl/train/batch_split.h"
#include "mixccl/train/plan.h"
#include "mixccl/train/rank_map.h"
#include "mixccl/train/trainer.h"

namespace mixccl::train {

struct ExecStage {
  std::string device_type;
  int first_layer = 0;
  int last_layer = 0;
  int tp = 1;
  int recompute = 0;
};

struct ExecPlan {
  std::string origin;                              // the file, for messages
  int global_batch = 0;                            // 0: the plan does not say
  int seq_length = 0;                              // 0: the plan does not say
  int micro_batches = 0;                           // per step, the same for every replica
  std::vector<std::vector<ExecStage>> stages;      // per group, its pipeline
  std::vector<std::vector<ReplicaClass>> classes;  // per group, its replicas' micro-batches
  Structure structure;                             // for the rank map

  int num_ranks() const { return structure.num_devices(); }
};

// Throws std::invalid_argument "<origin>: <what is wrong>".
ExecPlan ParseExecPlan(const std::string& json_text, const std::string& origin);
ExecPlan LoadExecPlan(const std::string& path);

// Refuses a plan that does not fit the model, the batch or the job: every group's pipeline
// must cover the model's layers, the replicas' micro-batches must add up to the global batch,
// the plan's rank count must be the job's. Throws std::invalid_argument with the reason.
void CheckExecPlan(const ExecPlan& plan, const TrainOptions& options, int num_ranks);

// Rank `rank`'s role: replica (numbered over all groups), stage, layers, micro-batch and its
// offset within each micro-batch slot (the sequences of the replicas numbered before it).
RankRole RoleOfRank(const ExecPlan& plan, int rank);

// Every replica's micro-batch, by replica number (the numbering of RoleOfRank).
std::vector<int> ReplicaMicroBatches(const ExecPlan& plan);

// The layers where some group's pipeline has a stage boundary, 0 and L included. Between two
// consecutive cuts every replica holds the layers on exactly one rank, so gradients are summed
// interval by interval, whatever the groups' different layer splits.
std::vector<int> GradientCuts(const ExecPlan& plan, int num_layers);

// The part of a stage's flat gradient array that holds cut interval `interval` ([cuts[k],
// cuts[k+1]), the embedding with the first interval and the head with the last).
struct GradientSegment {
  int interval = 0;
  std::size_t offset = 0;
  std::size_t count = 0;
};
std::vector<GradientSegment> SegmentsOfStage(const std::vector<int>& cuts, const GptStage& stage);

}  // namespace mixccl::train
