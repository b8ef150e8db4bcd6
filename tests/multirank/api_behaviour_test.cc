// Behaviour of the public API across real ranks: bad input, destroyed handles, groups, split,
// InitAll, MIXCCL_COMM_ID rendezvous, dead peers, timeouts and abort.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

extern "C" {
#include "rank_harness.h"
}
#include "rank_check.h"

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}


bool allReduceWorks(mixcclComm_t comm, int nranks) {
  std::vector<int> buf(5, 1);
  if (mixcclAllReduce(buf.data(), buf.data(), buf.size(), mixcclInt, mixcclSum, comm, nullptr) !=
      mixcclSuccess)
    return false;
  for (int v : buf)
    if (v != nranks) return false;
  return true;
}

int badInputRank(mixcclComm_t comm, int rank, int nranks, void*) {
  float x[4] = {1, 2, 3, 4}, y[4];
  auto expectError = [&](mixcclResult_t got, mixcclResult_t want, const char* mention) {
    if (got != want) return false;
    std::string msg = mixcclGetLastError(comm);
    if (msg.empty()) msg = mixcclGetLastError(nullptr);
    return msg.find(mention) != std::string::npos;
  };
  RANK_CHECK(expectError(mixcclAllReduce(x, y, 4, (mixcclDataType_t)99, mixcclSum, comm, nullptr),
                    mixcclInvalidArgument, "datatype"));
  RANK_CHECK(expectError(mixcclAllReduce(x, y, 4, mixcclFloat, (mixcclRedOp_t)42, comm, nullptr),
                    mixcclInvalidArgument, "op"));
  RANK_CHECK(expectError(mixcclAllReduce(nullptr, y, 4, mixcclFloat, mixcclSum, comm, nullptr),
                    mixcclInvalidArgument, "sendbuff"));
  RANK_CHECK(expectError(mixcclAllReduce(x, y, SIZE_MAX / 2, mixcclFloat, mixcclSum, comm, nullptr),
                    mixcclInvalidArgument, "overflow"));
  RANK_CHECK(expectError(mixcclBroadcast(x, y, 4, mixcclFloat, nranks, comm, nullptr),
                    mixcclInvalidArgument, "root"));
  RANK_CHECK(expectError(mixcclReduce(x, y, 4, mixcclFloat, mixcclSum, -1, comm, nullptr),
                    mixcclInvalidArgument, "root"));
  RANK_CHECK(expectError(mixcclSend(x, 4, mixcclFloat, nranks + 3, comm, nullptr),
                    mixcclInvalidArgument, "peer"));
  RANK_CHECK(expectError(mixcclAllReduce(x, y, 4, mixcclFloat, mixcclSum, comm, (void*)0x1),
                    mixcclInvalidArgument, "stream"));
  RANK_CHECK(mixcclAllReduce(x, y, 4, mixcclFloat, mixcclSum, nullptr, nullptr) ==
        mixcclInvalidArgument);
  RANK_CHECK(mixcclGroupEnd() == mixcclInvalidUsage);
  // Zero counts may come with NULL buffers.
  RANK_CHECK(mixcclAllReduce(nullptr, nullptr, 0, mixcclFloat, mixcclSum, comm, nullptr) ==
        mixcclSuccess);
  // And after all that, the communicator still works.
  RANK_CHECK(allReduceWorks(comm, nranks));
  return 0;
}

TEST(ApiBehaviour, BadInputGivesClearErrorsAndLeavesCommUsable) {
  EXPECT_EQ(runRanks(3, badInputRank, nullptr, 60), 0);
}

TEST(ApiBehaviour, DestroyedCommIsRefused) {
  mixcclComm_t comms[2];
  ASSERT_EQ(mixcclCommInitAll(comms, 2, nullptr), mixcclSuccess);
  ASSERT_EQ(mixcclCommDestroy(comms[0]), mixcclSuccess);
  ASSERT_EQ(mixcclCommDestroy(comms[1]), mixcclSuccess);
  int count = 0;
  EXPECT_EQ(mixcclCommCount(comms[0], &count), mixcclInvalidUsage);
  float x = 1;
  EXPECT_EQ(mixcclAllReduce(&x, &x, 1, mixcclFloat, mixcclSum, comms[1], nullptr),
            mixcclInvalidUsage);
  EXPECT_NE(std::string(mixcclGetLastError(nullptr)).find("not a live communicator"),
            std::string::npos);
  EXPECT_EQ(mixcclCommDestroy(comms[0]), mixcclInvalidUsage);
}

