#include "mixccl/train/plan_evaluator.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <sstream>

#include "mixccl/train/batch_split.h"
#include "mixccl/train/layer_split.h"
#include "mixccl/train/pipeline_sim.h"
#include "mixccl/train/placement.h"

namespace mixccl::train {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Gib(double bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << bytes / kGiB << " GiB";
  return out.str();
}

}  // namespace

void MemoryShortfall::Offer(double bytes, const std::string& description) {
  if (bytes < short_bytes) {
    short_bytes = bytes;
    what = description;
  }
}

// Everything about stage j of a group that does not depend on how many layers it gets.
struct PlanEvaluator::StageShape {
  int type = 0;
  int tp = 1;
  bool first = false;
  bool last = false;
  PassTimes layer;  // one transformer layer
  PassTimes extra;  // the pass's fixed cost; embedding on the first stage, head on the last
  double send_forward_s = 0.0;
  double send_backward_s = 0.0;
  int in_flight = 1;
  double reserved_bytes = 0.0;
  double capacity_bytes = 0.0;
  BlockLayout layout;
  int local = 0;

  // Time per micro-batch with `n` layers of which `r` are recomputed; sends included.
  double Time(int n, int r) const {
    return n * (layer.forward_s + layer.backward_s) + r * layer.forward_s + extra.forward_s +
           extra.backward_s + (last ? 0.0 : send_forward_s) + (first ? 0.0 : send_backward_s);
  }
  StageMemoryQuery Query(int n, int r, int mb, int shards) const {
    StageMemoryQuery q;
    q.num_layers = n;
    q.recomputed_layers = r;
    q.has_embedding = first;
    q.has_head = last;
    q.tp = tp;
    q.micro_batch = mb;
    q.in_flight = in_flight;
    q.optimizer_shards = shards;
    return q;
  }
};

PlanEvaluator::PlanEvaluator(const CostModel& cost, const MemoryModel& memory)
    : cost_(cost), memory_(memory) {}

std::vector<int> PlanEvaluator::MicroBatchCounts(const Structure& s) const {
  const int batch = cost_.model().global_batch_size;
  const int replicas = s.replicas();
  std::vector<int> counts;
  for (int m = 1; m <= batch; ++m) {
    if (batch % m == 0 && batch / m >= replicas) counts.push_back(m);
  }
  return counts;
}

double PlanEvaluator::IdealMicroBatchTime(const GroupTemplate& g, int mb) const {
  // With layers split in proportion to speed every stage takes the same time T = pass_j +
  // n_j layer_j (pass_j its fixed cost per micro-batch), and sum_j n_j = N, so
  // T = (N + sum_j pass_j / layer_j) / sum_j 1 / layer_j.
  double layers_per_second = 0.0;
  double fixed_layers = 0.0;  // layers the stages' fixed costs are worth
  for (size_t i = 0; i < g.types.size(); ++i) {
    const PassTimes t = cost_.Layer(g.types[i], g.tp[i], mb);
    const PassTimes pass = cost_.StagePass(g.types[i], g.tp[i], mb);
    const double layer_s = t.forward_s + t.backward_s;
    layers_per_second += g.stages[i] / layer_s;
    fixed_layers += g.stages[i] * (pass.forward_s + pass.backward_s) / layer_s;
  }
  return (cost_.model().num_layers + fixed_layers) / layers_per_second;
}

