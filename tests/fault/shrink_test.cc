// Surviving a lost rank (docs/reliability.md "Shrinking after a failure"): kill -9 of a rank in
// the middle of an AllReduce, the survivors shrink with MIXCCL_SHRINK_ABORT and their next
// collectives are bit-exact, per transport (socket, shm), with the time from the kill to a
// working new communicator printed; mixcclCommRevoke releasing ranks blocked in different
// calls; mismatched exclude lists failing on every survivor with one message and leaving the
// parent usable; the shrink of a healthy communicator; no fd or thread left after 10 shrinks.
// Also over UCX (its tcp transport) where it is built.
// Ranks are forked processes (fault_harness.h); every test reaps them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fault_harness.h"

namespace {

using fault::Job;
using fault::now;
using fault::RankReport;
using fault::Shared;

constexpr int kTimeoutS = 5;

#ifdef MIXCCL_TEST_GLOO_DIR
// The gloo adaptor's folder, for the mixed-adaptor test; the environment is read once per
// process, so it is set before main.
const bool kGlooPathSet = [] { return setenv("MIXCCL_PLUGIN_PATH", MIXCCL_TEST_GLOO_DIR, 1) == 0; }();
#endif

mixcclResult_t initRank(mixcclComm_t* comm, const mixcclUniqueId& id, int rank, int n,
                        const char* net) {
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.timeout = kTimeoutS;
  cfg.netName = net;
  return mixcclCommInitRankConfig(comm, n, id, rank, &cfg);
}

// An AllReduce (Sum, int32) whose result every rank knows: rank r contributes r+1+i at i.
// 0 if the result is exact.
int exactAllReduce(mixcclComm_t comm, size_t count) {
  int rank = 0, n = 0;
  if (mixcclCommUserRank(comm, &rank) != mixcclSuccess || mixcclCommCount(comm, &n) != mixcclSuccess)
    return 1;
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = rank + 1 + (int32_t)i;
  if (mixcclAllReduce(v.data(), v.data(), count, mixcclInt32, mixcclSum, comm, nullptr) !=
      mixcclSuccess)
    return 2;
  for (size_t i = 0; i < count; ++i)
    if (v[i] != n * (n + 1) / 2 + n * (int32_t)i) return 3;
  return 0;
}

std::string inspect(mixcclComm_t comm, const char* key) {
  char v[256] = {0};
  return mixcclCommInspect(comm, key, v, sizeof(v)) == mixcclSuccess ? v : "?";
}

std::string hostPart() { return " (" + fault::hostName(); }

class ShrinkTest : public ::testing::TestWithParam<const char*> {
 protected:
  void TearDown() override { EXPECT_TRUE(Job::noChildrenLeft()) << "a rank process was left behind"; }
};

// 4 ranks loop over a 4 MiB AllReduce; the victims get sig (SIGKILL: dead; SIGSTOP: stuck, found
// at the timeout) in the middle. Every survivor sees the failure, shrinks without the victims
// (MIXCCL_SHRINK_ABORT) and runs AllReduces of three size classes on the new communicator,
// exact. laterSeconds: from the signal to the end of the first collective on the new
// communicator, printed as a distribution over MIXCCL_TEST_SHRINK_ROUNDS rounds (default 1).
void loseRanksMidAllReduceThenShrink(const char* net, const std::vector<int>& victims, int sig,
                                     int timeoutS) {
  constexpr int kRanks = 4;
  std::vector<int> survivors;
  for (int r = 0; r < kRanks; ++r)
    if (std::find(victims.begin(), victims.end(), r) == victims.end()) survivors.push_back(r);
  const int newN = (int)survivors.size();
  std::vector<double> times;
  const int rounds = fault::envCount("MIXCCL_TEST_SHRINK_ROUNDS", 1);
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Job job(kRanks, 60);
    ASSERT_TRUE(job.ok());
    job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
      RankReport* rep = &sh->ranks[rank];
      mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
      cfg.timeout = timeoutS;
      cfg.netName = net;
      mixcclComm_t comm;
      if (mixcclCommInitRankConfig(&comm, n, id, rank, &cfg) != mixcclSuccess) return 10;
      std::vector<float> big(1 << 20, 1.0f);
      mixcclResult_t r = mixcclSuccess;
      for (int i = 0; i < 100000 && r == mixcclSuccess; ++i) {
        r = mixcclAllReduce(big.data(), big.data(), big.size(), mixcclFloat, mixcclSum, comm,
                            nullptr);
        rep->phase.store(2);
      }
      rep->code = r;
      mixcclComm_t shrunk = nullptr;
      rep->laterCode = mixcclCommShrink(comm, victims.data(), (int)victims.size(), &shrunk,
                                        nullptr, MIXCCL_SHRINK_ABORT);
      if (rep->laterCode != mixcclSuccess) {
        fault::copyMessage(rep, mixcclGetLastError(comm));
        return 11;
      }
      int bad = exactAllReduce(shrunk, 1);
      rep->laterSeconds = now() - sh->injectedAt;
      for (size_t count : {(size_t)1000, (size_t)1 << 18})
        if (!bad) bad = exactAllReduce(shrunk, count);
      int newRank = -1, size = -1;
      mixcclCommUserRank(shrunk, &newRank);
      mixcclCommCount(shrunk, &size);
      rep->iterations = newRank * 100 + size;
      // The new communicator inherits the transport the test forces.
      const std::string peer = "transport." + std::to_string((newRank + 1) % size);
      fault::copyMessage(rep, inspect(shrunk, peer.c_str()).c_str());
      if (mixcclCommDestroy(shrunk) != mixcclSuccess || mixcclCommDestroy(comm) != mixcclSuccess)
        return 12;
      return bad ? 20 + bad : 0;
    });
    for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(job.waitPhase(r, 2, 30)) << "rank " << r;
    fault::sleepSeconds(0.05);
    const double at = now();
    for (int v : victims) job.inject(v, sig);
    job.shared()->injectedAt = at;
    ASSERT_TRUE(job.waitExit(survivors));
    for (int v : victims) {
      if (sig != SIGKILL) kill(job.pid(v), SIGKILL);  // a stopped process still dies of SIGKILL
      ASSERT_TRUE(job.reap(v, 10));
    }
    for (int i = 0; i < newN; ++i) {
      const int r = survivors[i];
      const RankReport& rep = job.report(r);
      SCOPED_TRACE("rank " + std::to_string(r));
      EXPECT_EQ(job.exitCode(r), 0) << rep.message;
      if (sig == SIGKILL) EXPECT_EQ(rep.code, mixcclRemoteError);
      else EXPECT_TRUE(rep.code == mixcclTimeout || rep.code == mixcclRemoteError) << rep.code;
      EXPECT_EQ(rep.laterCode, mixcclSuccess) << rep.message;
      EXPECT_EQ(rep.iterations, i * 100 + newN) << "new rank * 100 + new size";
      EXPECT_EQ(std::string(rep.message), net) << "the shrunk communicator's transport";
      times.push_back(rep.laterSeconds);
    }
  }
  std::sort(times.begin(), times.end());
  printf("[%s] %s of %zu rank(s) to a working shrunk communicator, %zu survivors over %d "
         "round(s): min %.3f s, median %.3f s, p90 %.3f s, max %.3f s\n", net,
         sig == SIGKILL ? "kill -9" : "SIGSTOP", victims.size(), times.size(), rounds,
         times.front(), times[times.size() / 2], times[times.size() * 9 / 10], times.back());
  EXPECT_LT(times.back(), timeoutS + 1.0) << "within the timeout plus 1 s";
}

