#include "mixccl/train/survivors_plan.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/layer_profiler.h"
#include "mixccl/train/model_spec.h"
#include "mixccl/train/plan_output.h"
#include "mixccl/train/planner.h"

namespace mixccl::train {

namespace {

// The best plan and up to this many alternatives are searched for one that fits the survivors'
// order (as mixccl.train asks mixccl-plan for 50).
constexpr int kPlansConsidered = 50;

std::string Joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

}  // namespace

std::string SurvivorsClusterJson(const std::string& cluster_json, const std::string& origin,
                                 const std::vector<std::string>& device_types) {
  nlohmann::ordered_json spec;
  try {
    spec = nlohmann::ordered_json::parse(cluster_json);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(origin + ": " + e.what());
  }
  if (!spec.contains("device_types") || !spec["device_types"].is_array()) {
    throw std::invalid_argument(origin + ": has no \"device_types\" list");
  }
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  for (nlohmann::ordered_json t : spec["device_types"]) {
    const auto n = std::count(device_types.begin(), device_types.end(),
                              t.value("name", std::string()));
    if (n == 0) continue;
    t["count"] = n;
    kept.push_back(t);
  }
  spec["device_types"] = kept;
  spec["name"] = spec.value("name", std::string("cluster")) + " survivors";
  return spec.dump(1) + "\n";
}

SurvivorsPlan PlanForSurvivors(const GptConfig& model, int global_batch,
                               const std::string& cluster_json, const std::string& cluster_origin,
                               const std::vector<std::string>& device_types) {
  SurvivorsPlan out;
  out.cluster_json = SurvivorsClusterJson(cluster_json, cluster_origin, device_types);
  const ModelSpec spec =
      ParseModelSpec(PlannerModelSpecJson(model, global_batch), "the trainer's model");
  const ClusterSpec cluster = ParseClusterSpec(out.cluster_json, "the survivors' cluster spec");
  PlannerOptions options;
  options.top = kPlansConsidered;
  const PlanResult result = PlanTraining(spec, cluster, nullptr, options);
  if (result.plans.empty()) {
    throw std::runtime_error("the planner found no plan for the survivors' devices " +
                             Joined(device_types) + ": " + result.error);
  }
  const nlohmann::ordered_json all =
      nlohmann::ordered_json::parse(PlansToJson(spec, cluster, result));
  std::vector<nlohmann::ordered_json> candidates{all};
  candidates.front().erase("alternatives");
  for (const auto& alt : all["alternatives"]) candidates.push_back(alt);
  std::vector<int> sizes;
  for (nlohmann::ordered_json& c : candidates) {
    c["global_batch_size"] = all["global_batch_size"];
    c["seq_length"] = all["seq_length"];
    const std::string text = c.dump(1) + "\n";
    ExecPlan plan = ParseExecPlan(text, "the survivors' plan");
    sizes.push_back(plan.num_ranks());
    if (plan.num_ranks() != static_cast<int>(device_types.size())) continue;
    bool same_order = true;
    for (int r = 0; r < plan.num_ranks() && same_order; ++r) {
      same_order = RoleOfRank(plan, r).device_type == device_types[r];
    }
    if (!same_order) continue;
    out.plan_json = text;
    out.plan = std::move(plan);
    return out;
  }
  std::string found;
  for (int n : sizes) found += (found.empty() ? "" : ",") + std::to_string(n);
  throw std::runtime_error("the planner found no plan for the survivors' devices " +
                           Joined(device_types) + " in this order using all " +
                           std::to_string(device_types.size()) + " (its " +
                           std::to_string(sizes.size()) + " plans use " + found + " ranks)");
}

}  // namespace mixccl::train