std::vector<PlanEvaluator::StageShape> PlanEvaluator::Shapes(const Structure& s, int group, int mb,
                                                             int m) const {
  const GroupTemplate& g = s.groups[group];
  const int p = g.num_stages();
  std::vector<StageShape> shapes(p);
  for (int j = 0; j < p; ++j) {
    StageShape& sh = shapes[j];
    const int block = g.block_of_stage(j);
    sh.type = g.types[block];
    sh.tp = g.tp[block];
    sh.local = g.stage_local_index(j);
    const DeviceType& d = cost_.cluster().device_types[sh.type];
    sh.layout = BlockLayout{sh.tp, g.stages[block], g.dp, d.devices_per_host};
    sh.first = j == 0;
    sh.last = j == p - 1;
    sh.layer = cost_.Layer(sh.type, sh.tp, mb);
    sh.extra = cost_.StagePass(sh.type, sh.tp, mb);
    auto add = [&sh](const PassTimes& t) {
      sh.extra.forward_s += t.forward_s;
      sh.extra.backward_s += t.backward_s;
    };
    if (sh.first) add(cost_.Embedding(sh.type, sh.tp, mb));
    if (sh.last) add(cost_.Head(sh.type, sh.tp, mb));
    // 1F1B keeps at most P - j micro-batches alive on stage j.
    sh.in_flight = std::min(p - j, m);
    sh.reserved_bytes = d.reserved_gib * kGiB;
    sh.capacity_bytes = d.memory_gib * kGiB;
  }
  for (int j = 0; j + 1 < p; ++j) {
    const bool same_block = g.block_of_stage(j) == g.block_of_stage(j + 1);
    const bool same_domain =
        same_block && !StageBoundaryCrossesDomain(shapes[j].layout, shapes[j].local);
    const double t = cost_.PointToPoint(shapes[j].type, shapes[j].tp, shapes[j + 1].type,
                                        shapes[j + 1].tp, same_domain, mb);
    shapes[j].send_forward_s = t;       // activations forward
    shapes[j + 1].send_backward_s = t;  // their gradient back over the same link
  }
  return shapes;
}

namespace {

// Gradient AllReduce time of every stage of every group, given each group's layer counts.
// All replicas of all groups take part: within a group's stage the replicas sharing a host
// reduce there first, then one ring runs over every host holding the stage's first layer.
template <typename ShapesOf>
std::vector<std::vector<double>> AllReduceTimes(const Structure& s,
                                                const std::vector<std::vector<int>>& layers,
                                                const CostModel& cost, const MemoryModel& memory,
                                                const ShapesOf& shapes_of) {
  const int groups = static_cast<int>(s.groups.size());
  std::vector<std::vector<double>> out(groups);
  std::vector<std::vector<int>> domains(groups), first_layer(groups);
  for (int g = 0; g < groups; ++g) {
    const auto& shapes = shapes_of(g);
    int first = 0;
    for (size_t j = 0; j < shapes.size(); ++j) {
      domains[g].push_back(DomainsOfStage(shapes[j].layout, shapes[j].local));
      first_layer[g].push_back(first);
      first += layers[g][j];
    }
  }
  const int replicas = s.replicas();
  const double grad_bytes = BytesPerElement(cost.model().grad_dtype);
  for (int g = 0; g < groups; ++g) {
    const auto& shapes = shapes_of(g);
    out[g].assign(shapes.size(), 0.0);
    if (replicas == 1) continue;
    for (size_t j = 0; j < shapes.size(); ++j) {
      int hosts = domains[g][j];
      for (int h = 0; h < groups; ++h) {
        if (h == g) continue;
        // The stage of group h that holds this stage's first layer.
        const auto& starts = first_layer[h];
        const size_t k =
            std::upper_bound(starts.begin(), starts.end(), first_layer[g][j]) - starts.begin() - 1;
        hosts += domains[h][k];
      }
      const double params = memory.StageParams(shapes[j].Query(layers[g][j], 0, 1, 1));
      const double per_host = static_cast<double>(s.groups[g].dp) / domains[g][j];
      out[g][j] = cost.DataParallelAllReduce(shapes[j].type, params * grad_bytes, per_host, hosts);
    }
  }
  return out;
}

// Per-step update time (zeroing, norm, optimizer) of every stage of every group: its parameters
// (with ZeRO-1 one replica's shard of them) at its device type's profiled rate.
template <typename ShapesOf>
std::vector<std::vector<double>> UpdateTimes(const Structure& s,
                                             const std::vector<std::vector<int>>& layers,
                                             const CostModel& cost, const MemoryModel& memory,
                                             const ShapesOf& shapes_of) {
  std::vector<std::vector<double>> out(s.groups.size());
  const double shards = cost.model().zero1 ? s.replicas() : 1.0;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const auto& shapes = shapes_of(static_cast<int>(g));
    for (size_t j = 0; j < shapes.size(); ++j) {
      const double params = memory.StageParams(shapes[j].Query(layers[g][j], 0, 1, 1));
      out[g].push_back(cost.Update(shapes[j].type, params / shards));
    }
  }
  return out;
}