TEST_P(ShrinkTest, KillMidAllReduceThenShrink) {
  loseRanksMidAllReduceThenShrink(GetParam(), {3}, SIGKILL, kTimeoutS);
}

// Two ranks killed at once (one of them rank 1, so the survivors' numbers change).
TEST_P(ShrinkTest, KillTwoMidAllReduceThenShrink) {
  loseRanksMidAllReduceThenShrink(GetParam(), {1, 3}, SIGKILL, kTimeoutS);
}

// A stuck rank (SIGSTOP) is found at the timeout (1 s here), then shrunk away like a dead one.
TEST_P(ShrinkTest, StuckRankTimesOutThenShrink) {
  loseRanksMidAllReduceThenShrink(GetParam(), {2}, SIGSTOP, 1);
}

// The replacement of a failed rank: 4 ranks lose rank 3 (kill -9 mid-AllReduce), shrink to 3,
// and grow back to 4 with a fifth process that joins as rank 3 through an id rank 0 made
// (mixcclCommGetUniqueId, handed over in shared memory as a launcher would). The new rank then
// takes part in AllReduces of every size class and is the root of a Broadcast.
TEST_P(ShrinkTest, KillShrinkThenGrowAReplacement) {
  const char* net = GetParam();
  constexpr int kRanks = 4, kVictim = 3, kReplacement = 4;
  Job job(kRanks + 1, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    RankReport* handover = &sh->ranks[kReplacement];
    mixcclComm_t grown = nullptr;
    mixcclComm_t comm = nullptr, shrunk = nullptr;
    if (rank == kReplacement) {
      while (!handover->released.load()) usleep(500);
      mixcclUniqueId growId;
      memcpy(&growId, handover->message, sizeof(growId));
      mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
      cfg.timeout = kTimeoutS;
      cfg.netName = net;
      rep->code = mixcclCommGrow(nullptr, kRanks, &growId, kVictim, &grown, &cfg);
      if (rep->code != mixcclSuccess) return 11;
    } else {
      if (initRank(&comm, id, rank, kRanks, net) != mixcclSuccess) return 10;
      std::vector<float> big(1 << 20, 1.0f);
      mixcclResult_t r = mixcclSuccess;
      for (int i = 0; i < 100000 && r == mixcclSuccess; ++i) {
        r = mixcclAllReduce(big.data(), big.data(), big.size(), mixcclFloat, mixcclSum, comm, nullptr);
        rep->phase.store(2);
      }
      int exclude[] = {kVictim};
      if (mixcclCommShrink(comm, exclude, 1, &shrunk, nullptr, MIXCCL_SHRINK_ABORT) != mixcclSuccess)
        return 12;
      mixcclUniqueId growId;
      if (rank == 0) {
        if (mixcclCommGetUniqueId(shrunk, &growId) != mixcclSuccess) return 13;
        memcpy(handover->message, &growId, sizeof(growId));
        handover->released.store(1);
      }
      rep->code = mixcclCommGrow(shrunk, kRanks, rank == 0 ? &growId : nullptr, -1, &grown, nullptr);
      if (rep->code != mixcclSuccess) {
        fault::copyMessage(rep, mixcclGetLastError(shrunk));
        return 14;
      }
    }
    int bad = 0;
    for (size_t count : {(size_t)1, (size_t)1000, (size_t)1 << 18})
      if (!bad) bad = exactAllReduce(grown, count);
    int newRank = -1, newN = -1;
    mixcclCommUserRank(grown, &newRank);
    mixcclCommCount(grown, &newN);
    rep->iterations = newRank * 100 + newN;
    std::vector<int32_t> b(1000, newRank == kVictim ? 7 : 0);
    if (mixcclBroadcast(b.data(), b.data(), b.size(), mixcclInt32, kVictim, grown, nullptr) !=
            mixcclSuccess ||
        b[0] != 7 || b[999] != 7)
      bad = 9;
    if (mixcclCommDestroy(grown) != mixcclSuccess) return 15;
    if (shrunk && mixcclCommDestroy(shrunk) != mixcclSuccess) return 16;
    if (comm && mixcclCommDestroy(comm) != mixcclSuccess) return 17;
    return bad ? 20 + bad : 0;
  });
  for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(job.waitPhase(r, 2, 30)) << "rank " << r;
  job.inject(kVictim, SIGKILL);
  ASSERT_TRUE(job.reap(kVictim, 10));
  ASSERT_TRUE(job.waitExit({0, 1, 2, kReplacement}));
  const int expected[] = {0 * 100 + 4, 1 * 100 + 4, 2 * 100 + 4, 0, 3 * 100 + 4};
  for (int r : {0, 1, 2, kReplacement}) {
    SCOPED_TRACE("process " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << job.report(r).message;
    EXPECT_EQ(job.report(r).iterations, expected[r]) << "new rank * 100 + new size";
  }
}

