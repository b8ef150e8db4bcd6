// The mixccl-plan binary on the shipped examples and on bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "command_run.h"

namespace {

using mixccl_train_test::Slurp;
using CliRun = mixccl_train_test::CommandResult;

CliRun Plan(const std::string& args) {
  return mixccl_train_test::RunCommand(std::string(MIXCCL_PLAN_BINARY) + " " + args, "mixccl_plan");
}

std::string Example(const std::string& kind, const std::string& name) {
  return std::string(MIXCCL_TRAIN_EXAMPLES) + "/" + kind + "/" + name + ".json";
}

void CheckPlanJson(const nlohmann::json& plan, int layers, int batch) {
  ASSERT_TRUE(plan.contains("predicted"));
  for (const char* key : {"step_time_s", "tokens_per_s", "balance"}) {
    ASSERT_TRUE(plan["predicted"].contains(key)) << key;
    EXPECT_GT(plan["predicted"][key].get<double>(), 0.0) << key;
  }
  EXPECT_GE(plan["predicted"]["balance"].get<double>(), 1.0);
  const int m = plan["micro_batches"].get<int>();
  std::map<int, int> covered;
  long sequences = 0;
  for (const auto& s : plan["stages"]) {
    for (const char* key : {"device_type", "num_devices", "layers", "tp", "dp", "micro_batch",
                            "recompute", "memory_gib"}) {
      ASSERT_TRUE(s.contains(key)) << key;
    }
    const int group = s["group"].get<int>();
    const int first = s["layers"][0].get<int>(), last = s["layers"][1].get<int>();
    EXPECT_LT(first, last);
    if (first == covered[group]) covered[group] = last;
    EXPECT_EQ(last, covered[group]);
    EXPECT_EQ(s["num_devices"].get<int>(), s["tp"].get<int>() * s["dp"].get<int>());
    if (s["stage"].get<int>() == 0) {
      sequences += static_cast<long>(s["dp"].get<int>()) * s["micro_batch"].get<int>() * m;
    }
  }
  for (const auto& [group, end] : covered) EXPECT_EQ(end, layers) << "group " << group;
  EXPECT_EQ(sequences, batch);
}

TEST(Cli, EveryExampleGivesAValidJsonPlan) {
  const std::pair<const char*, int> models[] = {
      {"llama2-7b", 32}, {"llama2-13b", 40}, {"tiny-llama", 8}};
  const std::pair<const char*, int> batches[] = {
      {"llama2-7b", 1024}, {"llama2-13b", 1024}, {"tiny-llama", 32}};
  for (int i = 0; i < 3; ++i) {
    for (const char* cluster : {"h100-16", "h100-a100", "h100-a100-v100"}) {
      SCOPED_TRACE(std::string(models[i].first) + " on " + cluster);
      const CliRun r = Plan("--json --model " + Example("models", models[i].first) + " --cluster " +
                            Example("clusters", cluster));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const nlohmann::json j = nlohmann::json::parse(r.out);
      CheckPlanJson(j, models[i].second, batches[i].second);
      ASSERT_TRUE(j["alternatives"].is_array());
      EXPECT_EQ(j["alternatives"].size(), 2u);
      for (const auto& alt : j["alternatives"]) {
        CheckPlanJson(alt, models[i].second, batches[i].second);
        EXPECT_GE(alt["predicted"]["step_time_s"].get<double>(),
                  j["predicted"]["step_time_s"].get<double>());
      }
    }
  }
}

TEST(Cli, TableTopAndProfile) {
  const CliRun r = Plan("--model " + Example("models", "llama2-7b") + " --cluster " +
                        Example("clusters", "h100-a100") + " --top 4 --profile " +
                        Example("profiles", "llama2-7b-h100-a100"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos);
  EXPECT_NE(r.out.find("#4 step"), std::string::npos);
  EXPECT_EQ(r.out.find("#5 step"), std::string::npos);
}

TEST(Cli, NothingFitsExitsWithTwoAndSaysByHowMuch) {
  const CliRun r = Plan("--model " + Example("models", "llama2-13b") + " --cluster " +
                        std::string(MIXCCL_TRAIN_TEST_DATA) + "/workstation-2x24.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no plan fits in device memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("short by"), std::string::npos) << r.err;
  const CliRun j = Plan("--json --model " + Example("models", "llama2-13b") + " --cluster " +
                        std::string(MIXCCL_TRAIN_TEST_DATA) + "/workstation-2x24.json");
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_NE(nlohmann::json::parse(j.out)["error"].get<std::string>().find("short by"),
            std::string::npos);
}

TEST(Cli, BadInputExitsWithOne) {
  EXPECT_EQ(Plan("--model " + Example("models", "llama2-7b")).exit_code, 1);
  EXPECT_EQ(Plan("--bogus").exit_code, 1);
  EXPECT_EQ(Plan("--model " + Example("models", "llama2-7b") + " --cluster " +
                 Example("clusters", "h100-16") + " --top 0")
                .exit_code,
            1);
  const CliRun r = Plan("--model /nonexistent.json --cluster " + Example("clusters", "h100-16"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open '/nonexistent.json'"), std::string::npos) << r.err;
  // A model file given as the cluster: the unknown fields are named.
  const CliRun swapped = Plan("--model " + Example("models", "llama2-7b") + " --cluster " +
                              Example("models", "llama2-7b"));
  EXPECT_EQ(swapped.exit_code, 1);
  EXPECT_NE(swapped.err.find("unknown field"), std::string::npos) << swapped.err;
}

}  // namespace
