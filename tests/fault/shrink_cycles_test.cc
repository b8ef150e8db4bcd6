// Nothing leaks over repeated shrink/grow cycles: in each, one rank leaves (the survivors shrink
// without it) and comes back (mixcclCommGrow), alternately on a healthy communicator and on one
// that was revoked (MIXCCL_SHRINK_ABORT). Afterwards every process has the fds, threads and
// /dev/shm names it had after its first communicator's init. MIXCCL_TEST_SHRINK_CYCLES sets the
// number of cycles (default 10; the full run, MIXCCL_TEST_FAULT_FULL in CMake, 20).
#include <cstring>
#include <set>
#include <string>

#include "shrink_harness.h"

namespace shrinktest {
namespace {

constexpr int kRanks = 3;
// The slot of the shared reports that hands the grow id from the survivors' rank 0 to the rank
// that rejoins: its message holds the id, released the cycle it belongs to (+1).
constexpr int kHandover = 15;

// One cycle on this process: the rank numbered `leaving` in comm leaves and rejoins; returns the
// grown communicator in *comm (the old ones destroyed), or an exit code for the parent.
int shrinkAndGrow(Rank& me, const char* net, int cycle, mixcclComm_t* comm) {
  RankReport* handover = &me.sh->ranks[kHandover];
  int rank = -1;
  mixcclCommUserRank(*comm, &rank);
  const int leaving = cycle % kRanks;
  const bool revoked = cycle % 2 == 1;
  if (revoked && rank == (leaving == 0 ? 1 : 0) &&
      mixcclCommRevoke(*comm, MIXCCL_REVOKE_DEFAULT) != mixcclSuccess)
    return 31;
  mixcclComm_t grown = nullptr;
  if (rank == leaving) {
    while (handover->released.load() != cycle + 1) usleep(200);
    mixcclUniqueId id;
    memcpy(&id, handover->message, sizeof(id));
    if (mixcclCommDestroy(*comm) != mixcclSuccess) return 32;
    mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.timeout = kTimeoutS;
    cfg.netName = net;
    if (mixcclCommGrow(nullptr, kRanks, &id, kRanks - 1, &grown, &cfg) != mixcclSuccess) {
      fault::copyMessage(me.rep, mixcclGetLastError(nullptr));
      return 33;
    }
  } else {
    int exclude[] = {leaving};
    mixcclComm_t shrunk = nullptr;
    if (mixcclCommShrink(*comm, exclude, 1, &shrunk, nullptr,
                         revoked ? MIXCCL_SHRINK_ABORT : MIXCCL_SHRINK_DEFAULT) != mixcclSuccess) {
      fault::copyMessage(me.rep, mixcclGetLastError(*comm));
      return 34;
    }
    if (mixcclCommDestroy(*comm) != mixcclSuccess) return 35;
    mixcclUniqueId id;
    const bool holder = placeOf(shrunk) / 100 == 0;
    if (holder) {
      if (mixcclCommGetUniqueId(shrunk, &id) != mixcclSuccess) return 36;
      memcpy(handover->message, &id, sizeof(id));
      handover->released.store(cycle + 1);
    }
    if (mixcclCommGrow(shrunk, kRanks, holder ? &id : nullptr, -1, &grown, nullptr) !=
        mixcclSuccess) {
      fault::copyMessage(me.rep, mixcclGetLastError(shrunk));
      return 37;
    }
    if (mixcclCommDestroy(shrunk) != mixcclSuccess) return 38;
  }
  *comm = grown;
  return 0;
}

TEST_P(ShrinkTest, ShrinkGrowCyclesLeakNothing) {
  const char* net = GetParam();
  const int cycles = fault::envCount("MIXCCL_TEST_SHRINK_CYCLES", 10);
  const std::set<std::string> shmBefore = fault::shmFiles();
  Job job(kRanks, 30 + 3.0 * cycles);
  ASSERT_TRUE(job.ok());
  const double t0 = now();
  startRanks(job, net, kTimeoutS, [&](Rank& me) {
    RankReport* rep = me.rep;
    mixcclComm_t comm = me.comm;
    if (exactAllReduce(comm, 100)) return 11;
    rep->fdsBefore = fault::countFds();
    rep->threadsAfterDestroy = fault::countThreads();
    const std::set<std::string> shm = fault::shmFiles();
    for (int c = 0; c < cycles; ++c) {
      // Stopping a communicator (revoke, shrink with abort) fails the calls the peers still have
      // in flight on it, by design: the ranks first meet here, outside the library.
      rep->phase.store(c + 1);
      for (int r = 0; r < me.n; ++r)
        while (me.sh->ranks[r].phase.load() < c + 1) usleep(200);
      if (int failed = shrinkAndGrow(me, net, c, &comm)) return failed;
      if (int bad = exactAllReduce(comm, 1000)) {
        fault::copyMessage(rep, mixcclGetLastError(comm));
        return 20 + bad;
      }
    }
    rep->fdsAfter = fault::countFds();
    rep->iterations = fault::countThreads();
    // The job's own ranks (the children of the test process) count as its own holders.
    const std::string left = fault::shmLeftSince(shm, "mixccl", 5.0, getppid());
    if (!left.empty()) fault::copyMessage(rep, ("new in /dev/shm: " + left).c_str());
    if (mixcclCommDestroy(comm) != mixcclSuccess) return 14;
    return left.empty() ? 0 : 15;
  });
  ASSERT_TRUE(job.waitExit());
  printf("[%s] %d shrink/grow cycles of %d ranks in %.2f s\n", net, cycles, kRanks, now() - t0);
  for (int r = 0; r < kRanks; ++r) {
    const RankReport& rep = job.report(r);
    SCOPED_TRACE("process " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << rep.message;
    EXPECT_EQ(rep.fdsAfter, rep.fdsBefore) << "fds after " << cycles << " cycles";
    EXPECT_EQ(rep.iterations, rep.threadsAfterDestroy) << "threads after " << cycles << " cycles";
  }
  EXPECT_EQ(fault::shmLeftSince(shmBefore), "") << "left in /dev/shm by the job";
}

}  // namespace
}  // namespace shrinktest