// Ranks blocked in different calls (an AllReduce that ranks 2 and 3 never join, a Recv from
// rank 3, and rank 3's own Recv from rank 2: nothing any of them sends can match another's
// receive) all return once rank 3 revokes the communicator from a second thread; then all four
// shrink it to a working communicator.
TEST_P(ShrinkTest, RevokeReleasesBlockedRanks) {
  const char* net = GetParam();
  constexpr int kRanks = 4, kRevoker = 3;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm;
    if (initRank(&comm, id, rank, n, net) != mixcclSuccess) return 10;
    if (exactAllReduce(comm, 4) != 0) return 11;  // every pair is connected
    std::vector<float> buf(4 * 1024, 1.0f);
    std::thread revoker;
    rep->phase.store(2);
    if (rank == kRevoker) {
      revoker = std::thread([&] {
        fault::sleepSeconds(0.3);
        sh->injectedAt = now();
        rep->asyncCode = mixcclCommRevoke(comm, MIXCCL_REVOKE_DEFAULT);
      });
      rep->code = mixcclRecv(buf.data(), 1024, mixcclFloat, 2, comm, nullptr);
    } else if (rank == 2) {
      rep->code = mixcclRecv(buf.data(), 1024, mixcclFloat, kRevoker, comm, nullptr);
    } else {
      rep->code = mixcclAllReduce(buf.data(), buf.data(), 1024, mixcclFloat, mixcclSum, comm, nullptr);
    }
    rep->failedAt = now();
    if (revoker.joinable()) revoker.join();
    fault::copyMessage(rep, mixcclGetLastError(comm));
    double t0 = now();
    rep->laterCode = exactAllReduce(comm, 4) == 0 ? mixcclSuccess : mixcclInternalError;
    rep->laterSeconds = now() - t0;
    mixcclComm_t shrunk = nullptr;
    // A failed communicator cannot shrink without the abort flag: the error says so.
    if (mixcclCommShrink(comm, nullptr, 0, &shrunk, nullptr, MIXCCL_SHRINK_DEFAULT) !=
            (rank == kRevoker ? mixcclInvalidUsage : mixcclRemoteError) ||
        std::string(mixcclGetLastError(comm)).find("mixcclCommShrink: the communicator has "
                                                   "failed (") != 0 ||
        std::string(mixcclGetLastError(comm)).find("): shrink it with MIXCCL_SHRINK_ABORT") ==
            std::string::npos)
      return 14;
    if (mixcclCommShrink(comm, nullptr, 0, &shrunk, nullptr, MIXCCL_SHRINK_ABORT) != mixcclSuccess)
      return 12;
    int bad = exactAllReduce(shrunk, 1000);
    if (mixcclCommDestroy(shrunk) != mixcclSuccess || mixcclCommDestroy(comm) != mixcclSuccess)
      return 13;
    return bad ? 20 + bad : 0;
  });
  ASSERT_TRUE(job.waitExit());
  const std::string by = "the communicator was revoked by rank 3" + hostPart();
  for (int r = 0; r < kRanks; ++r) {
    const RankReport& rep = job.report(r);
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << rep.message;
    const double latency = rep.failedAt - job.shared()->injectedAt;
    printf("[%s] rank %d: %s after %.3f s: %s\n", net, r,
           mixcclGetErrorString((mixcclResult_t)rep.code), latency, rep.message);
    EXPECT_LT(latency, 1.0) << "revoke releases blocked calls at once";
    EXPECT_NE(rep.laterCode, mixcclSuccess) << "calls after a revoke fail";
    EXPECT_LT(rep.laterSeconds, 0.2) << "calls after a revoke fail at once";
    if (r == kRevoker) {
      EXPECT_EQ(rep.asyncCode, mixcclSuccess);
      EXPECT_EQ(rep.code, mixcclInvalidUsage);
      EXPECT_EQ(std::string(rep.message),
                "rank 3: the communicator was revoked by this rank (mixcclCommRevoke)");
    } else {
      EXPECT_EQ(rep.code, mixcclRemoteError);
      EXPECT_EQ(std::string(rep.message).rfind("rank " + std::to_string(r) + ": " + by, 0), 0u)
          << rep.message;
    }
  }
}

