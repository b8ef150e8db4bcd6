#include "mixccl/train/exec_plan.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

namespace mixccl::train {

namespace {

using nlohmann::json;

[[noreturn]] void Fail(const std::string& origin, const std::string& what) {
  throw std::invalid_argument(origin + ": " + what);
}

int IntField(const json& j, const char* name, const std::string& where, const std::string& origin,
             int lo, bool required = true, int fallback = 0) {
  if (!j.contains(name)) {
    if (required) Fail(origin, where + "has no \"" + name + "\"");
    return fallback;
  }
  if (!j[name].is_number_integer() || j[name].get<long long>() < lo) {
    Fail(origin, where + "\"" + name + "\" must be an integer >= " + std::to_string(lo));
  }
  return j[name].get<int>();
}

std::string Where(int g, int s) {
  return "group " + std::to_string(g) + " stage " + std::to_string(s) + ": ";
}

}  // namespace

ExecPlan ParseExecPlan(const std::string& json_text, const std::string& origin) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    Fail(origin, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) Fail(origin, "a plan is a JSON object");
  if (j.contains("error")) Fail(origin, "the planner found no plan: " + j["error"].dump());
  ExecPlan p;
  p.origin = origin;
  p.global_batch = IntField(j, "global_batch_size", "", origin, 1, false);
  p.seq_length = IntField(j, "seq_length", "", origin, 1, false);
  p.micro_batches = IntField(j, "micro_batches", "", origin, 1);
  if (!j.contains("stages") || !j["stages"].is_array() || j["stages"].empty()) {
    Fail(origin, "\"stages\" must be a non-empty array");
  }
  // Entries: per (group, stage), one per replica class, as mixccl-plan writes them.
  std::map<std::pair<int, int>, std::vector<const json*>> entries;
  for (const json& e : j["stages"]) {
    const int g = IntField(e, "group", "a stage entry ", origin, 0);
    const int s = IntField(e, "stage", "a stage entry ", origin, 0);
    entries[{g, s}].push_back(&e);
  }
  const int groups = entries.rbegin()->first.first + 1;
  p.stages.resize(groups);
  p.classes.resize(groups);
  for (const auto& [key, list] : entries) {
    const auto [g, s] = key;
    if (static_cast<int>(p.stages[g].size()) != s) {
      Fail(origin, Where(g, static_cast<int>(p.stages[g].size())) + "missing");
    }
    const std::string where = Where(g, s);
    const json& e = *list.front();
    ExecStage st;
    st.device_type = e.value("device_type", std::string("cpu"));
    if (!e.contains("layers") || !e["layers"].is_array() || e["layers"].size() != 2 ||
        !e["layers"][0].is_number_integer() || !e["layers"][1].is_number_integer()) {
      Fail(origin, where + "\"layers\" must be [first, last_exclusive]");
    }
    st.first_layer = e["layers"][0].get<int>();
    st.last_layer = e["layers"][1].get<int>();
    st.tp = IntField(e, "tp", where, origin, 1);
    st.recompute = IntField(e, "recompute", where, origin, 0, false, 0);
    if (st.recompute > st.last_layer - st.first_layer) {
      Fail(origin, where + "recomputes " + std::to_string(st.recompute) + " layers of " +
                       std::to_string(st.last_layer - st.first_layer));
    }
    std::vector<ReplicaClass> classes;
    for (const json* c : list) {
      classes.push_back(
          {IntField(*c, "dp", where, origin, 1), IntField(*c, "micro_batch", where, origin, 1)});
    }
    if (s == 0) {
      p.classes[g] = classes;
    } else {
      bool same = classes.size() == p.classes[g].size();
      for (size_t i = 0; same && i < classes.size(); ++i) {
        same = classes[i].replicas == p.classes[g][i].replicas &&
               classes[i].micro_batch == p.classes[g][i].micro_batch;
      }
      if (!same) Fail(origin, where + "its replicas' micro-batches differ from stage 0's");
    }
    p.stages[g].push_back(st);
  }
  // The structure the rank map numbers: consecutive stages on one device type form a block.
  std::map<std::string, int> type_ids;
  for (int g = 0; g < groups; ++g) {
    if (p.stages[g].empty()) Fail(origin, "group " + std::to_string(g) + " has no stages");
    GroupTemplate t;
    t.dp = 0;
    for (const ReplicaClass& c : p.classes[g]) t.dp += c.replicas;
    for (const ExecStage& st : p.stages[g]) {
      const int id =
          type_ids.emplace(st.device_type, static_cast<int>(type_ids.size())).first->second;
      if (!t.types.empty() && t.types.back() == id && t.tp.back() == st.tp) {
        ++t.stages.back();
      } else {
        t.types.push_back(id);
        t.tp.push_back(st.tp);
        t.stages.push_back(1);
      }
    }
    p.structure.groups.push_back(t);
  }
  // A plan that lists its ranks must list those of the shared rank map.
  std::map<std::pair<int, int>, int> replicas_before;
  for (const json& e : j["stages"]) {
    const int g = e["group"].get<int>(), s = e["stage"].get<int>();
    int& first = replicas_before[{g, s}];
    const int dp = e["dp"].get<int>(), tp = e["tp"].get<int>();
    if (e.contains("ranks")) {
      std::vector<int> expected;
      for (int r = first; r < first + dp; ++r) {
        for (int t = 0; t < tp; ++t) expected.push_back(RankOf(p.structure, {g, r, s, t}));
      }
      if (e["ranks"] != json(expected)) {
        Fail(origin, Where(g, s) + "\"ranks\" " + e["ranks"].dump() + " are not the rank map's " +
                         json(expected).dump());
      }
    }
    first += dp;
  }
  return p;
}

