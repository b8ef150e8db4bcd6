// --survive's parts that need no job: which ranks a failure lost, the survivors' plan, and the
// options a recovery could not serve (train/tests/survive_test.py runs a job that loses a rank).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "command_run.h"
#include "mixccl/train/lost_ranks.h"
#include "mixccl/train/survivors_plan.h"

namespace {

using namespace mixccl::train;

std::string HostName() {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A child that ends at once (a zombie until reaped) or sleeps until killed.
pid_t Child(bool ends) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!ends) pause();
    _exit(0);
  }
  return pid;
}

TEST(LostRanks, MessagesNameTheFailedProcesses) {
  // mixccl's two forms: a peer's notice and a closed connection; "reported by" is not a failure.
  const std::vector<NamedProcess> named = FailedProcessesInMessage(
      "mixcclAllReduce (gradients) failed: remote process exited or there was a network error: "
      "rank 0: rank 1 (vm pid 29778) failed (reported by rank 2 (vm pid 29779)); rank 0: "
      "connection to rank 2 (host-b pid 30857) failed: it closed the connection");
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].host, "vm");
  EXPECT_EQ(named[0].pid, 29778);
  EXPECT_EQ(named[1].host, "host-b");
  EXPECT_EQ(named[1].pid, 30857);
  EXPECT_TRUE(FailedProcessesInMessage("rank 0: mixcclCommAbort was called").empty());
}

TEST(LostRanks, AnEndedProcessOfThisHostIsLostARunningOneIsNot) {
  const pid_t ended = Child(true), running = Child(false);
  const std::uint32_t here = HostNameHash(HostName());
  // Ranks 0 (this process), 1 (ended), 2 (running), 3 (another host's process).
  const std::vector<JobProcess> job = {{here, getpid()}, {here, ended}, {here, running},
                                       {HostNameHash("elsewhere"), 4242}};
  const std::string h = HostName();
  EXPECT_FALSE(ProcessEnded(getpid()));
  EXPECT_FALSE(ProcessEnded(running));
  // The ended child is found at once, named or not.
  auto t = std::chrono::steady_clock::now();
  EXPECT_EQ(LostRanks("rank 1 (" + h + " pid " + std::to_string(ended) + ") failed", job, 0, 5.0),
            std::vector<int>{1});
  EXPECT_EQ(LostRanks("something else failed", job, 0, 5.0), std::vector<int>{1});
  EXPECT_LT(std::chrono::steady_clock::now() - t, std::chrono::seconds(2));
  // A named process that keeps running (a survivor that gave up a communicator) is waited for
  // the grace and then not counted; another host's process is taken at mixccl's word.
  t = std::chrono::steady_clock::now();
  EXPECT_EQ(LostRanks("rank 2 (" + h + " pid " + std::to_string(running) + ") failed; rank 3 "
                      "(elsewhere pid 4242) failed", job, 0, 0.3),
            (std::vector<int>{1, 3}));
  EXPECT_GE(std::chrono::steady_clock::now() - t, std::chrono::milliseconds(300));
  kill(running, SIGKILL);
  waitpid(running, nullptr, 0);
  waitpid(ended, nullptr, 0);
  EXPECT_TRUE(ProcessEnded(ended));  // reaped: gone
}

GptConfig SmallModel() {
  GptConfig m;
  m.num_layers = 2;
  m.channels = 32;
  m.num_heads = 4;
  m.seq_len = 16;
  return m;
}

