// Nothing leaks over repeated shrinks: the fds and threads after ten shrinks (alternately of a
// healthy communicator and of a revoked one) are those after the first communicator's init.
#include "shrink_harness.h"

namespace shrinktest {
namespace {

// Ten shrinks in a row (alternately of a healthy communicator, and of one rank 0 revoked with
// MIXCCL_SHRINK_ABORT), each parent destroyed after its child works: the fds and threads are
// those after the first communicator's init.
TEST_P(ShrinkTest, TenShrinkCyclesLeakNothing) {
  const char* net = GetParam();
  constexpr int kRanks = 3, kCycles = 10;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  startRanks(job, net, kTimeoutS, [&](Rank& me) {
    RankReport* rep = me.rep;
    mixcclComm_t comm = me.comm;
    if (exactAllReduce(comm, 100)) return 11;
    rep->fdsBefore = fault::countFds();
    rep->threadsAfterDestroy = fault::countThreads();
    for (int c = 0; c < kCycles; ++c) {
      // Stopping a communicator (revoke, shrink with abort) fails the calls the peers still have
      // in flight on it, by design: the ranks first meet here, outside the library.
      rep->phase.store(c + 1);
      for (int r = 0; r < me.n; ++r)
        while (me.sh->ranks[r].phase.load() < c + 1) usleep(200);
      const bool abort = c % 2 == 1;
      if (abort && me.rank == 0 && mixcclCommRevoke(comm, MIXCCL_REVOKE_DEFAULT) != mixcclSuccess)
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

}  // namespace
}  // namespace shrinktest
