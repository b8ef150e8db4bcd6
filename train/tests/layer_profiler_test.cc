// The profiling mode: mixccl-train --profile-out measures the model's parts per device type
// and mixccl-plan plans from the written profile and model spec; the profile's new parts
// (embedding, head) replace the analytic estimates of the cost model.
#include "mixccl/train/layer_profiler.h"
#include "mixccl/train/speed_emulation.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mixccl/train/cost_model.h"
#include "mixccl/train/model_spec.h"
#include "mixccl/train/profile.h"
#include "mixccl/train/spec_error.h"

namespace mixccl::train {
namespace {

const std::string kCluster = std::string(MIXCCL_TRAIN_EXAMPLES) + "/emulated/cpu-fast-slow.json";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Cmd {
  int exit_code = -1;
  std::string out, err;
};

Cmd Shell(const std::string& cmd) {
  const std::string base = ::testing::TempDir() + "/mixccl_prof_" + std::to_string(getpid());
  const int status = std::system((cmd + " >" + base + ".out 2>" + base + ".err").c_str());
  Cmd r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(base + ".out"), Slurp(base + ".err")};
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

TEST(LayerProfiler, ThePlannerPlansFromTheWrittenProfile) {
  const std::string dir = ::testing::TempDir() + "/mixccl_prof_" + std::to_string(getpid());
  const std::string profile = dir + "_profile.json", model = dir + "_model.json";
  Cmd r = Shell(std::string(MIXCCL_TRAIN_BINARY) +
                " --layers 3 --channels 32 --heads 4 --seq-len 32 --global-batch 16 --quiet"
                " --profile-micro-batches 1,4 --cluster " +
                kCluster + " --profile-out " + profile + " --model-spec-out " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json p = nlohmann::json::parse(Slurp(profile));
  EXPECT_EQ(p["model"], "mixccl-gpt-L3-C32-H4-T32-V256");
  // 2 types x (2 micro-batch sizes x (layer, embedding, head), update)
  ASSERT_EQ(p["entries"].size(), 14u);
  for (size_t i = 0; i < 14; ++i) {
    EXPECT_EQ(p["entries"][i]["device_type"], i < 7 ? "fast" : "slow");
    if (i % 7 == 6) {
      // The update is not emulated: both types carry the one measurement of the whole model.
      EXPECT_EQ(p["entries"][i]["part"], "update");
      EXPECT_EQ(p["entries"][i]["parameters"].get<double>(), 55584.0);  // L3 C32 V256 T32
      EXPECT_GT(p["entries"][i]["update_ms"].get<double>(), 0.0);
      EXPECT_EQ(p["entries"][i]["update_ms"], p["entries"][6]["update_ms"]);
    } else {
      EXPECT_GT(p["entries"][i]["forward_ms"].get<double>(), 0.0);
    }
  }
  r = Shell(std::string(MIXCCL_PLAN_BINARY) + " --model " + model + " --cluster " + kCluster +
            " --profile " + profile + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json plan = nlohmann::json::parse(r.out);
  EXPECT_FALSE(plan["stages"].empty());
  std::remove(profile.c_str());
  std::remove(model.c_str());
}

MeasuredPart Part(int mb, double block_f, double head_b) {
  MeasuredPart p;
  p.micro_batch = mb;
  p.block_forward_s = block_f;
  p.block_backward_s = 2.0 * block_f;
  p.embedding_forward_s = p.embedding_backward_s = 1e-4 * mb;
  p.head_forward_s = 0.5 * head_b;
  p.head_backward_s = head_b;
  return p;
}

TEST(LayerProfiler, FitOverMicroBatchesKeepsAnAffineCostAndEvensOutNoise) {
  // Exactly affine times (0.5 ms + 1 ms per sequence) come back unchanged.
  std::vector<MeasuredPart> exact;
  for (int mb : {1, 2, 4, 8}) exact.push_back(Part(mb, 0.0005 + 0.001 * mb, 0.002 * mb));
  FitOverMicroBatches(&exact);
  for (const MeasuredPart& p : exact) {
    EXPECT_NEAR(p.block_forward_s, 0.0005 + 0.001 * p.micro_batch, 1e-12) << p.micro_batch;
    EXPECT_NEAR(p.block_backward_s, 2.0 * (0.0005 + 0.001 * p.micro_batch), 1e-12);
    EXPECT_NEAR(p.head_backward_s, 0.002 * p.micro_batch, 1e-12);
    EXPECT_NEAR(p.embedding_forward_s, 1e-4 * p.micro_batch, 1e-12);
  }
  // One size timed at a busy moment (+25% at 6): after the fit no size's per-sequence time
  // is off by more than a few percent, where the raw point made 6 look 25% dearer than 4.
  std::vector<MeasuredPart> noisy;
  for (int mb : {1, 2, 3, 4, 6, 8, 12, 24}) {
    const double t = 0.001 * mb * (mb == 6 ? 1.25 : 1.0);
    noisy.push_back(Part(mb, t, t));
  }
  FitOverMicroBatches(&noisy);
  for (const MeasuredPart& p : noisy) {
    EXPECT_NEAR(p.block_forward_s / p.micro_batch, 0.001, 0.001 * 0.05) << p.micro_batch;
  }
  // A single size is left as measured.
  std::vector<MeasuredPart> one = {Part(4, 0.007, 0.003)};
  FitOverMicroBatches(&one);
  EXPECT_EQ(one[0].block_forward_s, 0.007);
  // A fit that would go negative at the smallest size keeps the mean per-sequence time.
  std::vector<MeasuredPart> steep = {Part(1, 1e-6, 0.001), Part(2, 2e-6, 0.002),
                                     Part(4, 0.008, 0.004)};
  FitOverMicroBatches(&steep);
  const double mean = (1e-6 + 1e-6 + 0.002) / 3.0;
  for (const MeasuredPart& p : steep) {
    EXPECT_NEAR(p.block_forward_s, mean * p.micro_batch, 1e-12) << p.micro_batch;
  }
  // So does a negative fixed part, even one positive at every size: 1.5, 3.5 and 7.5 ms at
  // 1, 2 and 4 sequences (-0.5 + 2 x) would make one sequence look cheapest per sequence.
  std::vector<MeasuredPart> falling = {Part(1, 1.5e-3, 0.001), Part(2, 3.5e-3, 0.002),
                                       Part(4, 7.5e-3, 0.004)};
  FitOverMicroBatches(&falling);
  const double per = (1.5e-3 + 3.5e-3 / 2 + 7.5e-3 / 4) / 3.0;
  for (const MeasuredPart& p : falling) {
    EXPECT_NEAR(p.block_forward_s, per * p.micro_batch, 1e-12) << p.micro_batch;
  }
}

// Two blocks of 32 channels over 16 tokens: quick to time.
GptConfig SmallModel() {
  GptConfig c;
  c.num_layers = 2;
  c.channels = 32;
  c.num_heads = 4;
  c.seq_len = 16;
  return c;
}

TEST(LayerProfiler, TypesAreMeasuredInTurnsOnTheSameWork) {
  // Every type runs the same operations (CPU time before the slowdown), in turns repeat by
  // repeat: their times differ by the machine's noise only, not by when each was measured.
  const GptConfig c = SmallModel();
  ProfilerOptions o;
  o.micro_batches = {1, 4};
  o.repeats = 4;
  const auto parts = MeasureParts(c, o, {1.0, 2.0, 1.5});
  ASSERT_EQ(parts.size(), 3u);
  for (const auto& type : parts) {
    ASSERT_EQ(type.size(), 2u);
    EXPECT_EQ(type[0].micro_batch, 1);
    EXPECT_EQ(type[1].micro_batch, 4);
    for (size_t i = 0; i < 2; ++i) {
      const double a = type[i].block_forward_s + type[i].block_backward_s;
      const double b = parts[0][i].block_forward_s + parts[0][i].block_backward_s;
      EXPECT_GT(a, 0.0);
      EXPECT_LT(std::max(a, b) / std::min(a, b), 2.0) << "size " << type[i].micro_batch;
    }
  }
}

TEST(LayerProfiler, TypesWithThreadsTakeTheirTurnsWithThemAndTheCountIsRestored) {
  const GptConfig c = SmallModel();
  ProfilerOptions o;
  o.micro_batches = {2};
  o.repeats = 2;
  const int before = BlasThreads();
  const auto parts = MeasureParts(c, o, {1.0, 1.0}, {2, 0});
  EXPECT_EQ(BlasThreads(), before);
  ASSERT_EQ(parts.size(), 2u);
  for (const auto& type : parts) {
    ASSERT_EQ(type.size(), 1u);
    EXPECT_GT(type[0].block_forward_s + type[0].block_backward_s, 0.0);
  }
}

TEST(LayerProfiler, EachTypesTimesAreItsMeasurementTimesItsSlowdown) {
  const ClusterSpec cluster = LoadClusterSpec(kCluster);  // fast 1, slow 2
  MeasuredPart a;
  a.micro_batch = 2;
  a.block_forward_s = 1e-3;
  a.block_backward_s = 2e-3;
  a.head_forward_s = 3e-3;
  MeasuredPart b = a;
  b.block_forward_s = 1.5e-3;
  const nlohmann::json j =
      nlohmann::json::parse(ProfileJson(GptConfig(), cluster, {{a}, {b}}, /*base=*/3.0));
  ASSERT_EQ(j["entries"].size(), 6u);
  EXPECT_DOUBLE_EQ(j["entries"][0]["forward_ms"].get<double>(), 3.0);  // 1 ms x 1 x 3
  EXPECT_DOUBLE_EQ(j["entries"][0]["backward_ms"].get<double>(), 6.0);
  EXPECT_EQ(j["entries"][2]["part"], "head");
  EXPECT_DOUBLE_EQ(j["entries"][2]["forward_ms"].get<double>(), 9.0);
  EXPECT_EQ(j["entries"][3]["device_type"], "slow");
  EXPECT_DOUBLE_EQ(j["entries"][3]["forward_ms"].get<double>(), 9.0);  // 1.5 ms x 2 x 3
}

TEST(LayerProfiler, ProfiledHeadAndEmbeddingReplaceTheEstimate) {
  const LayerProfile profile = ParseProfile(R"({"entries": [
    {"device_type": "fast", "tp": 1, "micro_batch": 2, "forward_ms": 1, "backward_ms": 2},
    {"device_type": "fast", "tp": 1, "micro_batch": 2, "part": "head", "forward_ms": 3,
     "backward_ms": 4},
    {"device_type": "fast", "tp": 1, "micro_batch": 2, "part": "embedding", "forward_ms": 5,
     "backward_ms": 6, "activation_bytes": 100}]})",
                                            "p.json");
  const ClusterSpec cluster = LoadClusterSpec(kCluster);
  const ModelSpec model = ParseModelSpec(PlannerModelSpecJson(GptConfig(), 8), "m.json");
  const CostModel cost(model, cluster, &profile);
  EXPECT_DOUBLE_EQ(cost.Layer(0, 1, 2).forward_s, 1e-3);
  EXPECT_DOUBLE_EQ(cost.Head(0, 1, 2).backward_s, 4e-3);
  EXPECT_DOUBLE_EQ(cost.Embedding(0, 1, 4).forward_s, 10e-3);  // scaled with the micro-batch
  EXPECT_GT(cost.Head(1, 1, 2).forward_s, 0.0);                // "slow": the estimate
  try {
    ParseProfile(R"({"entries": [{"device_type": "fast", "tp": 1, "micro_batch": 2,
      "part": "tail", "forward_ms": 1, "backward_ms": 2}]})",
                 "p.json");
    FAIL() << "accepted an unknown part";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(),
                 "profile p.json entries[0]: 'part' must be \"layer\", \"embedding\", \"head\", "
                 "\"pass\", \"message\" or \"update\", not \"tail\"");
  }
}

TEST(LayerProfiler, OptionsThatDoNotFitAreRefused) {
  const std::string train = MIXCCL_TRAIN_BINARY;
  auto first_line = [](const Cmd& r) { return r.err.substr(0, r.err.find('\n')); };
  Cmd r = Shell(train + " --profile-out p.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(first_line(r),
            "mixccl-train: --profile-out measures the device types of --cluster CLUSTER.json in "
            "one process: give --cluster, not --plan");
  r = Shell(train + " --model-spec-out m.json");
  EXPECT_EQ(first_line(r),
            "mixccl-train: --model-spec-out is written by the profiling mode: give --profile-out "
            "too");
  r = Shell(train + " --profile-out p.json --cluster " + kCluster + " --profile-micro-batches 1,x");
  EXPECT_EQ(first_line(r), "mixccl-train: --profile-micro-batches wants an integer >= 1, got 'x'");
}

}  // namespace
}  // namespace mixccl::train