TEST(SurvivorsPlan, KeepsTheGlobalBatchAndTheSurvivorsOrder) {
  const std::string path = std::string(MIXCCL_TRAIN_TEST_DATA) + "/survive/cluster_3.json";
  const std::string cluster = ReadFile(path);
  const std::string cut = SurvivorsClusterJson(cluster, path, {"fast", "slow"});
  EXPECT_NE(cut.find("\"name\": \"three-replicas survivors\""), std::string::npos) << cut;
  const SurvivorsPlan p = PlanForSurvivors(SmallModel(), 10, cluster, path, {"fast", "slow"});
  ASSERT_EQ(p.plan.num_ranks(), 2);
  EXPECT_EQ(p.plan.global_batch, 10);
  EXPECT_EQ(RoleOfRank(p.plan, 0).device_type, "fast");
  EXPECT_EQ(RoleOfRank(p.plan, 1).device_type, "slow");
  // The plan file the trainer reads back is the one taken.
  EXPECT_EQ(ParseExecPlan(p.plan_json, "plan").num_ranks(), 2);
  int slot = 0;
  for (int r = 0; r < 2; ++r) {
    if (RoleOfRank(p.plan, r).stage == 0) slot += RoleOfRank(p.plan, r).micro_batch;
  }
  EXPECT_EQ(slot * p.plan.micro_batches, 10);
  // Two fast survivors: the slow type is dropped from the spec.
  const SurvivorsPlan fast = PlanForSurvivors(SmallModel(), 10, cluster, path, {"fast", "fast"});
  EXPECT_EQ(fast.cluster_json.find("\"slow\""), std::string::npos) << fast.cluster_json;
  EXPECT_EQ(fast.plan.num_ranks(), 2);
}

TEST(SurvivorsPlan, NoPlanInTheSurvivorsOrderIsAnError) {
  // A device type is in one group, whose ranks are consecutive (rank_map.h): no plan puts slow
  // between two fast ranks.
  const std::string path = std::string(MIXCCL_TRAIN_TEST_DATA) + "/survive/cluster_3.json";
  try {
    PlanForSurvivors(SmallModel(), 10, ReadFile(path), path, {"fast", "slow", "fast"});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(std::regex_match(
        e.what(), std::regex("the planner found no plan for the survivors' devices fast,slow,fast "
                             "in this order using all 3 \\(its [0-9]+ plans use [0-9,]+ ranks\\)")))
        << e.what();
  }
}

mixccl_train_test::CommandResult Train(const std::string& args) {
  return mixccl_train_test::RunCommand(std::string(MIXCCL_TRAIN_BINARY) + " " + args,
                                       "mixccl_survive");
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(SurviveCli, OptionsARecoveryCannotServeAreRefused) {
  const std::string data = std::string(MIXCCL_TRAIN_TEST_DATA) + "/survive/";
  auto r = Train("--survive dir --plan " + data + "replicas_3.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(FirstLine(r.err),
            "mixccl-train: --survive DIR keeps a job going when ranks are lost: it needs --plan "
            "PLAN.json and --cluster CLUSTER.json (the survivors re-plan for the device types "
            "left)");
  r = Train("--survive dir --zero1 --plan " + data + "replicas_3.json --cluster " + data +
            "cluster_3.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(FirstLine(r.err),
            "mixccl-train: --survive needs every replica to hold its stage's whole optimizer "
            "state: leave out --zero1");
  // A tensor-parallel plan, refused before the rank joins the job (no rendezvous happens).
  const std::string tp_plan = mixccl_train_test::TempPath("mixccl_survive", "tp2.json");
  std::ofstream(tp_plan) << R"({"global_batch_size": 4, "seq_length": 16, "micro_batches": 1,
    "stages": [{"group": 0, "stage": 0, "device_type": "fast", "layers": [0, 2], "tp": 2,
                "dp": 1, "micro_batch": 4}]})";
  r = mixccl_train_test::RunCommand(
      "MIXCCL_RANK=0 MIXCCL_NRANKS=2 MIXCCL_COMM_ID=127.0.0.1:1 " +
          std::string(MIXCCL_TRAIN_BINARY) +
          " --layers 2 --channels 32 --heads 4 --seq-len 16 --survive dir --plan " + tp_plan +
          " --cluster " + data + "cluster_3.json",
      "mixccl_survive");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mixccl-train: " + tp_plan +
                       ": --survive runs plans of tp 1 (a tensor-parallel stage's state is split "
                       "over its ranks)\n");
  std::remove(tp_plan.c_str());
}

}  // namespace