// The largest entry of a per-group, per-stage table.
double Largest(const std::vector<std::vector<double>>& table) {
  double out = 0.0;
  for (const auto& row : table) {
    for (double x : row) out = std::max(out, x);
  }
  return out;
}

}  // namespace

double PlanEvaluator::Estimate(const Structure& s, int m, bool* fits) const {
  *fits = true;
  const ModelSpec& model = cost_.model();
  const int batch = model.global_batch_size, replicas = s.replicas();
  if (m <= 0 || batch % m != 0 || batch / m < replicas) return kInf;
  std::vector<int> dps;
  for (const GroupTemplate& g : s.groups) dps.push_back(g.dp);
  const auto classes = SplitMicroBatch(
      batch / m, dps, [&](int g, int mb) { return IdealMicroBatchTime(s.groups[g], mb); });
  if (classes.empty()) return kInf;

  const int groups = static_cast<int>(s.groups.size());
  const int n_layers = model.num_layers;
  std::vector<std::vector<StageShape>> shapes(groups);
  std::vector<std::vector<int>> layers(groups);
  std::vector<double> makespan(groups, 0.0);
  for (int g = 0; g < groups; ++g) {
    const int mb = classes[g][0].micro_batch;
    shapes[g] = Shapes(s, g, mb, m);
    const int p = static_cast<int>(shapes[g].size());
    if (p > n_layers) return kInf;
    // Greedy min-max split: one layer per stage, then each further layer to the stage whose
    // time grows least. Memory is checked afterwards only.
    std::vector<int>& n = layers[g];
    n.assign(p, 1);
    using Entry = std::pair<double, int>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    for (int j = 0; j < p; ++j) heap.push({shapes[g][j].Time(2, 0), j});
    for (int placed = p; placed < n_layers; ++placed) {
      const int j = heap.top().second;
      heap.pop();
      ++n[j];
      heap.push({shapes[g][j].Time(n[j] + 1, 0), j});
    }
    double sum = 0.0, worst = 0.0;
    for (int j = 0; j < p; ++j) {
      const StageShape& sh = shapes[g][j];
      int r = memory_.MinRecomputedLayers(sh.Query(n[j], 0, mb, replicas), sh.reserved_bytes,
                                          sh.capacity_bytes);
      if (r < 0) {
        *fits = false;
        r = n[j];
      }
      const double t = sh.Time(n[j], r);
      sum += t;
      worst = std::max(worst, t);
    }
    makespan[g] = sum + (m - 1) * worst;
  }
  auto shapes_of = [&](int g) -> const std::vector<StageShape>& { return shapes[g]; };
  const auto allreduce = AllReduceTimes(s, layers, cost_, memory_, shapes_of);
  const auto update = UpdateTimes(s, layers, cost_, memory_, shapes_of);
  // As Price: the slowest pipeline gates the sums, then the longest update.
  return *std::max_element(makespan.begin(), makespan.end()) + Largest(allreduce) +
         Largest(update);
}

