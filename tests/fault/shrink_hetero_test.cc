// Shrinking a job of several adaptors (where the gloo adaptor is built; skipped otherwise): the
// domain map and the cross-domain algorithms are rebuilt for the survivors, a domain whose only
// rank was lost disappears, and one that loses a rank has its native communicator formed again.
#include <string>

#include "shrink_harness.h"

namespace shrinktest {
namespace {

#ifdef MIXCCL_TEST_GLOO_DIR
// The gloo adaptor's folder; the environment is read once per process, so it is set before main.
const bool kGlooPathSet = [] { return setenv("MIXCCL_PLUGIN_PATH", MIXCCL_TEST_GLOO_DIR, 1) == 0; }();
#endif

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
    // Loss 1 (the gloo rank), then loss 2 (host rank 2: rank 2 of the first shrunk one too).
    for (int loss = 1; loss <= 2; ++loss) {
      allReduceUntilFailure(comm, rep, 2 * loss, 1 << 18);
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
    // The gloo adaptor ignores SIGPIPE where it was at its default (its writes to the killed
    // rank would end this one, status 141); the host ranks' disposition is left alone.
    struct sigaction pipe {};
    if (sigaction(SIGPIPE, nullptr, &pipe) != 0) return 14;
    if ((pipe.sa_handler == SIG_IGN) != (rank >= 2)) return 15;
    std::string seen = inspect(comm, "domains");
    allReduceUntilFailure(comm, rep, 2, 1 << 18);
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

}  // namespace
}  // namespace shrinktest
