#include "mixccl/train/planner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>

#include "mixccl/train/cost_model.h"
#include "mixccl/train/memory_model.h"
#include "mixccl/train/plan_evaluator.h"
#include "mixccl/train/spec_error.h"

namespace mixccl::train {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kMaxDeviceTypes = 6;

// Tensor-parallel sizes a device type can use: powers of two up to 8 that divide the host (so a
// group never leaves its domain) and every dimension the Megatron split divides.
std::vector<int> TensorParallelOptions(const ModelSpec& m, const DeviceType& d) {
  std::vector<int> out;
  for (int tp : {1, 2, 4, 8}) {
    if (tp > d.count || d.devices_per_host % tp != 0) continue;
    if (m.num_attention_heads % tp != 0 || m.num_kv_heads % tp != 0) continue;
    if (m.hidden_size % tp != 0 || m.ffn_hidden_size % tp != 0) continue;
    out.push_back(tp);
  }
  return out;
}

struct Candidate {
  Structure structure;
  double estimate = kInf;  // best over m of the closed-form step time
  bool fits = false;       // that estimate's split fits in memory
};

bool ByEstimate(const Candidate& a, const Candidate& b) {
  if (a.fits != b.fits) return a.fits;
  return a.estimate < b.estimate;
}

class Search {
 public:
  Search(const ModelSpec& model, const ClusterSpec& cluster, const LayerProfile* profile,
         const PlannerOptions& options)
      : model_(model),
        cluster_(cluster),
        options_(options),
        cost_(model, cluster, profile),
        memory_(model),
        evaluator_(cost_, memory_) {}

  PlanResult Run();

 private:
  // Single-group candidates over the device types in `types` (a subset of the cluster).
  void EnumerateTemplates(const std::vector<int>& types, std::vector<Candidate>* out);
  void EstimateCandidate(Candidate* c);
  // Evaluates candidates in order until `limit` of them fit (all of them when limit < 0).
  void Refine(const std::vector<Candidate>& ranked, int limit);
  std::optional<Plan> BestOverMicroBatches(const Structure& s);
  void MultiGroupCandidates(const std::vector<std::vector<Candidate>>& by_subset,
                            std::vector<Candidate>* out);
  std::string NoPlanMessage() const;

  const ModelSpec& model_;
  const ClusterSpec& cluster_;
  const PlannerOptions& options_;
  CostModel cost_;
  MemoryModel memory_;
  PlanEvaluator evaluator_;
  std::vector<Plan> plans_;
  MemoryShortfall shortfall_;
  SearchStats stats_;
};

void Search::EnumerateTemplates(const std::vector<int>& types, std::vector<Candidate>* out) {
  const int k = static_cast<int>(types.size());
  std::vector<std::vector<int>> options(k);
  for (int i = 0; i < k; ++i) {
    options[i] = TensorParallelOptions(model_, cluster_.device_types[types[i]]);
    if (options[i].empty()) return;
  }
  std::vector<int> pick(k, 0);
  while (true) {
    GroupTemplate g;
    // Stages ordered by descending compute time: slower device types first. Under balancing
    // they hold the fewest layers, and the first stages keep the most micro-batches in flight,
    // so this evens out activation memory; it also fixes one order instead of k!.
    std::vector<int> order(k);
    for (int i = 0; i < k; ++i) order[i] = i;
    std::vector<double> layer_time(k);
    for (int i = 0; i < k; ++i) {
      const PassTimes t = cost_.Layer(types[i], options[i][pick[i]], 1);
      layer_time[i] = t.forward_s + t.backward_s;
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return layer_time[a] > layer_time[b]; });
    for (int i : order) {
      g.types.push_back(types[i]);
      g.tp.push_back(options[i][pick[i]]);
    }
    g.stages.assign(k, 0);
    // Each type contributes as many stages as its devices allow for dp replicas; of the dp
    // values giving the same stage counts only the largest is kept (more replicas, same
    // pipeline).
    auto stages_for = [&](int dp, std::vector<int>* s) {
      for (int i = 0; i < k; ++i) {
        (*s)[i] = cluster_.device_types[g.types[i]].count / (g.tp[i] * dp);
        if ((*s)[i] == 0) return false;
      }
      return true;
    };
    std::vector<int> s(k), s_next(k);
    const int dp_max = options_.pipeline_only ? 1 : model_.global_batch_size;
    for (int dp = 1; dp <= dp_max && stages_for(dp, &s); ++dp) {
      const bool last_of_kind =
          options_.pipeline_only || dp == dp_max || !stages_for(dp + 1, &s_next) || s_next != s;
      int p = 0;
      for (int x : s) p += x;
      if (!last_of_kind || p > model_.num_layers) continue;
      Candidate c;
      g.stages = s;
      g.dp = dp;
      c.structure.groups.push_back(g);
      out->push_back(c);
    }
    int i = 0;
    while (i < k && ++pick[i] == static_cast<int>(options[i].size())) pick[i++] = 0;
    if (i == k) break;
  }
}

