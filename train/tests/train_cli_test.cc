// The mixccl-train binary: the log, the report, resume through the command line, bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "command_run.h"

namespace {

using mixccl_train_test::Slurp;
using TrainRun = mixccl_train_test::CommandResult;

std::string Temp(const std::string& name) { return mixccl_train_test::TempPath("mixccl_train", name); }

TrainRun Train(const std::string& args) {
  return mixccl_train_test::RunCommand(std::string(MIXCCL_TRAIN_BINARY) + " " + args, "mixccl_train");
}

// Small enough for a second on one core.
const std::string kSmall =
    " --layers 2 --channels 32 --heads 4 --seq-len 32 --global-batch 4 --micro-batches 2"
    " --lr 3e-3 --default-text-bytes 65536";

std::vector<double> Losses(const nlohmann::json& report) {
  std::vector<double> l;
  for (const auto& s : report["steps"]) l.push_back(s["loss"].get<double>());
  return l;
}

TEST(TrainCli, TrainsLogsAndReports) {
  const std::string report = Temp("report.json");
  const TrainRun r = Train("--steps 25" + kSmall + " --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step   25/25  loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" tok/s "), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(Slurp(report));
  EXPECT_EQ(j["schema"], "mixccl-train-report");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["model"]["num_layers"], 2);
  EXPECT_EQ(j["run"]["global_batch"], 4);
  EXPECT_EQ(j["run"]["data"], "generated text (65536 bytes)");
  ASSERT_EQ(j["steps"].size(), 25u);
  const std::vector<double> losses = Losses(j);
  EXPECT_LT(losses.back(), losses.front() - 1.0) << "the loss did not decrease";
  EXPECT_GT(j["summary"]["tokens_per_s"].get<double>(), 0.0);
  ASSERT_EQ(j["ranks"].size(), 1u);
  EXPECT_EQ(j["ranks"][0]["layers"], nlohmann::json::array({0, 2}));
  EXPECT_GT(j["ranks"][0]["peak_rss_bytes"].get<double>(), 1e6);
  std::remove(report.c_str());
}

TEST(TrainCli, ResumeContinuesTheSameLossCurve) {
  const std::string full = Temp("full.json"), part = Temp("part.json"), ckpt = Temp("ckpt");
  ASSERT_EQ(Train("--steps 6 --quiet" + kSmall + " --report " + full).exit_code, 0);
  ASSERT_EQ(Train("--steps 3 --quiet" + kSmall + " --checkpoint " + ckpt).exit_code, 0);
  const TrainRun r =
      Train("--steps 6 --quiet" + kSmall + " --resume " + ckpt + " --report " + part);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<double> expected = Losses(nlohmann::json::parse(Slurp(full)));
  const std::vector<double> resumed = Losses(nlohmann::json::parse(Slurp(part)));
  ASSERT_EQ(resumed.size(), 3u);  // steps 4..6
  for (int i = 0; i < 3; ++i) EXPECT_EQ(resumed[i], expected[3 + i]) << "step " << 4 + i;
  std::remove(full.c_str());
  std::remove(part.c_str());
  std::remove(ckpt.c_str());
}

TEST(TrainCli, BadInputIsRefusedWithAMessage) {
  TrainRun r = Train("--steps 2 --bogus");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "mixccl-train: unknown option '--bogus'");
  r = Train("--heads 5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            "mixccl-train: model config: num_heads must divide channels (64)");
  r = Train("--steps 1 --data /nonexistent/tokens.bin");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mixccl-train: /nonexistent/tokens.bin: cannot open the token file\n");
  r = Train("--global-batch 6 --micro-batches 4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mixccl-train: global batch 6 is not a multiple of the 4 micro-batches per step\n");
}

// The first 10 + header bytes of an .npy file: its header dictionary.
std::string NpyHeader(const std::string& path) {
  const std::string bytes = Slurp(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return "not an .npy file";
  const size_t length = static_cast<unsigned char>(bytes[8]) |
                        static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
  return bytes.substr(10, length);
}

TEST(TrainCli, DebugStateRecordsTheRunForTheCrossCheck) {
  const std::string dir = Temp("debug_state");
  const std::string report = Temp("debug_state_report.json");
  TrainRun r = Train("--quiet --steps 3" + kSmall + " --debug-state " + dir + " --report " +
                     report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rep = nlohmann::json::parse(Slurp(report));
  const nlohmann::json meta = nlohmann::json::parse(Slurp(dir + "/meta.json"));
  EXPECT_EQ(meta["schema"], "mixccl-train-debug-state");
  EXPECT_EQ(meta["loss"].get<std::vector<double>>(), Losses(rep));
  EXPECT_EQ(meta["adamw"]["learning_rate"].get<double>(), static_cast<double>(3e-3f));
  EXPECT_EQ(meta["logits_first_sequence"], 2);  // the last of 2 micro-batches of 2
  const std::string n = std::to_string(rep["model"]["parameters"].get<long long>());
  // Header dictionaries padded so that the data start at a multiple of 64 bytes.
  const std::string grads = NpyHeader(dir + "/grads.npy");
  EXPECT_EQ(grads.substr(0, grads.find('}') + 1),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (" + n + ",), }");
  EXPECT_EQ((10 + grads.size()) % 64, 0u);
  EXPECT_EQ(grads.back(), '\n');
  const std::string tokens = NpyHeader(dir + "/tokens.npy");
  EXPECT_EQ(tokens.substr(0, tokens.find('}') + 1),
            "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 4, 32), }");
  EXPECT_EQ(Slurp(dir + "/grads.npy").size(), 10 + grads.size() + 4 * std::stoull(n));
  EXPECT_EQ(Slurp(dir + "/start.ckpt").size(), 96 + 12 * std::stoull(n));

  r = Train("--steps 3 --debug-state " + dir + " --plan plan.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            "mixccl-train: --debug-state records a single process's training run: leave out "
            "--plan and --profile-out");
}

}  // namespace