TEST(ApiBehaviour, VersionAndErrorStrings) {
  int v = 0;
  ASSERT_EQ(mixcclGetVersion(&v), mixcclSuccess);
  EXPECT_EQ(v, MIXCCL_VERSION_CODE);
  EXPECT_EQ(mixcclGetVersion(nullptr), mixcclInvalidArgument);
  for (int r = 0; r < mixcclNumResults; ++r)
    EXPECT_GT(strlen(mixcclGetErrorString((mixcclResult_t)r)), 3u);
  EXPECT_EQ(mixcclInvalidArgument, 4);
  EXPECT_EQ(mixcclTimeout, 8);
  EXPECT_EQ(mixcclFloat8e5m2, 11);
  EXPECT_EQ(mixcclAvg, 4);
  EXPECT_EQ(sizeof(mixcclUniqueId), 128u);
}

TEST(ApiBehaviour, InitAllAndGroupedCollectivesAcrossComms) {
  const int n = 4;
  mixcclComm_t comms[n];
  int devs[n] = {3, 2, 1, 0};
  ASSERT_EQ(mixcclCommInitAll(comms, n, devs), mixcclSuccess);
  std::vector<std::vector<double>> bufs(n, std::vector<double>(1000));
  for (int r = 0; r < n; ++r) {
    int rank = -1, count = -1, dev = -1;
    ASSERT_EQ(mixcclCommUserRank(comms[r], &rank), mixcclSuccess);
    ASSERT_EQ(mixcclCommCount(comms[r], &count), mixcclSuccess);
    ASSERT_EQ(mixcclCommDevice(comms[r], &dev), mixcclSuccess);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(count, n);
    EXPECT_EQ(dev, devs[r]);
    for (size_t i = 0; i < 1000; ++i) bufs[r][i] = r + i;
  }
  // One thread drives all ranks: only possible inside a group.
  ASSERT_EQ(mixcclGroupStart(), mixcclSuccess);
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(mixcclAllReduce(bufs[r].data(), bufs[r].data(), 1000, mixcclDouble, mixcclMax,
                              comms[r], nullptr),
              mixcclSuccess);
  ASSERT_EQ(mixcclGroupEnd(), mixcclSuccess);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(bufs[r][i], n - 1 + i);
  for (int r = 0; r < n; ++r) EXPECT_EQ(mixcclCommDestroy(comms[r]), mixcclSuccess);
}

int nestedGroupRank(mixcclComm_t comm, int rank, int nranks, void*) {
  std::vector<int> a(100, rank), b(100 * nranks, -1), c(100, rank + 1);
  RANK_CHECK(mixcclGroupStart() == mixcclSuccess);
  RANK_CHECK(mixcclGroupStart() == mixcclSuccess);
  RANK_CHECK(mixcclAllReduce(a.data(), a.data(), 100, mixcclInt, mixcclSum, comm, nullptr) == mixcclSuccess);
  RANK_CHECK(mixcclGroupEnd() == mixcclSuccess);
  // Nothing has run yet: the outer group is still open.
  RANK_CHECK(a[0] == rank);
  RANK_CHECK(mixcclAllGather(c.data(), b.data(), 100, mixcclInt, comm, nullptr) == mixcclSuccess);
  RANK_CHECK(mixcclGroupEnd() == mixcclSuccess);
  RANK_CHECK(a[0] == nranks * (nranks - 1) / 2);
  for (int r = 0; r < nranks; ++r) RANK_CHECK(b[100 * r + 99] == r + 1);
  return 0;
}

TEST(ApiBehaviour, NestedGroupsRunAtOutermostEnd) {
  EXPECT_EQ(runRanks(3, nestedGroupRank, nullptr, 60), 0);
}

int splitRank(mixcclComm_t comm, int rank, int nranks, void*) {
  // Even ranks form one communicator ordered by descending old rank; rank 1 opts out.
  int color = rank == 1 ? MIXCCL_SPLIT_NOCOLOR : rank % 2;
  mixcclComm_t sub = nullptr;
  RANK_CHECK(mixcclCommSplit(comm, color, -rank, &sub, nullptr) == mixcclSuccess);
  if (rank == 1) {
    RANK_CHECK(sub == nullptr);
    return allReduceWorks(comm, nranks) ? 0 : 1;
  }
  RANK_CHECK(sub != nullptr);
  int subRank = -1, subSize = -1;
  RANK_CHECK(mixcclCommUserRank(sub, &subRank) == mixcclSuccess);
  RANK_CHECK(mixcclCommCount(sub, &subSize) == mixcclSuccess);
  int expectedSize = 0, expectedRank = 0;
  for (int r = 0; r < nranks; ++r) {
    if (r == 1 || r % 2 != rank % 2) continue;
    ++expectedSize;
    if (r > rank) ++expectedRank;
  }
  RANK_CHECK(subSize == expectedSize);
  RANK_CHECK(subRank == expectedRank);
  int v = rank;
  RANK_CHECK(mixcclAllReduce(&v, &v, 1, mixcclInt, mixcclSum, sub, nullptr) == mixcclSuccess);
  int want = 0;
  for (int r = 0; r < nranks; ++r)
    if (r != 1 && r % 2 == rank % 2) want += r;
  RANK_CHECK(v == want);
  RANK_CHECK(mixcclCommDestroy(sub) == mixcclSuccess);
  // The parent is still fine.
  return allReduceWorks(comm, nranks) ? 0 : 1;
}

