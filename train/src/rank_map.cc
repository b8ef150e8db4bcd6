#include "mixccl/train/rank_map.h"

#include <stdexcept>
#include <string>

namespace mixccl::train {

namespace {

// Ranks of all blocks before block `b` of group `g`.
int BlockStart(const Structure& s, int g, int b) {
  int start = 0;
  for (int i = 0; i < g; ++i) start += s.groups[i].num_devices();
  const GroupTemplate& t = s.groups[g];
  for (int i = 0; i < b; ++i) start += t.stages[i] * t.tp[i] * t.dp;
  return start;
}

}  // namespace

int RankOf(const Structure& s, const RankPlacement& p) {
  if (p.group < 0 || p.group >= static_cast<int>(s.groups.size())) {
    throw std::out_of_range("no group " + std::to_string(p.group) + " in the plan");
  }
  const GroupTemplate& t = s.groups[p.group];
  if (p.stage < 0 || p.stage >= t.num_stages() || p.replica < 0 || p.replica >= t.dp) {
    throw std::out_of_range("no stage " + std::to_string(p.stage) + " of replica " +
                            std::to_string(p.replica) + " in group " + std::to_string(p.group));
  }
  const int b = t.block_of_stage(p.stage);
  if (p.tp_index < 0 || p.tp_index >= t.tp[b]) {
    throw std::out_of_range("tensor-parallel index " + std::to_string(p.tp_index) +
                            " is not below " + std::to_string(t.tp[b]));
  }
  return BlockStart(s, p.group, b) +
         (p.replica * t.stages[b] + t.stage_local_index(p.stage)) * t.tp[b] + p.tp_index;
}

RankPlacement PlaceRank(const Structure& s, int rank) {
  if (rank >= 0) {
    int start = 0;
    for (size_t g = 0; g < s.groups.size(); ++g) {
      const GroupTemplate& t = s.groups[g];
      int first_stage = 0;
      for (size_t b = 0; b < t.types.size(); ++b) {
        const int size = t.stages[b] * t.tp[b] * t.dp;
        if (rank < start + size) {
          const int local = rank - start;
          RankPlacement p;
          p.group = static_cast<int>(g);
          p.tp_index = local % t.tp[b];
          p.stage = first_stage + (local / t.tp[b]) % t.stages[b];
          p.replica = local / (t.tp[b] * t.stages[b]);
          return p;
        }
        start += size;
        first_stage += t.stages[b];
      }
    }
  }
  throw std::out_of_range("rank " + std::to_string(rank) + " is not among the plan's " +
                          std::to_string(s.num_devices()) + " devices");
}

}  // namespace mixccl::train
