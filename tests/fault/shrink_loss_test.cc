// Losing ranks in the middle of an AllReduce and going on: kill -9 of one and of two ranks, a
// stuck rank (SIGSTOP) found at the timeout; the survivors shrink with MIXCCL_SHRINK_ABORT and
// their next collectives are bit-exact, with the time from the signal to a working new
// communicator printed as a distribution; then a replacement joins by mixcclCommGrow.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "shrink_harness.h"

namespace shrinktest {
namespace {

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
    startRanks(job, net, timeoutS, [&](Rank& me) {
      RankReport* rep = me.rep;
      rep->code = allReduceUntilFailure(me.comm, rep, 2);
      mixcclComm_t shrunk = nullptr;
      rep->laterCode = mixcclCommShrink(me.comm, victims.data(), (int)victims.size(), &shrunk,
                                        nullptr, MIXCCL_SHRINK_ABORT);
      if (rep->laterCode != mixcclSuccess) {
        fault::copyMessage(rep, mixcclGetLastError(me.comm));
        return 11;
      }
      int bad = exactAllReduce(shrunk, 1);
      rep->laterSeconds = now() - me.sh->injectedAt;
      for (size_t count : {(size_t)1000, (size_t)1 << 18})
        if (!bad) bad = exactAllReduce(shrunk, count);
      rep->iterations = placeOf(shrunk);
      // The new communicator inherits the transport the test forces.
      const int place = rep->iterations;
      const std::string peer = "transport." + std::to_string((place / 100 + 1) % (place % 100));
      fault::copyMessage(rep, inspect(shrunk, peer.c_str()).c_str());
      if (mixcclCommDestroy(shrunk) != mixcclSuccess || mixcclCommDestroy(me.comm) != mixcclSuccess)
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
  // Bounded, not timed: found by the timeout at the latest, then the shrink with its new
  // communicator, which over ofi in the ASan build on 2 loaded cores once took 1.36 s past
  // the timeout (the survivors' 3.36 s against a 2 s timeout).
  constexpr double kShrinkBoundS = 3.0;
  EXPECT_LT(times.back(), timeoutS + kShrinkBoundS) << "within the timeout plus 3 s";
}

TEST_P(ShrinkTest, KillMidAllReduceThenShrink) {
  loseRanksMidAllReduceThenShrink(GetParam(), {3}, SIGKILL, kTimeoutS);
}

// Two ranks killed at once (one of them rank 1, so the survivors' numbers change).
TEST_P(ShrinkTest, KillTwoMidAllReduceThenShrink) {
  loseRanksMidAllReduceThenShrink(GetParam(), {1, 3}, SIGKILL, kTimeoutS);
}

// A stuck rank (SIGSTOP) is found at the timeout (1 s here, ofi 2 s), then shrunk away like a
// dead one.
TEST_P(ShrinkTest, StuckRankTimesOutThenShrink) {
  loseRanksMidAllReduceThenShrink(GetParam(), {2}, SIGSTOP, shortTimeoutFor(GetParam()));
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
  startRanks(job, net, kTimeoutS, [&](Rank& me) {
    RankReport* rep = me.rep;
    RankReport* handover = &me.sh->ranks[kReplacement];
    mixcclComm_t grown = nullptr, shrunk = nullptr;
    if (me.rank == kReplacement) {
      while (!handover->released.load()) usleep(500);
      mixcclUniqueId growId;
      memcpy(&growId, handover->message, sizeof(growId));
      mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
      cfg.timeout = kTimeoutS;
      cfg.netName = net;
      rep->code = mixcclCommGrow(nullptr, kRanks, &growId, kVictim, &grown, &cfg);
      if (rep->code != mixcclSuccess) return 11;
    } else {
      allReduceUntilFailure(me.comm, rep, 2);
      int exclude[] = {kVictim};
      if (mixcclCommShrink(me.comm, exclude, 1, &shrunk, nullptr, MIXCCL_SHRINK_ABORT) !=
          mixcclSuccess)
        return 12;
      mixcclUniqueId growId;
      if (me.rank == 0) {
        if (mixcclCommGetUniqueId(shrunk, &growId) != mixcclSuccess) return 13;
        memcpy(handover->message, &growId, sizeof(growId));
        handover->released.store(1);
      }
      rep->code = mixcclCommGrow(shrunk, kRanks, me.rank == 0 ? &growId : nullptr, -1, &grown,
                                 nullptr);
      if (rep->code != mixcclSuccess) {
        fault::copyMessage(rep, mixcclGetLastError(shrunk));
        return 14;
      }
    }
    int bad = 0;
    for (size_t count : {(size_t)1, (size_t)1000, (size_t)1 << 18})
      if (!bad) bad = exactAllReduce(grown, count);
    rep->iterations = placeOf(grown);
    const bool isNewRank = rep->iterations / 100 == kVictim;
    std::vector<int32_t> b(1000, isNewRank ? 7 : 0);
    if (mixcclBroadcast(b.data(), b.data(), b.size(), mixcclInt32, kVictim, grown, nullptr) !=
            mixcclSuccess ||
        b[0] != 7 || b[999] != 7)
      bad = 9;
    if (mixcclCommDestroy(grown) != mixcclSuccess) return 15;
    if (shrunk && mixcclCommDestroy(shrunk) != mixcclSuccess) return 16;
    if (me.comm && mixcclCommDestroy(me.comm) != mixcclSuccess) return 17;
    return bad ? 20 + bad : 0;
  }, kRanks);
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

}  // namespace
}  // namespace shrinktest