std::optional<Plan> PlanEvaluator::Evaluate(const Structure& s, int m, SplitMethod method,
                                            MemoryShortfall* shortfall) const {
  const ModelSpec& model = cost_.model();
  const ClusterSpec& cluster = cost_.cluster();
  const int batch = model.global_batch_size, replicas = s.replicas();
  if (m <= 0 || batch % m != 0 || batch / m < replicas) return std::nullopt;
  std::vector<int> dps;
  for (const GroupTemplate& g : s.groups) dps.push_back(g.dp);
  const auto classes = SplitMicroBatch(
      batch / m, dps, [&](int g, int mb) { return IdealMicroBatchTime(s.groups[g], mb); });
  if (classes.empty()) return std::nullopt;

  const int groups = static_cast<int>(s.groups.size());
  const int n_layers = model.num_layers;
  std::vector<std::vector<StageShape>> shapes(groups);
  std::vector<std::vector<int>> layers(groups), recompute(groups);
  for (int g = 0; g < groups; ++g) {
    const int mb = classes[g][0].micro_batch;  // the largest micro-batch of the group
    shapes[g] = Shapes(s, g, mb, m);
    const auto& sh = shapes[g];
    const int p = static_cast<int>(sh.size());
    if (p > n_layers) return std::nullopt;
    // Memory-aware stage cost: the fewest recomputed layers that make the stage fit.
    StageCostFn stage_cost = [&](int j, int n) {
      const int r = memory_.MinRecomputedLayers(sh[j].Query(n, 0, mb, replicas),
                                                sh[j].reserved_bytes, sh[j].capacity_bytes);
      return r < 0 ? kInf : sh[j].Time(n, r);
    };
    const LayerSplit split = method == SplitMethod::kExhaustive
                                 ? SplitLayersExhaustive(n_layers, p, stage_cost)
                                 : SplitLayers(n_layers, p, stage_cost);
    if (!split.feasible) {
      if (shortfall != nullptr) {
        // The split that overflows least, each stage at its smallest footprint.
        auto footprint = [&](int j, int n) {
          const double none =
              memory_.Stage(sh[j].Query(n, 0, mb, replicas), sh[j].reserved_bytes).total_bytes();
          const double all =
              memory_.Stage(sh[j].Query(n, n, mb, replicas), sh[j].reserved_bytes).total_bytes();
          return std::min(none, all);
        };
        const LayerSplit least = SplitLayers(
            n_layers, p, [&](int j, int n) { return footprint(j, n) - sh[j].capacity_bytes; });
        if (least.feasible) {
          int worst = 0;
          for (int j = 1; j < p; ++j) {
            if (footprint(j, least.layers[j]) - sh[j].capacity_bytes >
                footprint(worst, least.layers[worst]) - sh[worst].capacity_bytes) {
              worst = j;
            }
          }
          const DeviceType& d = cluster.device_types[sh[worst].type];
          std::ostringstream what;
          what << "stage " << worst << " of a " << p << "-stage pipeline on " << d.name << " (tp "
               << sh[worst].tp << ", " << least.layers[worst] << " of " << n_layers
               << " layers, micro-batch " << mb << ", " << sh[worst].in_flight
               << " in flight, recomputation at its best) needs "
               << Gib(footprint(worst, least.layers[worst])) << " per device where each " << d.name
               << " has " << Gib(sh[worst].capacity_bytes);
          shortfall->Offer(least.bottleneck, what.str());
        }
      }
      return std::nullopt;
    }
    layers[g] = split.layers;
    recompute[g].resize(p);
    for (int j = 0; j < p; ++j) {
      recompute[g][j] = memory_.MinRecomputedLayers(sh[j].Query(layers[g][j], 0, mb, replicas),
                                                    sh[j].reserved_bytes, sh[j].capacity_bytes);
    }
  }
  return Price(s, m, classes, layers, recompute);
}

