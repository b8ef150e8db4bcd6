// The one numbering of ranks in a plan, shared by the planner's output (the "ranks" of each
// stage in mixccl-plan's JSON) and the trainer (which rank runs which stage of which replica).
//
// Ranks are numbered device-type block by block: the groups in plan order, within a group
// its blocks (the consecutive stages on one device type) in pipeline order. Inside a block
// with `stages` stages of `tp` devices and `dp` replicas, the layout of placement.h applies:
// tensor-parallel index innermost, then the block's stages, then the replicas,
//   rank = block_start + (replica * stages + local_stage) * tp + tp_index.
// A device type appears in at most one group, so each device type's ranks are contiguous:
// a launcher that gives ranks their adaptor in blocks (mixcclrun --adaptors host:4,gloo:2)
// gives every stage the device type the plan chose.
#pragma once

#include "mixccl/train/plan.h"

namespace mixccl::train {

struct RankPlacement {
  int group = 0;
  int replica = 0;  // within the group, 0 .. dp-1
  int stage = 0;    // position in the group's pipeline
  int tp_index = 0;
  bool operator==(const RankPlacement& o) const {
    return group == o.group && replica == o.replica && stage == o.stage && tp_index == o.tp_index;
  }
};

// The rank of a placement; throws std::out_of_range for one outside the structure.
int RankOf(const Structure& s, const RankPlacement& p);

// The inverse: where rank `rank` (0 .. num_devices-1) sits. Throws std::out_of_range.
RankPlacement PlaceRank(const Structure& s, int rank);

}  // namespace mixccl::train
