// How the survivors of a shrink meet (shrink_rendezvous.h): mismatched exclude lists fail every
// caller with one message and leave the parent usable; a survivor that never arrives is named at
// the timeout on every caller; a healthy communicator shrinks without a rank that does not call,
// renumbering the others, and the parent keeps working.
#include <string>

#include "shrink_harness.h"

namespace shrinktest {
namespace {

// Ranks 0 and 2 exclude rank 3, rank 1 excludes rank 2: every caller gets the same
// mixcclInvalidUsage naming both lists, at once, and the parent stays usable (all four ranks
// then run an AllReduce on it).
TEST_P(ShrinkTest, MismatchedExcludeListsFailEverywhere) {
  const char* net = GetParam();
  constexpr int kRanks = 4;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  startRanks(job, net, kTimeoutS, [&](Rank& me) {
    RankReport* rep = me.rep;
    if (me.rank != 3) {
      int exclude[] = {me.rank == 1 ? 2 : 3};
      mixcclComm_t shrunk = nullptr;
      double t0 = now();
      rep->code = mixcclCommShrink(me.comm, exclude, 1, &shrunk, nullptr, MIXCCL_SHRINK_DEFAULT);
      rep->laterSeconds = now() - t0;
      fault::copyMessage(rep, mixcclGetLastError(me.comm));
      if (shrunk) return 11;
    }
    int bad = exactAllReduce(me.comm, 1000);
    return mixcclCommDestroy(me.comm) == mixcclSuccess ? bad : 12;
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
// fail with mixcclTimeout naming rank 2 at the timeout (1 s here, ofi 2 s), and the leader's
// message reaches rank 1 too (it waits up to 2 s past its own timeout for it).
TEST_P(ShrinkTest, SurvivorThatNeverArrivesIsNamed) {
  const char* net = GetParam();
  const int timeoutS = shortTimeoutFor(net);
  constexpr int kRanks = 4;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  startRanks(job, net, timeoutS, [&](Rank& me) {
    RankReport* rep = me.rep;
    if (me.rank < 2) {
      int exclude[] = {3};
      mixcclComm_t shrunk = nullptr;
      double t0 = now();
      rep->code = mixcclCommShrink(me.comm, exclude, 1, &shrunk, nullptr, MIXCCL_SHRINK_DEFAULT);
      rep->laterSeconds = now() - t0;
      fault::copyMessage(rep, mixcclGetLastError(me.comm));
      rep->phase.store(3);
    } else {
      for (int r = 0; r < 2; ++r)
        while (me.sh->ranks[r].phase.load() < 3) usleep(1000);
    }
    return mixcclCommDestroy(me.comm) == mixcclSuccess ? 0 : 12;
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
    EXPECT_GT(rep.laterSeconds, timeoutS - 0.1);
    // The timeout, plus a loaded machine's delays (a bound against a hang, not a speed).
    EXPECT_LT(rep.laterSeconds, timeoutS + 3.0);
  }
}

// A healthy communicator shrinks without rank 1 (which does not call): ranks 0, 2, 3 become 0,
// 1, 2 of a working communicator, and the parent still works with all four.
TEST_P(ShrinkTest, ShrinkHealthyCommunicator) {
  const char* net = GetParam();
  constexpr int kRanks = 4;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  startRanks(job, net, kTimeoutS, [&](Rank& me) {
    RankReport* rep = me.rep;
    if (me.rank != 1) {
      int exclude[] = {1};
      mixcclComm_t shrunk = nullptr;
      rep->code = mixcclCommShrink(me.comm, exclude, 1, &shrunk, nullptr, MIXCCL_SHRINK_DEFAULT);
      fault::copyMessage(rep, mixcclGetLastError(me.comm));
      if (rep->code != mixcclSuccess) return 11;
      rep->iterations = placeOf(shrunk);
      if (int bad = exactAllReduce(shrunk, 1 << 16)) return 20 + bad;
      if (mixcclCommDestroy(shrunk) != mixcclSuccess) return 12;
    }
    int bad = exactAllReduce(me.comm, 1000);
    return mixcclCommDestroy(me.comm) == mixcclSuccess ? (bad ? 30 + bad : 0) : 13;
  });
  ASSERT_TRUE(job.waitExit());
  const int expected[] = {0 * 100 + 3, 0, 1 * 100 + 3, 2 * 100 + 3};
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << job.report(r).message;
    if (r != 1) {
      EXPECT_EQ(job.report(r).iterations, expected[r]) << "new rank * 100 + new size";
    }
  }
}

}  // namespace
}  // namespace shrinktest
