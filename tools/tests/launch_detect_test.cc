// Rank and rendezvous detection of mixccl_launch from the launchers' environment variables.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "mixccl_launch.h"

namespace {

const char* kVars[] = {"MIXCCL_RANK",          "MIXCCL_NRANKS",        "MIXCCL_LOCAL_RANK",
                       "MIXCCL_LOCAL_SIZE",    "MIXCCL_COMM_ID",       "OMPI_COMM_WORLD_RANK",
                       "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                       "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                       "SLURM_LOCALID",        "SLURM_NTASKS_PER_NODE", "RANK", "WORLD_SIZE",
                       "LOCAL_RANK",           "LOCAL_WORLD_SIZE",     "MASTER_ADDR",
                       "MASTER_PORT"};

class LaunchDetect : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) unsetenv(v);
  }
  void TearDown() override {
    for (const char* v : kVars) unsetenv(v);
  }
};

TEST_F(LaunchDetect, NoLauncherIsOneRank) {
  mixcclLaunchInfo info;
  ASSERT_EQ(mixcclLaunchDetect(&info), 0) << mixcclLaunchLastError();
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.nranks, 1);
  EXPECT_STREQ(info.launcher, "none");
  EXPECT_STREQ(info.commId, "");
}

TEST_F(LaunchDetect, Mixcclrun) {
  setenv("MIXCCL_RANK", "2", 1);
  setenv("MIXCCL_NRANKS", "4", 1);
  setenv("MIXCCL_LOCAL_RANK", "2", 1);
  setenv("MIXCCL_LOCAL_SIZE", "4", 1);
  setenv("MIXCCL_COMM_ID", "127.0.0.1:5555", 1);
  // A stale torchrun variable must not win over mixcclrun's.
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "8", 1);
  mixcclLaunchInfo info;
  ASSERT_EQ(mixcclLaunchDetect(&info), 0) << mixcclLaunchLastError();
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.nranks, 4);
  EXPECT_EQ(info.localRank, 2);
  EXPECT_EQ(info.localSize, 4);
  EXPECT_STREQ(info.launcher, "mixcclrun");
  EXPECT_STREQ(info.commId, "127.0.0.1:5555");
}

TEST_F(LaunchDetect, OpenMpi) {
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
  mixcclLaunchInfo info;
  ASSERT_EQ(mixcclLaunchDetect(&info), 0) << mixcclLaunchLastError();
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.nranks, 3);
  EXPECT_EQ(info.localRank, 0);
  EXPECT_EQ(info.localSize, 1);
  EXPECT_STREQ(info.launcher, "mpirun");
  EXPECT_STREQ(info.commId, "");
}

TEST_F(LaunchDetect, Slurm) {
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "8", 1);
  setenv("SLURM_LOCALID", "1", 1);
  setenv("SLURM_NTASKS_PER_NODE", "4(x2)", 1);  // not a plain number: local size unknown
  mixcclLaunchInfo info;
  ASSERT_EQ(mixcclLaunchDetect(&info), 0) << mixcclLaunchLastError();
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.nranks, 8);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localSize, -1);
  EXPECT_STREQ(info.launcher, "srun");
}

TEST_F(LaunchDetect, TorchrunUsesMasterPortPlusOne) {
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "node7", 1);
  setenv("MASTER_PORT", "29500", 1);
  mixcclLaunchInfo info;
  ASSERT_EQ(mixcclLaunchDetect(&info), 0) << mixcclLaunchLastError();
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.nranks, 4);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localSize, 2);
  EXPECT_STREQ(info.launcher, "torchrun");
  EXPECT_STREQ(info.commId, "node7:29501");
  // An explicit MIXCCL_COMM_ID wins.
  setenv("MIXCCL_COMM_ID", "10.0.0.1:4000", 1);
  ASSERT_EQ(mixcclLaunchDetect(&info), 0);
  EXPECT_STREQ(info.commId, "10.0.0.1:4000");
}

TEST_F(LaunchDetect, TorchrunWithoutMasterIsAnError) {
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  mixcclLaunchInfo info;
  EXPECT_EQ(mixcclLaunchDetect(&info), -1);
  EXPECT_NE(std::string(mixcclLaunchLastError()).find("MASTER_ADDR"), std::string::npos);
  setenv("MASTER_ADDR", "h", 1);
  setenv("MASTER_PORT", "65535", 1);  // +1 is not a port
  EXPECT_EQ(mixcclLaunchDetect(&info), -1);
}

TEST_F(LaunchDetect, InvalidValues) {
  mixcclLaunchInfo info;
  setenv("MIXCCL_RANK", "x", 1);
  setenv("MIXCCL_NRANKS", "2", 1);
  EXPECT_EQ(mixcclLaunchDetect(&info), -1);
  setenv("MIXCCL_RANK", "2", 1);  // not below the size
  EXPECT_EQ(mixcclLaunchDetect(&info), -1);
  EXPECT_NE(std::string(mixcclLaunchLastError()).find("not below"), std::string::npos);
  setenv("MIXCCL_RANK", "1", 1);
  unsetenv("MIXCCL_NRANKS");
  EXPECT_EQ(mixcclLaunchDetect(&info), -1);
  setenv("MIXCCL_NRANKS", "2", 1);
  setenv("MIXCCL_COMM_ID", "nocolon", 1);
  EXPECT_EQ(mixcclLaunchDetect(&info), -1);
  setenv("MIXCCL_COMM_ID", "host:99999", 1);
  EXPECT_EQ(mixcclLaunchDetect(&info), -1);
  setenv("MIXCCL_COMM_ID", "[::1]:1234", 1);
  EXPECT_EQ(mixcclLaunchDetect(&info), 0) << mixcclLaunchLastError();
  EXPECT_EQ(mixcclLaunchDetect(nullptr), -1);
}

}  // namespace