// Ranks 0 and 2 exclude rank 3, rank 1 excludes rank 2: every caller gets the same
// mixcclInvalidUsage naming both lists, at once, and the parent stays usable (all four ranks
// then run an AllReduce on it).
TEST_P(ShrinkTest, MismatchedExcludeListsFailEverywhere) {
  const char* net = GetParam();
  constexpr int kRanks = 4;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm;
    if (initRank(&comm, id, rank, n, net) != mixcclSuccess) return 10;
    if (rank != 3) {
      int exclude[] = {rank == 1 ? 2 : 3};
      mixcclComm_t shrunk = nullptr;
      double t0 = now();
      rep->code = mixcclCommShrink(comm, exclude, 1, &shrunk, nullptr, MIXCCL_SHRINK_DEFAULT);
      rep->laterSeconds = now() - t0;
      fault::copyMessage(rep, mixcclGetLastError(comm));
      if (shrunk) return 11;
    }
    int bad = exactAllReduce(comm, 1000);
    return mixcclCommDestroy(comm) == mixcclSuccess ? bad : 12;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < kRanks; ++r) {
    const RankReport& rep = job.report(r);
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << "the parent must stay usable";
    if (r == 3) continue;
    EXPECT_EQ(rep.code, mixcclInvalidUsage);
    EXPECT_EQ(std::string(rep.message),
              "rank " + std::to_string(r) + ": mixcclCommShrink: rank 1 excludes {2} but rank 0 "
              "excludes {3}: every surviving rank must pass the same exclude list");
    EXPECT_LT(rep.laterSeconds, 2.0);
  }
}

