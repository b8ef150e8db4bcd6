// The planner's prediction for a given plan: mixccl-plan chooses and predicts its own plans;
// this prices any plan in the same JSON format (a hand-written uniform plan, say) with the
// same cost model, profile and 1F1B simulation (PlanEvaluator::Price), so that measured step
// times can be compared with predictions for plans the planner did not choose.
//
//   mixccl-plan-predict --model MODEL.json --cluster CLUSTER.json [--profile PROFILE.json]
//                       --plan PLAN.json
// prints {"step_time_s": ..., "tokens_per_s": ..., "pipeline_s": ..., "allreduce_s": ...,
// "update_s": ..., "stages": [{group, stage, micro_batch, busy_s, allreduce_s, update_s,
// wait_s} per plan entry]}.
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "mixccl/train/exec_plan.h"
#include "mixccl/train/plan_evaluator.h"

using namespace mixccl::train;

int main(int argc, char** argv) {
  std::string model_path, cluster_path, profile_path, plan_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--model")
      model_path = argv[i + 1];
    else if (a == "--cluster")
      cluster_path = argv[i + 1];
    else if (a == "--profile")
      profile_path = argv[i + 1];
    else if (a == "--plan")
      plan_path = argv[i + 1];
  }
  if (model_path.empty() || cluster_path.empty() || plan_path.empty()) {
    std::fprintf(stderr,
                 "usage: mixccl-plan-predict --model M.json --cluster C.json [--profile P.json] "
                 "--plan PLAN.json\n");
    return 1;
  }
  try {
    ModelSpec model = LoadModelSpec(model_path);
    const ClusterSpec cluster = LoadClusterSpec(cluster_path);
    std::unique_ptr<LayerProfile> profile;
    if (!profile_path.empty()) profile = std::make_unique<LayerProfile>(LoadProfile(profile_path));
    const ExecPlan plan = LoadExecPlan(plan_path);
    model.global_batch_size = plan.global_batch;
    // The plan's structure with the cluster's type numbers (the rank map numbers the types
    // in plan order instead).
    Structure s;
    std::vector<std::vector<int>> layers, recompute;
    for (size_t g = 0; g < plan.stages.size(); ++g) {
      GroupTemplate t;
      t.dp = 0;
      for (const ReplicaClass& c : plan.classes[g]) t.dp += c.replicas;
      layers.emplace_back();
      recompute.emplace_back();
      for (const ExecStage& st : plan.stages[g]) {
        const int type = cluster.FindType(st.device_type);
        if (type < 0) throw std::invalid_argument("no device type " + st.device_type);
        if (!t.types.empty() && t.types.back() == type && t.tp.back() == st.tp) {
          ++t.stages.back();
        } else {
          t.types.push_back(type);
          t.tp.push_back(st.tp);
          t.stages.push_back(1);
        }
        layers.back().push_back(st.last_layer - st.first_layer);
        recompute.back().push_back(st.recompute);
      }
      s.groups.push_back(t);
    }
    const CostModel cost(model, cluster, profile.get());
    const MemoryModel memory(model);
    const PlanEvaluator evaluator(cost, memory);
    const Plan p = evaluator.Price(s, plan.micro_batches, plan.classes, layers, recompute);
    // Per plan entry (group, stage, replica class, in the plan's order): what each rank of it
    // is predicted to spend per step computing and sending, summing, updating and waiting.
    std::string stages;
    for (const StagePlan& st : p.stages) {
      char row[256];
      std::snprintf(row, sizeof row,
                    "%s{\"group\": %d, \"stage\": %d, \"micro_batch\": %d, \"busy_s\": %.6g, "
                    "\"allreduce_s\": %.6g, \"update_s\": %.6g, \"wait_s\": %.6g}",
                    stages.empty() ? "" : ", ", st.group, st.stage, st.micro_batch, st.busy_s,
                    st.allreduce_s, st.update_s, st.wait_s);
      stages += row;
    }
    std::printf(
        "{\"step_time_s\": %.6g, \"tokens_per_s\": %.6g, \"pipeline_s\": %.6g, "
        "\"allreduce_s\": %.6g, \"update_s\": %.6g, \"stages\": [%s]}\n",
        p.predicted.step_time_s, p.predicted.tokens_per_s, p.predicted.pipeline_s,
        p.predicted.allreduce_s, p.predicted.update_s, stages.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mixccl-plan-predict: %s\n", e.what());
    return 1;
  }
}
