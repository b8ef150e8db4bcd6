#include "mixccl/train/train_report.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace mixccl::train {

namespace {

// A float option as the user wrote it (0.001, not 0.0010000000474974513).
double Decimal(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", x);
  return std::strtod(buf, nullptr);
}

nlohmann::ordered_json RankTimesJson(const std::vector<RankStepTimes>& ranks) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const RankStepTimes& t : ranks) {
    list.push_back({{"compute_s", t.compute_s}, {"comm_s", t.comm_s}, {"idle_s", t.idle_s}});
  }
  return list;
}

}  // namespace

std::string StepLogLine(const StepRecord& r, int total_steps) {
  char line[256];
  std::snprintf(line, sizeof line,
                "step %4lld/%d  loss %.6f  step %.1f ms  %.0f tok/s  |g| %.3f  compute %.1f ms  "
                "comm %.1f ms",
                r.step, total_steps, r.loss, r.step_time_s * 1e3, r.tokens_per_s, r.grad_norm,
                r.compute_s * 1e3, r.comm_s * 1e3);
  std::string out = line;
  // Per rank (the stages of the pipelines): compute/communication/idle in ms.
  if (r.ranks.size() > 1) {
    out += "  |";
    for (size_t i = 0; i < r.ranks.size(); ++i) {
      std::snprintf(line, sizeof line, " r%zu %.1f/%.1f/%.1f", i, r.ranks[i].compute_s * 1e3,
                    r.ranks[i].comm_s * 1e3, r.ranks[i].idle_s * 1e3);
      out += line;
    }
  }
  return out;
}

double PeakRssBytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;  // Linux reports KiB
}

std::string ReportJson(const TrainCli& cli, const std::string& data_origin, int num_ranks,
                       std::size_t parameters, const std::vector<StepRecord>& steps,
                       const std::vector<RankSummary>& ranks) {
  const TrainOptions& o = cli.options;
  nlohmann::ordered_json j;
  j["schema"] = "mixccl-train-report";
  j["version"] = 1;
  j["model"] = {{"vocab_size", o.model.vocab_size}, {"seq_len", o.model.seq_len},
                {"channels", o.model.channels},     {"num_heads", o.model.num_heads},
                {"num_layers", o.model.num_layers}, {"parameters", parameters}};
  j["run"] = {
      {"global_batch", o.global_batch},
      {"micro_batches", o.micro_batches},
      {"steps", cli.steps},
      {"seed", o.seed},
      {"learning_rate", Decimal(o.adamw.learning_rate)},
      {"weight_decay", Decimal(o.adamw.weight_decay)},
      {"grad_clip", Decimal(o.adamw.grad_clip)},
      {"data", data_origin},
      {"plan", cli.plan.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(cli.plan)},
      {"zero1", o.zero1},
      {"ranks", num_ranks}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  double time = 0.0;
  for (const StepRecord& s : steps) {
    list.push_back({{"step", s.step},
                    {"loss", s.loss},
                    {"grad_norm", s.grad_norm},
                    {"step_time_s", s.step_time_s},
                    {"compute_s", s.compute_s},
                    {"comm_s", s.comm_s},
                    {"emulated_s", s.emulated_s},
                    {"tokens_per_s", s.tokens_per_s},
                    {"ranks", RankTimesJson(s.ranks)}});
    time += s.step_time_s;
  }
  j["steps"] = list;
  // The first step pays for first-touch allocations; the summary leaves it out when it can.
  double measured = time;
  std::size_t counted = steps.size();
  if (steps.size() > 1) {
    measured -= steps.front().step_time_s;
    counted -= 1;
  }
  const double tokens = static_cast<double>(o.global_batch) * o.model.seq_len;
  j["summary"] = {{"final_loss", steps.empty() ? nlohmann::ordered_json()
                                               : nlohmann::ordered_json(steps.back().loss)},
                  {"mean_step_time_s", counted ? measured / counted : 0.0},
                  {"tokens_per_s", measured > 0.0 ? tokens * counted / measured : 0.0},
                  {"total_time_s", time}};
  nlohmann::ordered_json rank_list = nlohmann::ordered_json::array();
  for (const RankSummary& r : ranks) {
    rank_list.push_back({{"rank", r.rank},
                         {"replica", r.role.replica},
                         {"stage", r.role.stage},
                         {"tp_index", r.role.tp.index},
                         {"slowdown", r.role.slowdown},
                         {"blas_threads", r.role.blas_threads},
                         {"layers", {r.role.range.first_layer, r.role.range.last_layer}},
                         {"recompute", r.role.range.recompute},
                         {"micro_batch", r.role.micro_batch},
                         {"compute_s", r.compute_s},
                         {"comm_s", r.comm_s},
                         {"idle_s", r.idle_s},
                         {"peak_rss_bytes", r.peak_rss_bytes},
                         {"optimizer_state_bytes", r.optimizer_state_bytes},
                         {"emulation_behind_s", r.emulation_behind_s}});
  }
  j["ranks"] = rank_list;
  return j.dump(2) + "\n";
}

}  // namespace mixccl::train