// Ranks 0 and 1 shrink without rank 3 while rank 2, a survivor in their list, never calls: both
// fail with mixcclTimeout naming rank 2 at the timeout (1 s here), and the leader's message
// reaches rank 1 too (it waits up to 2 s past its own timeout for it).
TEST_P(ShrinkTest, SurvivorThatNeverArrivesIsNamed) {
  const char* net = GetParam();
  constexpr int kRanks = 4;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.timeout = 1;
    cfg.netName = net;
    mixcclComm_t comm;
    if (mixcclCommInitRankConfig(&comm, n, id, rank, &cfg) != mixcclSuccess) return 10;
    if (rank < 2) {
      int exclude[] = {3};
      mixcclComm_t shrunk = nullptr;
      double t0 = now();
      rep->code = mixcclCommShrink(comm, exclude, 1, &shrunk, nullptr, MIXCCL_SHRINK_DEFAULT);
      rep->laterSeconds = now() - t0;
      fault::copyMessage(rep, mixcclGetLastError(comm));
      rep->phase.store(3);
    } else {
      for (int r = 0; r < 2; ++r)
        while (sh->ranks[r].phase.load() < 3) usleep(1000);
    }
    return mixcclCommDestroy(comm) == mixcclSuccess ? 0 : 12;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < 2; ++r) {
    const RankReport& rep = job.report(r);
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0);
    EXPECT_EQ(rep.code, mixcclTimeout);
    EXPECT_EQ(std::string(rep.message),
              "rank " + std::to_string(r) + ": mixcclCommShrink: rank(s) {2} of the survivors did "
              "not join within the timeout (they failed too, were not meant to survive, or did "
              "not call mixcclCommShrink)");
    EXPECT_GT(rep.laterSeconds, 0.9);
    // The timeout, plus a loaded machine's delays (a bound against a hang, not a speed).
    EXPECT_LT(rep.laterSeconds, 4.0);
  }
}