void Search::EstimateCandidate(Candidate* c) {
  c->estimate = kInf;
  c->fits = false;
  double any = kInf;
  for (int m : evaluator_.MicroBatchCounts(c->structure)) {
    bool fits = false;
    const double t = evaluator_.Estimate(c->structure, m, &fits);
    ++stats_.estimates;
    if (fits && t < c->estimate) c->estimate = t;
    any = std::min(any, t);
  }
  c->fits = c->estimate < kInf;
  if (!c->fits) c->estimate = any;
}

std::optional<Plan> Search::BestOverMicroBatches(const Structure& s) {
  std::optional<Plan> best;
  const SplitMethod method =
      options_.exhaustive ? SplitMethod::kExhaustive : SplitMethod::kDynamicProgramming;
  for (int m : evaluator_.MicroBatchCounts(s)) {
    ++stats_.full_evaluations;
    std::optional<Plan> p = evaluator_.Evaluate(s, m, method, &shortfall_);
    if (p && (!best || p->predicted.step_time_s < best->predicted.step_time_s)) best = std::move(p);
  }
  return best;
}

void Search::Refine(const std::vector<Candidate>& ranked, int limit) {
  int found = 0;
  for (const Candidate& c : ranked) {
    if (limit >= 0 && found >= limit) break;
    std::optional<Plan> p = BestOverMicroBatches(c.structure);
    if (p) {
      plans_.push_back(std::move(*p));
      ++found;
    }
  }
}

// Every way to split `items` into at least two non-empty blocks.
void Partitions(const std::vector<int>& items, std::vector<std::vector<std::vector<int>>>* out) {
  std::vector<std::vector<int>> blocks;
  std::function<void(size_t)> place = [&](size_t i) {
    if (i == items.size()) {
      if (blocks.size() >= 2) out->push_back(blocks);
      return;
    }
    for (size_t b = 0; b < blocks.size(); ++b) {
      blocks[b].push_back(items[i]);
      place(i + 1);
      blocks[b].pop_back();
    }
    blocks.push_back({items[i]});
    place(i + 1);
    blocks.pop_back();
  };
  place(0);
}

void Search::MultiGroupCandidates(const std::vector<std::vector<Candidate>>& by_subset,
                                  std::vector<Candidate>* out) {
  const int k = static_cast<int>(cluster_.device_types.size());
  for (int mask = 1; mask < (1 << k); ++mask) {
    std::vector<int> items;
    for (int t = 0; t < k; ++t) {
      if (mask & (1 << t)) items.push_back(t);
    }
    if (items.size() < 2) continue;
    std::vector<std::vector<std::vector<int>>> partitions;
    Partitions(items, &partitions);
    for (const auto& blocks : partitions) {
      // Each block's own candidates, best estimate first, capped unless exhaustive.
      std::vector<const std::vector<Candidate>*> lists;
      std::vector<size_t> sizes;
      bool empty = false;
      // At most block_candidates per block, and about partition_combinations combinations per
      // partition however many blocks it has.
      const double root = std::pow(static_cast<double>(options_.partition_combinations),
                                   1.0 / static_cast<double>(blocks.size()));
      const size_t per_block = std::max<size_t>(
          1, std::min<size_t>(options_.block_candidates, static_cast<size_t>(root + 1e-9)));
      for (const auto& block : blocks) {
        int sub = 0;
        for (int t : block) sub |= 1 << t;
        lists.push_back(&by_subset[sub]);
        size_t n = by_subset[sub].size();
        if (!options_.exhaustive) n = std::min(n, per_block);
        sizes.push_back(n);
        empty = empty || n == 0;
      }
      if (empty) continue;
      std::vector<size_t> pick(blocks.size(), 0);
      while (true) {
        Candidate c;
        for (size_t b = 0; b < blocks.size(); ++b) {
          c.structure.groups.push_back((*lists[b])[pick[b]].structure.groups[0]);
        }
        out->push_back(std::move(c));
        size_t b = 0;
        while (b < blocks.size() && ++pick[b] == sizes[b]) pick[b++] = 0;
        if (b == blocks.size()) break;
      }
    }
  }
}