TEST(ApiBehaviour, SplitByColorAndKey) { EXPECT_EQ(runRanks(6, splitRank, nullptr, 60), 0); }

int deadPeerRank(mixcclComm_t comm, int rank, int nranks, void*) {
  std::vector<float> buf(1 << 20, 1.0f);
  // Init ends with a collective (the topology exchange), so one rank can return from it while
  // others are still inside. Rank 2 dies once every rank has entered a first small AllReduce;
  // the survivors learn of it there or in the large one that follows.
  int one = 1;
  auto start = Clock::now();
  mixcclResult_t r = mixcclAllReduce(&one, &one, 1, mixcclInt, mixcclSum, comm, nullptr);
  if (rank == 2) _exit(0);  // dies without a word
  if (r == mixcclSuccess)
    r = mixcclAllReduce(buf.data(), buf.data(), buf.size(), mixcclFloat, mixcclSum, comm, nullptr);
  double took = secondsSince(start);
  RANK_CHECK(r == mixcclRemoteError);
  RANK_CHECK(took < 10.0);  // the timeout is 60 s: this must come from the closed connections
  std::string msg = mixcclGetLastError(comm);
  fprintf(stderr, "rank %d saw after %.2f s: %s\n", rank, took, msg.c_str());
  RANK_CHECK(msg.find("rank") != std::string::npos);
  mixcclResult_t async;
  RANK_CHECK(mixcclCommGetAsyncError(comm, &async) == mixcclSuccess);
  RANK_CHECK(async == mixcclRemoteError);
  // Later calls fail at once, too.
  RANK_CHECK(mixcclAllReduce(buf.data(), buf.data(), 4, mixcclFloat, mixcclSum, comm, nullptr) !=
        mixcclSuccess);
  return 0;
}

TEST(ApiBehaviour, DeadPeerGivesRemoteErrorQuickly) {
  setenv("MIXCCL_TIMEOUT_S", "60", 1);
  EXPECT_EQ(runRanks(4, deadPeerRank, nullptr, 60), 0);
}

int stalledPeerRank(mixcclComm_t comm, int rank, int nranks, void*) {
  int v = 1;
  if (rank == 1) {
    sleep(6);  // alive, connected, but never joins the call
    return 0;
  }
  auto start = Clock::now();
  mixcclResult_t r = mixcclRecv(&v, 1, mixcclInt, 1, comm, nullptr);
  double took = secondsSince(start);
  RANK_CHECK(r == mixcclTimeout);
  RANK_CHECK(took >= 1.5 && took < 5.0);
  RANK_CHECK(std::string(mixcclGetLastError(comm)).find("rank 1") != std::string::npos);
  return 0;
}

TEST(ApiBehaviour, StalledPeerTimesOutWithinTheBound) {
  mixcclConfig_t config = MIXCCL_CONFIG_INITIALIZER;
  (void)config;
  setenv("MIXCCL_TIMEOUT_S", "2", 1);  // read once per process: the forked ranks are fresh
  EXPECT_EQ(runRanks(2, stalledPeerRank, nullptr, 60), 0);
}

int abortRank(mixcclComm_t comm, int rank, int nranks, void*) {
  if (rank == 1) {
    sleep(3);
    return 0;
  }
  std::thread aborter([comm] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    mixcclCommAbort(comm);
  });
  int v = 0;
  auto start = Clock::now();
  mixcclResult_t r = mixcclRecv(&v, 1, mixcclInt, 1, comm, nullptr);
  double took = secondsSince(start);
  aborter.join();
  RANK_CHECK(r != mixcclSuccess);
  RANK_CHECK(took < 1.3);
  _exit(0);  // the communicator is gone; the harness must not destroy it again
}

TEST(ApiBehaviour, AbortFromAnotherThreadUnblocks) {
  setenv("MIXCCL_TIMEOUT_S", "60", 1);
  EXPECT_EQ(runRanks(2, abortRank, nullptr, 60), 0);
}