// A healthy communicator shrinks without rank 1 (which does not call): ranks 0, 2, 3 become 0,
// 1, 2 of a working communicator, and the parent still works with all four.
TEST_P(ShrinkTest, ShrinkHealthyCommunicator) {
  const char* net = GetParam();
  constexpr int kRanks = 4;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm;
    if (initRank(&comm, id, rank, n, net) != mixcclSuccess) return 10;
    if (rank != 1) {
      int exclude[] = {1};
      mixcclComm_t shrunk = nullptr;
      rep->code = mixcclCommShrink(comm, exclude, 1, &shrunk, nullptr, MIXCCL_SHRINK_DEFAULT);
      fault::copyMessage(rep, mixcclGetLastError(comm));
      if (rep->code != mixcclSuccess) return 11;
      int newRank = -1, newN = -1;
      mixcclCommUserRank(shrunk, &newRank);
      mixcclCommCount(shrunk, &newN);
      rep->iterations = newRank * 100 + newN;
      if (int bad = exactAllReduce(shrunk, 1 << 16)) return 20 + bad;
      if (mixcclCommDestroy(shrunk) != mixcclSuccess) return 12;
    }
    int bad = exactAllReduce(comm, 1000);
    return mixcclCommDestroy(comm) == mixcclSuccess ? (bad ? 30 + bad : 0) : 13;
  });
  ASSERT_TRUE(job.waitExit());
  const int expected[] = {0 * 100 + 3, 0, 1 * 100 + 3, 2 * 100 + 3};
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << job.report(r).message;
    if (r != 1) EXPECT_EQ(job.report(r).iterations, expected[r]) << "new rank * 100 + new size";
  }
}

// Ten shrinks in a row (alternately of a healthy communicator, and of one rank 0 revoked with
// MIXCCL_SHRINK_ABORT), each parent destroyed after its child works: the fds and threads are
// those after the first communicator's init.
TEST_P(ShrinkTest, TenShrinkCyclesLeakNothing) {
  const char* net = GetParam();
  constexpr int kRanks = 3, kCycles = 10;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm;
    if (initRank(&comm, id, rank, n, net) != mixcclSuccess) return 10;
    if (exactAllReduce(comm, 100)) return 11;
    rep->fdsBefore = fault::countFds();
    rep->threadsAfterDestroy = fault::countThreads();
    for (int c = 0; c < kCycles; ++c) {
      // Stopping a communicator (revoke, shrink with abort) fails the calls the peers still have
      // in flight on it, by design: the ranks first meet here, outside the library.
      rep->phase.store(c + 1);
      for (int r = 0; r < n; ++r)
        while (sh->ranks[r].phase.load() < c + 1) usleep(200);
      const bool abort = c % 2 == 1;
      if (abort && rank == 0 && mixcclCommRevoke(comm, MIXCCL_REVOKE_DEFAULT) != mixcclSuccess)
        return 15;
      mixcclComm_t next = nullptr;
      if (mixcclCommShrink(comm, nullptr, 0, &next, nullptr,
                           abort ? MIXCCL_SHRINK_ABORT : MIXCCL_SHRINK_DEFAULT) != mixcclSuccess) {
        fault::copyMessage(rep, mixcclGetLastError(comm));
        return 12;
      }
      if (mixcclCommDestroy(comm) != mixcclSuccess) return 13;
      comm = next;
      if (int bad = exactAllReduce(comm, 100)) {
        fault::copyMessage(rep, mixcclGetLastError(comm));
        return 20 + bad;
      }
    }
    rep->fdsAfter = fault::countFds();
    rep->iterations = fault::countThreads();
    return mixcclCommDestroy(comm) == mixcclSuccess ? 0 : 14;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < kRanks; ++r) {
    const RankReport& rep = job.report(r);
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << rep.message;
    EXPECT_EQ(rep.fdsAfter, rep.fdsBefore) << "fds after 10 shrinks";
    EXPECT_EQ(rep.iterations, rep.threadsAfterDestroy) << "threads after 10 shrinks";
  }
}

