#include "mixccl/train/batch_split.h"

#include <queue>
#include <utility>

namespace mixccl::train {

std::vector<std::vector<ReplicaClass>> SplitMicroBatch(int slot_sequences,
                                                       const std::vector<int>& replicas,
                                                       const MicroBatchTimeFn& time_per_mb) {
  const int groups = static_cast<int>(replicas.size());
  long total_replicas = 0;
  for (int r : replicas) {
    if (r <= 0) return {};
    total_replicas += r;
  }
  if (groups == 0 || slot_sequences < total_replicas) return {};

  std::vector<int> mb(groups, 1);
  std::vector<int> extra(groups, 0);  // replicas of the group that take mb + 1
  long remaining = slot_sequences - total_replicas;
  // Min-heap on the time a group's replicas would need with one more sequence; ties go to the
  // lower group index so the result is deterministic.
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (int g = 0; g < groups; ++g) heap.push({time_per_mb(g, 2), g});
  while (remaining > 0) {
    const int g = heap.top().second;
    heap.pop();
    // All replicas of a group are identical, so the one-sequence-at-a-time rule hands the
    // next replicas[g] sequences to this group one by one: do it in a single step.
    if (remaining >= replicas[g]) {
      ++mb[g];
      remaining -= replicas[g];
      heap.push({time_per_mb(g, mb[g] + 1), g});
    } else {
      extra[g] = static_cast<int>(remaining);
      remaining = 0;
    }
  }
  std::vector<std::vector<ReplicaClass>> out(groups);
  for (int g = 0; g < groups; ++g) {
    if (extra[g] > 0) out[g].push_back({extra[g], mb[g] + 1});
    if (replicas[g] - extra[g] > 0) out[g].push_back({replicas[g] - extra[g], mb[g]});
  }
  return out;
}

}  // namespace mixccl::train
