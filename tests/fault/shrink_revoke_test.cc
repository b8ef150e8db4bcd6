// mixcclCommRevoke: ranks blocked in different calls all return once one rank revokes the
// communicator from a second thread, with the revoking rank named; later calls fail at once; a
// shrink without MIXCCL_SHRINK_ABORT is refused, and one with it gives a working communicator.
#include <string>
#include <thread>
#include <vector>

#include "shrink_harness.h"

namespace shrinktest {
namespace {

// Ranks blocked in different calls (an AllReduce that ranks 2 and 3 never join, a Recv from
// rank 3, and rank 3's own Recv from rank 2: nothing any of them sends can match another's
// receive) all return once rank 3 revokes the communicator from a second thread; then all four
// shrink it to a working communicator.
TEST_P(ShrinkTest, RevokeReleasesBlockedRanks) {
  const char* net = GetParam();
  constexpr int kRanks = 4, kRevoker = 3;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  startRanks(job, net, kTimeoutS, [&](Rank& me) {
    RankReport* rep = me.rep;
    mixcclComm_t comm = me.comm;
    if (exactAllReduce(comm, 4) != 0) return 11;  // every pair is connected
    std::vector<float> buf(4 * 1024, 1.0f);
    std::thread revoker;
    rep->phase.store(2);
    if (me.rank == kRevoker) {
      revoker = std::thread([&] {
        fault::sleepSeconds(0.3);
        me.sh->injectedAt = now();
        rep->asyncCode = mixcclCommRevoke(comm, MIXCCL_REVOKE_DEFAULT);
      });
      rep->code = mixcclRecv(buf.data(), 1024, mixcclFloat, 2, comm, nullptr);
    } else if (me.rank == 2) {
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
            (me.rank == kRevoker ? mixcclInvalidUsage : mixcclRemoteError) ||
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

}  // namespace
}  // namespace shrinktest
