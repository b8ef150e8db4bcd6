// Emulated device speeds: the slowdown from the cluster spec's speeds, the idle after a timed
// compute, and mixccl-train's --cluster / --device-type (the report shows the emulated time).
#include "mixccl/train/speed_emulation.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace mixccl::train {
namespace {

const std::string kCluster = std::string(MIXCCL_TRAIN_EXAMPLES) + "/emulated/cpu-fast-slow.json";

TEST(SpeedEmulation, SlowdownIsTheFastestTypesSpeedOverThisOnes) {
  const ClusterSpec c = LoadClusterSpec(kCluster);
  EXPECT_DOUBLE_EQ(EmulatedSlowdown(c, "fast", "c.json", "x"), 1.0);
  EXPECT_DOUBLE_EQ(EmulatedSlowdown(c, "slow", "c.json", "x"), 2.0);
  try {
    EmulatedSlowdown(c, "medium", "c.json", "the plan's group 1 stage 0");
    FAIL() << "accepted an unknown device type";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "c.json: no device type \"medium\" (the plan's group 1 stage 0)");
  }
}

TEST(SpeedEmulation, ThreeSpeedsGiveTheirRatios) {
  // examples/emulated/cpu-three-speeds.json (accel_ratio.sh's three-type case): 3:2:1.
  const ClusterSpec c =
      LoadClusterSpec(std::string(MIXCCL_TRAIN_EXAMPLES) + "/emulated/cpu-three-speeds.json");
  ASSERT_EQ(c.device_types.size(), 3u);
  EXPECT_DOUBLE_EQ(EmulatedSlowdown(c, "fast", "c.json", "x"), 1.0);
  EXPECT_DOUBLE_EQ(EmulatedSlowdown(c, "medium", "c.json", "x"), 1.5);
  EXPECT_DOUBLE_EQ(EmulatedSlowdown(c, "slow", "c.json", "x"), 3.0);
}

TEST(SpeedEmulation, TypesWithThreadsAreNotEmulated) {
  // examples/emulated/cpu-threads.json: 'fast' 2 BLAS threads, 'slow' 1; both real speeds.
  const ClusterSpec c =
      LoadClusterSpec(std::string(MIXCCL_TRAIN_EXAMPLES) + "/emulated/cpu-threads.json");
  EXPECT_EQ(c.device_types[0].cpu_threads, 2);
  EXPECT_EQ(c.device_types[1].cpu_threads, 1);
  EXPECT_DOUBLE_EQ(EmulatedSlowdown(c, "fast", "c.json", "x"), 1.0);
  EXPECT_DOUBLE_EQ(EmulatedSlowdown(c, "slow", "c.json", "x"), 1.0);
}

TEST(SpeedEmulation, BlasThreadsTakeEffect) {
  const int before = BlasThreads();
  SetBlasThreads(2);
  EXPECT_EQ(BlasThreads(), 2);
  SetBlasThreads(1);
  EXPECT_EQ(BlasThreads(), 1);
  SetBlasThreads(before);
}

