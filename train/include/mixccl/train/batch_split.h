// Dividing each micro-batch slot among data-parallel replicas of unequal speed.
#pragma once

#include <functional>
#include <vector>

namespace mixccl::train {

struct ReplicaClass {
  int replicas = 0;     // how many replicas of the group take this micro-batch size
  int micro_batch = 0;  // sequences per micro-batch
};

// Time per micro-batch of one replica of group `group` at `micro_batch` sequences; must be
// non-decreasing in the micro-batch.
using MicroBatchTimeFn = std::function<double(int group, int micro_batch)>;

// Splits `slot_sequences` (= global batch / number of micro-batches) over the replicas of all
// groups (`replicas[g]` each) so that the slowest replica is as fast as possible: every replica
// starts with one sequence, then the next sequence always goes to the replica that would finish
// earliest with it. Fast replicas thus get micro-batches in proportion to their speed, and the
// total is exactly `slot_sequences`. Replicas of a group differ by at most one sequence.
// Returns per group its replica classes (larger micro-batch first), or an empty vector when
// there are fewer sequences than replicas.
std::vector<std::vector<ReplicaClass>> SplitMicroBatch(int slot_sequences,
                                                       const std::vector<int>& replicas,
                                                       const MicroBatchTimeFn& time_per_mb);

}  // namespace mixccl::train