TEST(ApiBehaviour, CommIdFromEnvironment) {
  // Every rank builds the same id from MIXCCL_COMM_ID; rank 0 hosts the root there.
  int port = 20000 + (getpid() % 20000);
  std::string addr = "127.0.0.1:" + std::to_string(port);
  const int n = 3;
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t p = fork();
    if (p == 0) {
      setenv("MIXCCL_COMM_ID", addr.c_str(), 1);
      setenv("MIXCCL_COMM_SECRET", "00112233445566778899aabbccddeeff", 1);
      mixcclUniqueId id;
      if (mixcclGetUniqueId(&id) != mixcclSuccess) _exit(2);
      mixcclComm_t comm;
      if (mixcclCommInitRank(&comm, n, id, r) != mixcclSuccess) _exit(3);
      int ok = allReduceWorks(comm, n);
      mixcclCommDestroy(comm);
      _exit(ok ? 0 : 4);
    }
    pids.push_back(p);
  }
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
}

TEST(ApiBehaviour, ConfigIsValidated) {
  mixcclUniqueId id;
  ASSERT_EQ(mixcclGetUniqueId(&id), mixcclSuccess);
  mixcclComm_t comm = nullptr;
  mixcclConfig_t bad = MIXCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(mixcclCommInitRankConfig(&comm, 1, id, 0, &bad), mixcclInvalidArgument);
  mixcclConfig_t badTimeout = MIXCCL_CONFIG_INITIALIZER;
  badTimeout.timeout = 0;
  EXPECT_EQ(mixcclCommInitRankConfig(&comm, 1, id, 0, &badTimeout), mixcclInvalidArgument);
  EXPECT_EQ(mixcclCommInitRank(&comm, 2, id, 5), mixcclInvalidArgument);
  mixcclUniqueId garbage;
  memset(&garbage, 0x33, sizeof(garbage));
  EXPECT_EQ(mixcclCommInitRank(&comm, 1, garbage, 0), mixcclInvalidArgument);
  mixcclConfig_t good = MIXCCL_CONFIG_INITIALIZER;
  good.timeout = 30;
  good.commName = "config-test";
  ASSERT_EQ(mixcclCommInitRankConfig(&comm, 1, id, 0, &good), mixcclSuccess);
  double v = 2.5;
  EXPECT_EQ(mixcclAllReduce(&v, &v, 1, mixcclDouble, mixcclProd, comm, nullptr), mixcclSuccess);
  EXPECT_EQ(v, 2.5);
  EXPECT_EQ(mixcclCommFinalize(comm), mixcclSuccess);
  EXPECT_EQ(mixcclAllReduce(&v, &v, 1, mixcclDouble, mixcclProd, comm, nullptr), mixcclInvalidUsage);
  EXPECT_EQ(mixcclCommDestroy(comm), mixcclSuccess);
}

}  // namespace

namespace {

std::string readFile(const std::string& path) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return "";
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  fclose(f);
  return s;
}

int topologyRank(mixcclComm_t comm, int rank, int nranks, void*) {
  return allReduceWorks(comm, nranks) ? 0 : 1;
}

TEST(ApiBehaviour, TopologyIsExchangedAtInitAndDumped) {
  char dir[] = "/tmp/mixccl-topo-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string pattern = std::string(dir) + "/rank%r.json";
  setenv("MIXCCL_TOPO_DUMP_FILE", pattern.c_str(), 1);
  ASSERT_EQ(runRanks(3, topologyRank, nullptr, 60), 0);
  for (int r = 0; r < 3; ++r) {
    std::string path = std::string(dir) + "/rank" + std::to_string(r) + ".json";
    nlohmann::json doc = nlohmann::json::parse(readFile(path), nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << path << " is not JSON";
    EXPECT_EQ(doc["schema"], "mixccl-topology/1");
    EXPECT_EQ(doc["rank"], r);
    EXPECT_EQ(doc["global"]["nranks"], 3);
    // Every rank's entry is in every rank's view, with its host and NIC.
    ASSERT_EQ(doc["global"]["ranks"].size(), 3u);
    for (int q = 0; q < 3; ++q) {
      EXPECT_EQ(doc["global"]["ranks"][q]["rank"], q);
      EXPECT_EQ(doc["global"]["ranks"][q]["adaptor"], "host");
      EXPECT_FALSE(doc["global"]["ranks"][q]["nic"]["name"].get<std::string>().empty());
    }
    unlink(path.c_str());
  }
  rmdir(dir);
}

}  // namespace
