#include "mixccl/train/plan_layout.h"

#include <nlohmann/json.hpp>

#include "mixccl/train/schedule_1f1b.h"

namespace mixccl::train {

std::string PlanLayoutJson(const ExecPlan& plan, int num_layers) {
  nlohmann::json ranks = nlohmann::json::array();
  for (int rank = 0; rank < plan.num_ranks(); ++rank) {
    const RankPlacement at = PlaceRank(plan.structure, rank);
    const RankRole role = RoleOfRank(plan, rank);
    nlohmann::json order = nlohmann::json::array();
    for (const PipelineOp& op : OneFOneBOrder(role.stage, role.num_stages, plan.micro_batches)) {
      order.push_back((op.forward ? "F" : "B") + std::to_string(op.micro_batch));
    }
    ranks.push_back({{"rank", rank},
                     {"group", at.group},
                     {"replica", at.replica},
                     {"replica_number", role.replica},
                     {"stage", role.stage},
                     {"num_stages", role.num_stages},
                     {"tp_index", at.tp_index},
                     {"layers", {role.range.first_layer, role.range.last_layer}},
                     {"micro_batch", role.micro_batch},
                     {"slot_offset", role.slot_offset},
                     {"recompute", role.range.recompute},
                     {"order", order}});
  }
  nlohmann::json out = {{"num_ranks", plan.num_ranks()},
                        {"micro_batches", plan.micro_batches},
                        {"gradient_cuts", GradientCuts(plan, num_layers)},
                        {"ranks", ranks}};
  return out.dump(1) + "\n";
}

}  // namespace mixccl::train