#ifdef MIXCCL_TEST_HAVE_UCX
// UCX over TCP (UCX reads UCX_TLS in each rank at init).
const bool kUcxTlsSet = [] { return setenv("UCX_TLS", "tcp", 1) == 0; }();
INSTANTIATE_TEST_SUITE_P(Nets, ShrinkTest, ::testing::Values("socket", "shm", "ucx"),
#else
INSTANTIATE_TEST_SUITE_P(Nets, ShrinkTest, ::testing::Values("socket", "shm"),
#endif
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

// A job of three host ranks and one gloo rank (its domain's only rank) loses the gloo rank
// (kill -9 mid-AllReduce), then a host rank: after each shrink the domain map is rebuilt for the
// survivors and their collectives are exact.
TEST(ShrinkHetero, LosingTheOnlyGlooRankThenAHostRank) {
#ifndef MIXCCL_TEST_GLOO_DIR
  GTEST_SKIP() << "the gloo adaptor is not built";
#else
  ASSERT_TRUE(kGlooPathSet);
  constexpr int kRanks = 4;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.timeout = kTimeoutS;
    cfg.adaptor = rank == 3 ? "gloo" : "host";
    mixcclComm_t comm;
    if (mixcclCommInitRankConfig(&comm, n, id, rank, &cfg) != mixcclSuccess) return 10;
    std::string domains = inspect(comm, "domains");
    std::vector<float> big(1 << 18, 1.0f);
    // Loss 1 (the gloo rank), then loss 2 (host rank 2: rank 2 of the first shrunk one too).
    for (int loss = 1; loss <= 2; ++loss) {
      mixcclResult_t r = mixcclSuccess;
      for (int i = 0; i < 100000 && r == mixcclSuccess; ++i) {
        r = mixcclAllReduce(big.data(), big.data(), big.size(), mixcclFloat, mixcclSum, comm,
                            nullptr);
        big.assign(big.size(), 1.0f);
        rep->phase.store(2 * loss);
      }
      int exclude[] = {loss == 1 ? 3 : 2};
      mixcclComm_t next = nullptr;
      if (mixcclCommShrink(comm, exclude, 1, &next, nullptr, MIXCCL_SHRINK_ABORT) != mixcclSuccess) {
        fault::copyMessage(rep, mixcclGetLastError(comm));
        return 10 + loss;
      }
      mixcclCommDestroy(comm);
      comm = next;
      if (int bad = exactAllReduce(comm, 1 << 16)) return 20 + bad;
      domains += " " + inspect(comm, "domains");
    }
    fault::copyMessage(rep, domains.c_str());
    return mixcclCommDestroy(comm) == mixcclSuccess ? 0 : 13;
  });
  for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(job.waitPhase(r, 2, 30)) << "rank " << r;
  job.inject(3, SIGKILL);
  ASSERT_TRUE(job.reap(3, 10));
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(job.waitPhase(r, 4, 30)) << "rank " << r;
  job.inject(2, SIGKILL);
  ASSERT_TRUE(job.reap(2, 10));
  ASSERT_TRUE(job.waitExit({0, 1}));
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << job.report(r).message;
    EXPECT_EQ(std::string(job.report(r).message), "0,0,0,1 0,0,0 0,0")
        << "domains: at init, after losing the gloo rank, after losing a host rank";
  }
#endif
}

// Two host and two gloo ranks lose gloo rank 3: the gloo domain shrinks to one rank (its native
// communicator formed again), and the cross-domain collectives of the survivors are exact.
TEST(ShrinkHetero, AGlooDomainShrinks) {
#ifndef MIXCCL_TEST_GLOO_DIR
  GTEST_SKIP() << "the gloo adaptor is not built";
#else
  ASSERT_TRUE(kGlooPathSet);
  constexpr int kRanks = 4;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.timeout = kTimeoutS;
    cfg.adaptor = rank >= 2 ? "gloo" : "host";
    mixcclComm_t comm;
    if (mixcclCommInitRankConfig(&comm, n, id, rank, &cfg) != mixcclSuccess) return 10;
    std::string seen = inspect(comm, "domains");
    std::vector<float> big(1 << 18, 1.0f);
    mixcclResult_t r = mixcclSuccess;
    for (int i = 0; i < 100000 && r == mixcclSuccess; ++i) {
      r = mixcclAllReduce(big.data(), big.data(), big.size(), mixcclFloat, mixcclSum, comm, nullptr);
      big.assign(big.size(), 1.0f);
      rep->phase.store(2);
    }
    int exclude[] = {3};
    mixcclComm_t next = nullptr;
    if (mixcclCommShrink(comm, exclude, 1, &next, nullptr, MIXCCL_SHRINK_ABORT) != mixcclSuccess) {
      fault::copyMessage(rep, mixcclGetLastError(comm));
      return 11;
    }
    mixcclCommDestroy(comm);
    for (size_t count : {(size_t)1, (size_t)1000, (size_t)1 << 18})
      if (int bad = exactAllReduce(next, count)) return 20 + bad;
    seen += " " + inspect(next, "domains") + " " + inspect(next, "algo.allreduce.1048576");
    fault::copyMessage(rep, seen.c_str());
    return mixcclCommDestroy(next) == mixcclSuccess ? 0 : 13;
  });
  for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(job.waitPhase(r, 2, 30)) << "rank " << r;
  job.inject(3, SIGKILL);
  ASSERT_TRUE(job.reap(3, 10));
  ASSERT_TRUE(job.waitExit({0, 1, 2}));
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << job.report(r).message;
    EXPECT_EQ(std::string(job.report(r).message), "0,0,1,1 0,0,1 hierarchical")
        << "domains before and after, and the cross-domain AllReduce after";
  }