TEST(SpeedEmulation, SeveralThreadsAreTimedInWallTime) {
  // One thread: the thread's CPU time, which a sleep does not advance; several: wall time.
  const double cpu0 = ComputeSeconds(1), wall0 = ComputeSeconds(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_LT(ComputeSeconds(1) - cpu0, 0.01);
  EXPECT_GE(ComputeSeconds(2) - wall0, 0.029);
}

TEST(SpeedEmulation, IdlesForTheDifferenceToItsCpuTime) {
  // 4 ms of CPU at a third of the speed: 12 ms in all, of which 1 ms went by already.
  SlowdownIdler idler(3.0);
  const double idled = idler.Idle(0.004, 0.001);
  EXPECT_GE(idled, 0.011);  // sleeping lasts at least as long as asked
  EXPECT_LT(idled, 0.011 + 0.05);
  EXPECT_EQ(SlowdownIdler(1.0).Idle(0.004, 0.004), 0.0);
}

TEST(SpeedEmulation, AnIdlerPaysBackOvershootAndOverrun) {
  // Twenty 1 ms operations at a third of the speed: 40 ms of idle in all. Each sleep
  // overshoots a little; the idler shortens the next one, so the total stays within one
  // sleep's overshoot of the target instead of growing with the number of operations.
  SlowdownIdler idler(3.0);
  double total = 0.0;
  for (int i = 0; i < 20; ++i) total += idler.Idle(0.001, 0.001);
  EXPECT_GE(total, 0.040 - 1e-9);
  EXPECT_LT(total, 0.040 + 0.05);  // one overshoot, bounded as above (a loaded CI machine)
  // An operation preempted for 10 ms (1 ms of CPU, 11 ms of wall): its emulated 3 ms are
  // overrun by 8 ms, which the next idles (2 ms each) pay back: four get nothing.
  SlowdownIdler late(3.0);
  EXPECT_EQ(late.Idle(0.001, 0.011), 0.0);
  EXPECT_NEAR(late.behind_s(), 0.008, 1e-12);  // the report's emulation_behind_s
  for (int i = 0; i < 4; ++i) EXPECT_EQ(late.Idle(0.001, 0.001), 0.0) << i;
  EXPECT_NEAR(late.behind_s(), 0.0, 1e-12);  // paid back
  EXPECT_GT(late.Idle(0.001, 0.001), 0.0);
}

TEST(SpeedEmulation, ThreadCpuTimeAdvancesWithWorkNotWithSleep) {
  const double c0 = ThreadCpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double slept = ThreadCpuSeconds() - c0;
  EXPECT_LT(slept, 0.005);
  volatile double x = 0.0;
  for (int i = 0; i < 20000000; ++i) x = x + 1e-9 * i;
  EXPECT_GT(ThreadCpuSeconds() - c0, slept);
}

struct CliRun {
  int exit_code = -1;
  std::string err;
};

CliRun Train(const std::string& args) {
  const std::string err = ::testing::TempDir() + "/mixccl_speed_" + std::to_string(getpid());
  const int status =
      std::system((std::string(MIXCCL_TRAIN_BINARY) + " " + args + " >/dev/null 2>" + err).c_str());
  std::ifstream in(err);
  std::stringstream s;
  s << in.rdbuf();
  std::remove(err.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, s.str()};
}

const std::string kSmall =
    " --layers 2 --channels 32 --heads 4 --seq-len 32 --global-batch 4 --default-text-bytes 65536"
    " --steps 3";

TEST(SpeedEmulation, SlowDeviceTypeStretchesTheComputeInTheReport) {
  const std::string report = ::testing::TempDir() + "/mixccl_speed_report.json";
  const CliRun r =
      Train(kSmall + " --cluster " + kCluster + " --device-type slow --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(report);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::remove(report.c_str());
  EXPECT_EQ(j["ranks"][0]["slowdown"].get<double>(), 2.0);
  double compute = 0.0, emulated = 0.0;
  for (const auto& s : j["steps"]) {
    compute += s["compute_s"].get<double>();
    emulated += s["emulated_s"].get<double>();
    EXPECT_EQ(s["ranks"].size(), 1u);
  }
  // The slow device's operations last twice their CPU time: the idle adds up to the CPU
  // time minus what the wall clock lost to other processes, so it is at most the timed wall
  // part (within the last sleep's overshoot). How much of it is left depends on the machine's
  // load (on a busy one, none: a CI run saw 0), so only the bound is checked here; the speed
  // effect itself is measured by train/bench/accel_ratio.sh.
  EXPECT_GE(emulated, 0.0);
  EXPECT_LT(emulated, compute - emulated + 0.010);
  // What the machine's load kept the device from emulating is reported, and is part of the
  // compute time.
  const double behind = j["ranks"][0]["emulation_behind_s"].get<double>();
  EXPECT_GE(behind, 0.0);
  EXPECT_LT(behind, compute);
}

TEST(SpeedEmulation, OptionsThatDoNotFitAreRefused) {
  auto first_line = [](const CliRun& r) { return r.err.substr(0, r.err.find('\n')); };
  CliRun r = Train(kSmall + " --device-type slow");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(first_line(r),
            "mixccl-train: --device-type names a type of --cluster CLUSTER.json; give both");
  r = Train(kSmall + " --cluster " + kCluster);
  EXPECT_EQ(first_line(r),
            "mixccl-train: --cluster emulates device speeds: a single process needs "
            "--device-type NAME");
  r = Train(kSmall + " --cluster " + kCluster + " --device-type medium");
  EXPECT_EQ(r.err, "mixccl-train: " + kCluster + ": no device type \"medium\" (--device-type)\n");
  r = Train("--plan p.json --cluster " + kCluster + " --device-type slow");
  EXPECT_EQ(first_line(r),
            "mixccl-train: with --plan each rank's device type comes from the plan: leave out "
            "--device-type");
}

}  // namespace
}  // namespace mixccl::train