ExecPlan LoadExecPlan(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open the plan");
  std::stringstream s;
  s << in.rdbuf();
  return ParseExecPlan(s.str(), path);
}

void CheckExecPlan(const ExecPlan& p, const TrainOptions& o, int num_ranks) {
  const std::string& origin = p.origin;
  if (p.num_ranks() != num_ranks) {
    Fail(origin, "the plan runs on " + std::to_string(p.num_ranks()) + " ranks, the job has " +
                     std::to_string(num_ranks));
  }
  if (p.seq_length != 0 && p.seq_length != o.model.seq_len) {
    Fail(origin, "seq_length " + std::to_string(p.seq_length) + " differs from the model's " +
                     std::to_string(o.model.seq_len) + " (--seq-len)");
  }
  const int L = o.model.num_layers;
  int slot = 0;
  for (size_t g = 0; g < p.stages.size(); ++g) {
    int next = 0;
    for (size_t s = 0; s < p.stages[g].size(); ++s) {
      const ExecStage& st = p.stages[g][s];
      const std::string where = Where(static_cast<int>(g), static_cast<int>(s));
      if (st.first_layer != next || st.last_layer <= st.first_layer) {
        Fail(origin, where + "layers [" + std::to_string(st.first_layer) + ", " +
                         std::to_string(st.last_layer) +
                         ") do not continue the pipeline at layer " + std::to_string(next));
      }
      // Every stage exchanges whole activations with the neighbour of its own tensor-parallel
      // index, and replicas sum gradients slice by slice: both need one tp across the plan.
      if (st.tp != p.stages[0][0].tp) {
        Fail(origin, where + "tp " + std::to_string(st.tp) + " differs from group 0 stage 0's " +
                         std::to_string(p.stages[0][0].tp) +
                         "; this trainer runs one tp for the whole plan");
      }
      if (o.model.num_heads % st.tp != 0) {
        Fail(origin, where + "tp " + std::to_string(st.tp) + " does not divide the model's " +
                         std::to_string(o.model.num_heads) + " heads");
      }
      next = st.last_layer;
    }
    if (next != L) {
      Fail(origin, "group " + std::to_string(g) + "'s pipeline ends at layer " +
                       std::to_string(next) + ", the model has " + std::to_string(L) + " layers");
    }
    for (const ReplicaClass& c : p.classes[g]) slot += c.replicas * c.micro_batch;
  }
  if (slot * o.micro_batches != o.global_batch) {
    Fail(origin, "the replicas' micro-batches add up to " + std::to_string(slot) +
                     " sequences per slot; a global batch of " + std::to_string(o.global_batch) +
                     " in " + std::to_string(o.micro_batches) + " micro-batches needs " +
                     std::to_string(o.global_batch / o.micro_batches));
  }
}

RankRole RoleOfRank(const ExecPlan& p, int rank) {
  const RankPlacement at = PlaceRank(p.structure, rank);
  RankRole role;
  int replicas_before = 0, offset = 0;
  for (int g = 0; g < at.group; ++g) {
    for (const ReplicaClass& c : p.classes[g]) {
      replicas_before += c.replicas;
      offset += c.replicas * c.micro_batch;
    }
  }
  int r = at.replica;
  for (const ReplicaClass& c : p.classes[at.group]) {
    if (r < c.replicas) {
      role.micro_batch = c.micro_batch;
      offset += r * c.micro_batch;
      break;
    }
    r -= c.replicas;
    offset += c.replicas * c.micro_batch;
  }
  role.replica = replicas_before + at.replica;
  role.num_replicas = p.structure.replicas();
  role.stage = at.stage;
  role.num_stages = static_cast<int>(p.stages[at.group].size());
  role.slot_offset = offset;
  const ExecStage& st = p.stages[at.group][at.stage];
  role.range = {st.first_layer, st.last_layer, at.stage == 0, at.stage == role.num_stages - 1,
                st.recompute};
  role.tp = {st.tp, at.tp_index};
  role.device_type = st.device_type;
  return role;
}

std::vector<int> ReplicaMicroBatches(const ExecPlan& p) {
  std::vector<int> out;
  for (const auto& classes : p.classes) {
    for (const ReplicaClass& c : classes) out.insert(out.end(), c.replicas, c.micro_batch);
  }
  return out;
}

std::vector<int> GradientCuts(const ExecPlan& p, int num_layers) {
  std::set<int> cuts = {0, num_layers};
  for (const auto& group : p.stages) {
    for (const ExecStage& st : group) cuts.insert(st.first_layer);
  }
  return std::vector<int>(cuts.begin(), cuts.end());
}

}  // namespace mixccl::train

namespace mixccl::train {

std::vector<GradientSegment> SegmentsOfStage(const std::vector<int>& cuts, const GptStage& stage) {
  const StageRange& r = stage.range();
  auto block_start = [&](int layer) -> std::size_t {
    if (layer == r.first_layer) return 0;  // the embedding, when there is one, comes first
    if (layer == r.last_layer) return stage.params().size();  // the head comes last
    return stage.FindTensor("block" + std::to_string(layer) + ".ln1_w")->offset;
  };
  std::vector<GradientSegment> out;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    if (cuts[k] < r.first_layer || cuts[k + 1] > r.last_layer) continue;
    const std::size_t begin = block_start(cuts[k]), end = block_start(cuts[k + 1]);
    out.push_back({static_cast<int>(k), begin, end - begin});
  }
  return out;
}

}  // namespace mixccl::train