#endif
}

// Bad arguments of shrink, revoke and grow leave the communicator usable (one rank: no peers
// needed).
TEST(ShrinkArgs, BadArgumentsAreRefused) {
  Job job(1, 30);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm;
    if (initRank(&comm, id, rank, n, "socket") != mixcclSuccess) return 10;
    mixcclComm_t out = nullptr;
    int self[] = {0}, range[] = {5};
    std::string all;
    // The message of comm's last error (of the thread's, for a call without comm).
    auto note = [&](mixcclResult_t r, mixcclComm_t of = nullptr) {
      all += std::to_string(r) + ":" + mixcclGetLastError(of) + "\n";
    };
    note(mixcclCommShrink(comm, self, 1, &out, nullptr, MIXCCL_SHRINK_DEFAULT), comm);
    note(mixcclCommShrink(comm, range, 1, &out, nullptr, MIXCCL_SHRINK_DEFAULT), comm);
    note(mixcclCommShrink(comm, nullptr, 0, &out, nullptr, 7), comm);
    note(mixcclCommRevoke(comm, 1), comm);
    mixcclUniqueId growId;
    note(mixcclCommGrow(comm, 2, nullptr, 0, &out, nullptr), comm);
    note(mixcclCommGrow(comm, 1, nullptr, -1, &out, nullptr), comm);
    note(mixcclCommGrow(comm, 2, nullptr, -1, &out, nullptr), comm);
    note(mixcclCommGrow(nullptr, 2, nullptr, 1, &out, nullptr));
    note(mixcclCommGetUniqueId(comm, nullptr), comm);
    if (mixcclCommGetUniqueId(comm, &growId) != mixcclSuccess) return 13;
    fault::copyMessage(rep, all.c_str());
    int bad = exactAllReduce(comm, 10);
    return mixcclCommDestroy(comm) == mixcclSuccess ? bad : 12;
  });
  ASSERT_TRUE(job.waitExit());
  EXPECT_EQ(job.exitCode(0), 0);
  EXPECT_EQ(std::string(job.report(0).message),
            "5:mixcclCommShrink: this rank (0) is in its own exclude list: excluded ranks do not "
            "call mixcclCommShrink\n"
            "4:mixcclCommShrink: excluded rank 5 is out of range [0, 1)\n"
            "4:mixcclCommShrink: flags 0x7 is neither MIXCCL_SHRINK_DEFAULT nor "
            "MIXCCL_SHRINK_ABORT\n"
            "4:mixcclCommRevoke: flags 0x1 must be MIXCCL_REVOKE_DEFAULT (0)\n"
            "4:mixcclCommGrow: rank 0 must be -1 on a rank of comm (it keeps its rank 0)\n"
            "4:mixcclCommGrow: nranks 1 must exceed comm's 1 ranks\n"
            "5:mixcclCommGrow: no rank of comm passed the unique id (the rank that called "
            "mixcclCommGetUniqueId passes it, the others NULL)\n"
            "4:mixcclCommGrow: a joining rank (comm NULL) needs the unique id\n"
            "4:mixcclCommGetUniqueId: uniqueId is NULL\n");
}

}  // namespace