std::string Search::NoPlanMessage() const {
  std::ostringstream msg;
  msg.setf(std::ios::fixed);
  msg.precision(1);
  if (shortfall_.short_bytes < kInf) {
    msg << "no plan fits in device memory for " << model_.name << " on " << cluster_.name
        << "; the closest candidate is short by "
        << shortfall_.short_bytes / (1024.0 * 1024.0 * 1024.0) << " GiB: " << shortfall_.what;
    return msg.str();
  }
  msg << "no parallel layout exists for " << model_.name << " on " << cluster_.name
      << ": every candidate needs more pipeline stages than the " << model_.num_layers
      << " layers, more replicas than the global batch of " << model_.global_batch_size
      << " sequences, or a tensor-parallel size that does not divide the model's heads and "
         "hidden sizes or the hosts";
  return msg.str();
}

PlanResult Search::Run() {
  const int k = static_cast<int>(cluster_.device_types.size());
  // Single-group candidates for every subset of device types.
  std::vector<std::vector<Candidate>> by_subset(1 << k);
  for (int mask = 1; mask < (1 << k); ++mask) {
    std::vector<int> types;
    for (int t = 0; t < k; ++t) {
      if (mask & (1 << t)) types.push_back(t);
    }
    if (options_.pipeline_only && mask != (1 << k) - 1) continue;
    EnumerateTemplates(types, &by_subset[mask]);
    stats_.templates += static_cast<long>(by_subset[mask].size());
  }

  if (options_.exhaustive) {
    for (const auto& list : by_subset) Refine(list, -1);
    if (!options_.pipeline_only) {
      std::vector<Candidate> multi;
      MultiGroupCandidates(by_subset, &multi);
      stats_.combinations = static_cast<long>(multi.size());
      Refine(multi, -1);
    }
  } else {
    std::vector<Candidate> single;
    for (auto& list : by_subset) {
      for (Candidate& c : list) EstimateCandidate(&c);
      std::stable_sort(list.begin(), list.end(), ByEstimate);
      single.insert(single.end(), list.begin(), list.end());
    }
    std::stable_sort(single.begin(), single.end(), ByEstimate);
    Refine(single, options_.refine_limit);
    if (!options_.pipeline_only) {
      std::vector<Candidate> multi;
      MultiGroupCandidates(by_subset, &multi);
      stats_.combinations = static_cast<long>(multi.size());
      for (Candidate& c : multi) EstimateCandidate(&c);
      std::stable_sort(multi.begin(), multi.end(), ByEstimate);
      Refine(multi, options_.refine_limit);
    }
  }

  std::stable_sort(plans_.begin(), plans_.end(), [](const Plan& a, const Plan& b) {
    return a.predicted.step_time_s < b.predicted.step_time_s;
  });
  PlanResult result;
  result.stats = stats_;
  if (plans_.empty()) {
    result.error = NoPlanMessage();
    return result;
  }
  const size_t keep = static_cast<size_t>(std::max(1, options_.top));
  if (plans_.size() > keep) plans_.resize(keep);
  result.plans = std::move(plans_);
  return result;
}

void CheckProfile(const ModelSpec& model, const ClusterSpec& cluster, const LayerProfile* profile) {
  if (profile == nullptr) return;
  if (profile->seq_length() != 0 && profile->seq_length() != model.seq_length) {
    throw SpecError("profile was measured at seq_length " + std::to_string(profile->seq_length()) +
                    " but the model uses " + std::to_string(model.seq_length));
  }
  if (!profile->model().empty() && profile->model() != model.name) {
    throw SpecError("profile was measured for model '" + profile->model() + "', not '" +
                    model.name + "'");
  }
  for (const std::string& type : profile->device_types()) {
    if (cluster.FindType(type) < 0) {
      throw SpecError("profile names device type '" + type + "', which the cluster does not have");
    }
  }
}

}  // namespace

PlanResult PlanTraining(const ModelSpec& model, const ClusterSpec& cluster,
                        const LayerProfile* profile, const PlannerOptions& options) {
  CheckProfile(model, cluster, profile);
  if (cluster.device_types.size() > kMaxDeviceTypes) {
    throw SpecError("at most " + std::to_string(kMaxDeviceTypes) +
                    " device types are supported, the cluster has " +
                    std::to_string(cluster.device_types.size()));
  }
  Search search(model, cluster, profile, options);
  return search.Run();
}

}  // namespace mixccl::train
