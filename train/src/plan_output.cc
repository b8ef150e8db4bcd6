#include "mixccl/train/plan_output.h"

#include "mixccl/train/rank_map.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace mixccl::train {

namespace {

nlohmann::ordered_json PredictionJson(const Prediction& p) {
  return {{"step_time_s", p.step_time_s}, {"tokens_per_s", p.tokens_per_s},
          {"balance", p.balance},         {"pipeline_s", p.pipeline_s},
          {"allreduce_s", p.allreduce_s}, {"update_s", p.update_s},
          {"bubble_fraction", p.bubble_fraction}};
}

nlohmann::ordered_json PlanJson(const Plan& plan) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  // Entries come group by group, stage by stage, one per replica class (larger micro-batch
  // first); the class's replicas follow those of the classes before it.
  std::map<std::pair<int, int>, int> replicas_before;
  for (const StagePlan& s : plan.stages) {
    int& first_replica = replicas_before[{s.group, s.stage}];
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (int r = first_replica; r < first_replica + s.dp; ++r) {
      for (int t = 0; t < s.tp; ++t) {
        ranks.push_back(RankOf(plan.structure, {s.group, r, s.stage, t}));
      }
    }
    first_replica += s.dp;
    stages.push_back({{"group", s.group},
                      {"stage", s.stage},
                      {"device_type", s.device_name},
                      {"num_devices", s.num_devices},
                      {"layers", {s.first_layer, s.last_layer}},
                      {"tp", s.tp},
                      {"dp", s.dp},
                      {"micro_batch", s.micro_batch},
                      {"recompute", s.recompute},
                      {"embedding", s.embedding},
                      {"head", s.head},
                      {"ranks", ranks},
                      {"memory_gib", s.memory_gib},
                      {"forward_ms", s.forward_s * 1e3},
                      {"backward_ms", s.backward_s * 1e3},
                      {"allreduce_ms", s.allreduce_s * 1e3},
                      {"update_ms", s.update_s * 1e3},
                      {"wait_ms", s.wait_s * 1e3}});
  }
  return {{"predicted", PredictionJson(plan.predicted)},
          {"micro_batches", plan.micro_batches},
          {"num_devices", plan.structure.num_devices()},
          {"stages", stages}};
}

// e.g. "[V100 tp8 x3 | A100 tp4 x2] x16": the pipeline of a group and its replicas.
std::string GroupSummary(const ClusterSpec& cluster, const GroupTemplate& g) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < g.types.size(); ++i) {
    if (i > 0) out << " | ";
    out << cluster.device_types[g.types[i]].name << " tp" << g.tp[i] << " x" << g.stages[i];
  }
  out << "] x" << g.dp;
  return out.str();
}

std::string StructureSummary(const ClusterSpec& cluster, const Structure& s) {
  std::string out;
  for (size_t i = 0; i < s.groups.size(); ++i) {
    if (i > 0) out += " + ";
    out += GroupSummary(cluster, s.groups[i]);
  }
  return out;
}

std::string Format(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

}  // namespace

std::string PlansToJson(const ModelSpec& model, const ClusterSpec& cluster,
                        const PlanResult& result) {
  nlohmann::ordered_json out;
  out["model"] = model.name;
  out["cluster"] = cluster.name;
  out["global_batch_size"] = model.global_batch_size;
  out["seq_length"] = model.seq_length;
  out["search"] = {{"templates", result.stats.templates},
                   {"combinations", result.stats.combinations},
                   {"estimates", result.stats.estimates},
                   {"full_evaluations", result.stats.full_evaluations}};
  if (result.plans.empty()) {
    out["error"] = result.error;
    return out.dump(2) + "\n";
  }
  const nlohmann::ordered_json best = PlanJson(result.plans.front());
  for (auto it = best.begin(); it != best.end(); ++it) out[it.key()] = it.value();
  out["layout"] = StructureSummary(cluster, result.plans.front().structure);
  nlohmann::ordered_json alternatives = nlohmann::ordered_json::array();
  for (size_t i = 1; i < result.plans.size(); ++i) {
    nlohmann::ordered_json alt = PlanJson(result.plans[i]);
    alt["layout"] = StructureSummary(cluster, result.plans[i].structure);
    alternatives.push_back(alt);
  }
  out["alternatives"] = alternatives;
  return out.dump(2) + "\n";
}

std::string PlansToTable(const ModelSpec& model, const ClusterSpec& cluster,
                         const PlanResult& result) {
  std::ostringstream out;
  if (result.plans.empty()) {
    out << result.error << "\n";
    return out.str();
  }
  const Plan& best = result.plans.front();
  const Prediction& p = best.predicted;
  out << model.name << " on " << cluster.name << ": " << best.structure.num_devices() << " of "
      << cluster.total_devices() << " devices, global batch " << model.global_batch_size << " x "
      << model.seq_length << " tokens in " << best.micro_batches << " micro-batches\n";
  out << "layout " << StructureSummary(cluster, best.structure) << "\n";
  out << "step " << Format("%.3f", p.step_time_s) << " s, " << Format("%.0f", p.tokens_per_s)
      << " tokens/s, balance " << Format("%.3f", p.balance) << ", pipeline "
      << Format("%.3f", p.pipeline_s) << " s, bubble " << Format("%.1f", 100.0 * p.bubble_fraction)
      << "%, gradient allreduce " << Format("%.3f", p.allreduce_s) << " s\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%5s %5s %-12s %7s %11s %3s %4s %4s %6s %8s %9s %9s %10s\n",
                "group", "stage", "device", "devices", "layers", "tp", "dp", "mb", "recomp",
                "mem GiB", "fwd ms", "bwd ms", "allred ms");
  out << line;
  for (const StagePlan& s : best.stages) {
    char layers[32];
    std::snprintf(layers, sizeof layers, "[%d,%d)", s.first_layer, s.last_layer);
    std::snprintf(
        line, sizeof line, "%5d %5d %-12s %7d %11s %3d %4d %4d %6d %8.1f %9.2f %9.2f %10.2f%s\n",
        s.group, s.stage, s.device_name.c_str(), s.num_devices, layers, s.tp, s.dp, s.micro_batch,
        s.recompute, s.memory_gib, s.forward_s * 1e3, s.backward_s * 1e3, s.allreduce_s * 1e3,
        s.embedding && s.head ? "  emb+head"
        : s.embedding         ? "  emb"
        : s.head              ? "  head"
                              : "");
    out << line;
  }
  if (result.plans.size() > 1) {
    out << "\nalternatives:\n";
    for (size_t i = 1; i < result.plans.size(); ++i) {
      const Plan& a = result.plans[i];
      out << "  #" << i + 1 << " step " << Format("%.3f", a.predicted.step_time_s) << " s ("
          << Format("%+.1f", 100.0 * (a.predicted.step_time_s / p.step_time_s - 1.0)) << "%), "
          << a.micro_batches << " micro-batches, " << StructureSummary(cluster, a.structure)
          << "\n";
    }
  }
  return out.str();
}

}  // namespace mixccl::train
