#include "mixccl/train/layer_profiler.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "mixccl/train/adamw.h"
#include "mixccl/train/speed_emulation.h"

namespace mixccl::train {

namespace {

using Clock = std::chrono::steady_clock;

// The mean, not the median: a step's time is the sum of its operations' times, so what
// predicts it is their expected time, the occasional slow one included (on a shared machine
// the median of a few short operations is the quiet moment a long step rarely gets).
double Mean(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s / v.size();
}

// Mean forward and backward CPU time of `stage` on micro-batches of B sequences for each of
// `slowdowns` (device types), each operation followed by the idle of its device, as the
// trainer runs it: the next operation then starts with colder caches, which the run pays too.
// The types take turns repeat by repeat, so that the machine's drift (on the shared build
// machine, up to 30% within a minute) hits every type alike: the ratio of their times, by
// which the planner splits a micro-batch slot among them, is then not one moment's luck
// against another's. A type's backward idle is paid right before its next forward (after the
// other types' turns), so each operation still starts after its own device's idle. The
// inputs do not matter for the time; they only need to be valid.
// A type with its own thread count (threads[t] > 0) takes its turns with that many BLAS
// threads and is timed in wall time (speed_emulation.h, ComputeSeconds); the others with the
// process's own count.
void TimeStage(GptStage& stage, int B, int repeats, const std::vector<double>& slowdowns,
               const std::vector<int>& threads, std::vector<double>* forward_s,
               std::vector<double>* backward_s) {
  const GptConfig& c = stage.config();
  const size_t N = static_cast<size_t>(B) * c.seq_len;
  std::vector<int> tokens(N);
  for (size_t i = 0; i < N; ++i) tokens[i] = static_cast<int>((7 * i + 3) % c.vocab_size);
  std::vector<float> input(N * c.channels, 0.01f), dout(N * c.channels, 1e-3f);
  const StageRange& r = stage.range();
  MicroBatchState s;
  const size_t types = slowdowns.size();
  std::vector<SlowdownIdler> idlers;
  for (double k : slowdowns) idlers.emplace_back(k);
  std::vector<std::vector<double>> f(types), b(types);
  // The backward idle each type still owes: its CPU and wall time.
  std::vector<std::pair<double, double>> owed(types, {0.0, 0.0});
  const int own_threads = BlasThreads();
  for (int k = 0; k <= repeats; ++k) {  // the first run warms the caches and allocations
    for (size_t t = 0; t < types; ++t) {
      const int n = t < threads.size() && threads[t] > 0 ? threads[t] : own_threads;
      if (n != BlasThreads()) SetBlasThreads(n);
      idlers[t].Idle(owed[t].first, owed[t].second);
      // CPU time (wall time with several threads), as the trainer counts it.
      auto t0 = Clock::now();
      double c0 = ComputeSeconds(n);
      stage.Forward(s, B, tokens.data(), tokens.data(), r.embedding ? nullptr : input.data());
      const double forward = ComputeSeconds(n) - c0;
      idlers[t].Idle(forward, std::chrono::duration<double>(Clock::now() - t0).count());
      t0 = Clock::now();
      c0 = ComputeSeconds(n);
      stage.Backward(s, r.head ? nullptr : dout.data(), 1.0f / N);
      const double backward = ComputeSeconds(n) - c0;
      owed[t] = {backward, std::chrono::duration<double>(Clock::now() - t0).count()};
      if (k == 0) continue;
      f[t].push_back(forward);
      b[t].push_back(backward);
    }
  }
  if (own_threads != BlasThreads()) SetBlasThreads(own_threads);
  forward_s->clear();
  backward_s->clear();
  for (size_t t = 0; t < types; ++t) {
    forward_s->push_back(Mean(f[t]));
    backward_s->push_back(Mean(b[t]));
  }
}

}  // namespace

std::vector<std::vector<MeasuredPart>> MeasureParts(const GptConfig& model,
                                                    const ProfilerOptions& options,
                                                    const std::vector<double>& slowdowns,
                                                    const std::vector<int>& threads) {
  const int L = model.num_layers;
  // The whole model, the embedding alone and the head alone (the empty stages [0, 0) and
  // [L, L)). A block's time is the whole model's minus the embedding and the head, over L:
  // timed inside the model its weights and activations compete for the caches as in a run,
  // which a block timed alone would not show.
  GptStage whole(model, StageRange::Whole(model));
  GptStage embedding(model, {0, 0, true, false, 0});
  GptStage head(model, {L, L, false, true, 0});
  whole.Init(1);
  embedding.Init(1);
  head.Init(1);
  const size_t types = slowdowns.size();
  std::vector<std::vector<MeasuredPart>> out(types);
  for (int B : options.micro_batches) {
    std::vector<double> whole_f, whole_b, emb_f, emb_b, head_f, head_b;
    TimeStage(whole, B, options.repeats, slowdowns, threads, &whole_f, &whole_b);
    TimeStage(embedding, B, options.repeats, slowdowns, threads, &emb_f, &emb_b);
    TimeStage(head, B, options.repeats, slowdowns, threads, &head_f, &head_b);
    BlockActivations a;
    a.Resize(B, model.seq_len, model.channels, model.channels, model.num_heads);
    const size_t floats = a.ln1.size() + a.ln1_mean.size() + a.ln1_rstd.size() + a.qkv.size() +
                          a.att.size() + a.atty.size() + a.res2.size() + a.ln2.size() +
                          a.ln2_mean.size() + a.ln2_rstd.size() + a.fch.size() + a.fch_gelu.size() +
                          static_cast<size_t>(B) * model.seq_len * model.channels;
    for (size_t t = 0; t < types; ++t) {
      MeasuredPart p;
      p.micro_batch = B;
      p.embedding_forward_s = emb_f[t];
      p.embedding_backward_s = emb_b[t];
      p.head_forward_s = head_f[t];
      p.head_backward_s = head_b[t];
      p.block_forward_s = std::max(whole_f[t] - emb_f[t] - head_f[t], 0.0) / L;
      p.block_backward_s = std::max(whole_b[t] - emb_b[t] - head_b[t], 0.0) / L;
      p.block_activation_bytes = 4.0 * floats;  // the activations plus the block's input
      out[t].push_back(p);
    }
  }
  return out;
}

MeasuredUpdate MeasureUpdate(const GptConfig& model, int repeats) {
  GptStage whole(model, StageRange::Whole(model));
  whole.Init(1);
  std::vector<float>& grads = whole.grads();
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 1e-4f * static_cast<float>(i % 7);
  AdamW optimizer(AdamWConfig(), whole.tensors(), whole.params().size());
  std::vector<double> t;
  for (int k = 0; k <= repeats; ++k) {
    // As Trainer::Step: gradients zeroed before the passes, then the norm and the update.
    const auto t0 = Clock::now();
    whole.ZeroGrads();
    for (size_t i = 0; i < grads.size(); i += 64) grads[i] = 1e-4f;
    const double sum = SumOfSquares(grads.data(), grads.size());
    optimizer.Step(whole.params().data(), grads.data(), ClipScale(sum, 1.0));
    if (k > 0) t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return {static_cast<double>(whole.params().size()), Mean(t)};
}

namespace {

// Least squares of y/x = b + a/x over the points; writes a + b x back. See the header.
void FitSeries(const std::vector<double>& x, std::vector<double*> y) {
  const size_t n = x.size();
  double su = 0.0, sv = 0.0, suu = 0.0, suv = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double u = 1.0 / x[i], v = *y[i] / x[i];
    su += u;
    sv += v;
    suu += u * u;
    suv += u * v;
  }
  const double det = n * suu - su * su;
  double a = det > 0.0 ? (n * suv - su * sv) / det : 0.0;
  double b = det > 0.0 ? (sv - a * su) / n : sv / n;
  // A negative fixed part (a micro-batch cheaper per sequence the smaller it is) is noise,
  // not this model's compute, and a plan of many micro-batches would multiply it: a profile
  // fitted to a = -0.08 ms made the planner run a type alone in 24 micro-batches of 1, and
  // one fitted to +2.5 ms a moment later predicted that plan 16% slow. Then, as when the fit
  // is not positive at every size, no fixed part: the mean per-sequence time.
  bool positive = a >= 0.0;
  for (size_t i = 0; i < n; ++i) positive = positive && a + b * x[i] > 0.0;
  if (!positive) {
    a = 0.0;
    b = sv / n;
  }
  for (size_t i = 0; i < n; ++i) *y[i] = a + b * x[i];
}

}  // namespace

void FitOverMicroBatches(std::vector<MeasuredPart>* parts) {
  std::vector<double> x;
  for (const MeasuredPart& p : *parts) {
    if (std::find(x.begin(), x.end(), static_cast<double>(p.micro_batch)) != x.end()) return;
    x.push_back(p.micro_batch);
  }
  if (x.size() < 2) return;
  double MeasuredPart::*fields[] = {&MeasuredPart::block_forward_s,     &MeasuredPart::block_backward_s,
                                    &MeasuredPart::embedding_forward_s, &MeasuredPart::embedding_backward_s,
                                    &MeasuredPart::head_forward_s,      &MeasuredPart::head_backward_s};
  for (double MeasuredPart::*f : fields) {
    std::vector<double*> y;
    for (MeasuredPart& p : *parts) y.push_back(&(p.*f));
    FitSeries(x, y);
  }
}

std::string PlannerModelName(const GptConfig& m) {
  return "mixccl-gpt-L" + std::to_string(m.num_layers) + "-C" + std::to_string(m.channels) + "-H" +
         std::to_string(m.num_heads) + "-T" + std::to_string(m.seq_len) + "-V" +
         std::to_string(m.vocab_size);
}

std::string ProfileJson(const GptConfig& model, const ClusterSpec& cluster,
                        const std::vector<std::vector<MeasuredPart>>& parts_per_type,
                        double slowdown_base, const MeasuredUpdate& update) {
  nlohmann::ordered_json j;
  j["comment"] =
      "measured by mixccl-train --profile-out; each device type's times are the measured "
      "ones times its emulated slowdown (docs/training.md)";
  j["model"] = PlannerModelName(model);
  j["seq_length"] = model.seq_len;
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (size_t t = 0; t < cluster.device_types.size(); ++t) {
    const DeviceType& d = cluster.device_types[t];
    const double k = slowdown_base * EmulatedSlowdown(cluster, d.name, "", "");
    for (const MeasuredPart& p : parts_per_type[t]) {
      auto entry = [&](const char* part, double f, double b) {
        nlohmann::ordered_json e = {
            {"device_type", d.name}, {"tp", 1}, {"micro_batch", p.micro_batch}};
        if (part != nullptr) e["part"] = part;
        e["forward_ms"] = std::max(k * f * 1e3, 1e-6);
        e["backward_ms"] = std::max(k * b * 1e3, 1e-6);
        if (part == nullptr) e["activation_bytes"] = p.block_activation_bytes;
        entries.push_back(e);
      };
      entry(nullptr, p.block_forward_s, p.block_backward_s);
      entry("embedding", p.embedding_forward_s, p.embedding_backward_s);
      entry("head", p.head_forward_s, p.head_backward_s);
    }
    if (update.parameters > 0.0) {
      entries.push_back({{"device_type", d.name},
                         {"part", "update"},
                         {"parameters", update.parameters},
                         {"update_ms", update.seconds * 1e3}});
    }
  }
  j["entries"] = entries;
  return j.dump(2) + "\n";
}

std::string PlannerModelSpecJson(const GptConfig& m, int global_batch) {
  nlohmann::ordered_json j;
  j["comment"] = "mixccl-train's GPT as the planner sees it (written by --profile-out)";
  j["name"] = PlannerModelName(m);
  j["num_layers"] = m.num_layers;
  j["hidden_size"] = m.channels;
  j["ffn_hidden_size"] = 4 * m.channels;
  j["num_attention_heads"] = m.num_heads;
  j["num_kv_heads"] = m.num_heads;
  j["vocab_size"] = m.vocab_size;
  j["seq_length"] = m.seq_len;
  j["global_batch_size"] = global_batch;
  j["param_dtype"] = "fp32";
  j["grad_dtype"] = "fp32";
  j["optimizer"] = {{"type", "adam"}, {"zero1", false}};
  j["gated_mlp"] = false;
  j["flash_attention"] = false;
  j["tie_embeddings"] = false;
  return j.dump(2) + "\n";
}

}  // namespace mixccl::train