Plan PlanEvaluator::Price(const Structure& s, int m,
                          const std::vector<std::vector<ReplicaClass>>& classes,
                          const std::vector<std::vector<int>>& layers,
                          const std::vector<std::vector<int>>& recompute) const {
  const ModelSpec& model = cost_.model();
  const ClusterSpec& cluster = cost_.cluster();
  const int batch = model.global_batch_size, replicas = s.replicas();
  const int groups = static_cast<int>(s.groups.size());
  std::vector<std::vector<StageShape>> shapes(groups);
  for (int g = 0; g < groups; ++g) shapes[g] = Shapes(s, g, classes[g][0].micro_batch, m);
  auto shapes_of = [&](int g) -> const std::vector<StageShape>& { return shapes[g]; };
  const auto allreduce = AllReduceTimes(s, layers, cost_, memory_, shapes_of);
  const auto update = UpdateTimes(s, layers, cost_, memory_, shapes_of);

  // The step's synchronisation: every rank sums the step's loss over the job (and a pipeline
  // its gradient norm) after the gradient AllReduce, whose interval sums each wait for the
  // slowest replica holding the interval; the update follows. So the step lasts until the
  // last pipeline finishes, plus the longest AllReduce, plus the longest update;
  // every other rank waits for that: a faster replica, a stage beside a slower one beyond the
  // 1F1B bubble, a rank with fewer parameters to sum or update.
  Plan plan;
  plan.structure = s;
  plan.micro_batches = m;
  Prediction& pred = plan.predicted;
  double busiest = 0.0, idlest = kInf, worst_busy = 0.0;
  for (int g = 0; g < groups; ++g) {
    const int p = static_cast<int>(shapes[g].size());
    for (const ReplicaClass& cls : classes[g]) {
      const std::vector<StageShape> sh = cls.micro_batch == classes[g][0].micro_batch
                                             ? shapes[g]
                                             : Shapes(s, g, cls.micro_batch, m);
      std::vector<SimStage> sim(p);
      for (int j = 0; j < p; ++j) {
        const int n = layers[g][j], r = recompute[g][j];
        sim[j].forward_s = n * sh[j].layer.forward_s + sh[j].extra.forward_s;
        sim[j].backward_s =
            n * sh[j].layer.backward_s + r * sh[j].layer.forward_s + sh[j].extra.backward_s;
        sim[j].send_forward_s = sh[j].send_forward_s;
        sim[j].send_backward_s = sh[j].send_backward_s;
      }
      const SimResult result = Simulate1F1B(sim, m);
      if (result.makespan_s > pred.pipeline_s) {
        pred.pipeline_s = result.makespan_s;
        worst_busy = *std::max_element(result.busy_s.begin(), result.busy_s.end());
      }
      int first = 0;
      for (int j = 0; j < p; ++j) {
        pred.step_time_s = std::max(pred.step_time_s, result.finish_s[j]);
        pred.allreduce_s = std::max(pred.allreduce_s, allreduce[g][j]);
        StagePlan st;
        st.group = g;
        st.stage = j;
        st.device_type = sh[j].type;
        st.device_name = cluster.device_types[sh[j].type].name;
        st.tp = sh[j].tp;
        st.dp = cls.replicas;
        st.num_devices = st.tp * st.dp;
        st.first_layer = first;
        st.last_layer = first + layers[g][j];
        first = st.last_layer;
        st.micro_batch = cls.micro_batch;
        st.recompute = recompute[g][j];
        st.embedding = sh[j].first;
        st.head = sh[j].last;
        st.memory_gib =
            memory_
                .Stage(sh[j].Query(layers[g][j], st.recompute, cls.micro_batch, replicas),
                       sh[j].reserved_bytes)
                .total_bytes() /
            kGiB;
        st.forward_s = sim[j].forward_s + (sh[j].last ? 0.0 : sim[j].send_forward_s);
        st.backward_s = sim[j].backward_s + (sh[j].first ? 0.0 : sim[j].send_backward_s);
        st.compute_s = m * (sim[j].forward_s + sim[j].backward_s);
        st.allreduce_s = allreduce[g][j];
        st.update_s = update[g][j];
        st.busy_s = result.busy_s[j];
        busiest = std::max(busiest, st.compute_s);
        idlest = std::min(idlest, st.compute_s);
        plan.stages.push_back(st);
      }
    }
  }
  pred.update_s = Largest(update);
  pred.step_time_s += pred.allreduce_s + pred.update_s;
  for (StagePlan& st : plan.stages) {
    st.wait_s = std::max(0.0, pred.step_time_s - st.busy_s - st.allreduce_s - st.update_s);
  }
  // Keep the entries ordered group, stage, then larger micro-batch first.
  std::stable_sort(plan.stages.begin(), plan.stages.end(),
                   [](const StagePlan& a, const StagePlan& b) {
                     return a.group != b.group ? a.group < b.group : a.stage < b.stage;
                   });
  pred.balance = busiest / idlest;
  pred.tokens_per_s = static_cast<double>(batch) * model.seq_length / pred.step_time_s;
  pred.bubble_fraction = pred.pipeline_s > 0.0 ? 1.0 - worst_busy / pred.pipeline_s : 0.0;
  return plan;
}

}  // namespace mixccl::train
