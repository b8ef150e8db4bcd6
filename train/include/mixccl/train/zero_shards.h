// ZeRO-1's uneven shards. With ZeRO-1 each replica keeps AdamW moments for, and updates, one
// shard of every gradient interval (the layers all replicas hold, see exec_plan.h); the
// gradient reaches each shard's owner by a reduce and the updated shard the other replicas by a
// broadcast, the same volume as the AllReduce they replace. Shards are uneven: a replica's
// share is proportional to its micro-batch, the plan's measure of its device's speed, so a
// faster device also takes the larger part of the optimizer step and of its state.
#pragma once

#include <vector>

#include "mixccl/train/adamw.h"

namespace mixccl::train {

// One range per replica, replica r's of size proportional to weights[r] (boundaries at
// floor(count * cumulative weight / total weight), so the ranges tile `whole` exactly).
// Throws std::invalid_argument when a weight is negative or all are zero.
std::vector<ParamRange> SplitByWeights(const ParamRange& whole, const std::vector<int>& weights);

}  // namespace mixccl::train
