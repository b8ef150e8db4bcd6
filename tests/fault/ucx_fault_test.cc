// Faults over the UCX transport (MIXCCL_NET=ucx, docs/transports.md "UCX"), across real rank
// processes: kill -9 in the middle of a large AllReduce over UCX's tcp (UCX's endpoint error
// and the control connection both tell of it) and over its shared-memory transports (only the
// control connection can: UCX has no peer-failure detection there); a stopped peer (SIGSTOP)
// ends in mixcclTimeout at the bound; abort from another thread; a rank asking for ucx while
// its peer asks for socket. Each rank first checks through mixcclCommInspect that every pair
// really runs over ucx, and reports its threads and fds after destroy, which must be what they
// were before init.
#include <gtest/gtest.h>

#include <dirent.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fault_harness.h"

namespace {

using fault::Job;
using fault::now;
using fault::RankReport;
using fault::Shared;

constexpr double kPromptSeconds = 1.0;

// Sets UCX_TLS for the ranks the test forks (UCX reads it in each rank at init).
struct UcxTls {
  explicit UcxTls(const char* tls) { setenv("UCX_TLS", tls, 1); }
  ~UcxTls() { unsetenv("UCX_TLS"); }
};

mixcclResult_t initUcx(mixcclComm_t* comm, const mixcclUniqueId& id, int rank, int n,
                       int timeoutS, const char* net = "ucx") {
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.timeout = timeoutS;
  cfg.netName = net;
  return mixcclCommInitRankConfig(comm, n, id, rank, &cfg);
}

// Every peer's transport is ucx (the forced setting took effect).
bool allUcx(mixcclComm_t comm, int rank, int n) {
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    char v[64] = {0};
    std::string key = "transport." + std::to_string(p);
    if (mixcclCommInspect(comm, key.c_str(), v, sizeof(v)) != mixcclSuccess ||
        std::string(v) != "ucx")
      return false;
  }
  return true;
}

std::string named(int r) { return "rank " + std::to_string(r) + " (" + fault::hostName(); }

// Every rank loops over a large AllReduce until it fails; survivors report.
int loopUntilFailure(const mixcclUniqueId& id, int rank, int n, Shared* sh, int timeoutS) {
  RankReport* rep = &sh->ranks[rank];
  rep->fdsBefore = fault::countFds();
  mixcclComm_t comm;
  if (initUcx(&comm, id, rank, n, timeoutS) != mixcclSuccess) return 3;
  if (!allUcx(comm, rank, n)) return 4;
  std::vector<float> buf(1 << 20, 1.0f);
  for (int i = 0; i < 1000000; ++i) {
    mixcclResult_t r = mixcclAllReduce(buf.data(), buf.data(), buf.size(), mixcclFloat, mixcclSum,
                                       comm, nullptr);
    if (r != mixcclSuccess) {
      int rc = fault::reportFailureAndDestroy(comm, rep, r, [&] {
        float v = 1;
        return mixcclAllReduce(&v, &v, 1, mixcclFloat, mixcclSum, comm, nullptr);
      });
      rep->fdsAfter = fault::countFds();
      return rc;
    }
    rep->iterations = i + 1;
    rep->phase.store(2);
  }
  return 5;
}

void expectCleanSurvivor(Job& job, int r, const char* what, double bound) {
  const RankReport& rep = job.report(r);
  SCOPED_TRACE(std::string(what) + ", rank " + std::to_string(r));
  EXPECT_EQ(job.exitCode(r), 0);
  double latency = rep.failedAt - job.shared()->injectedAt;
  fprintf(stderr, "[%s] rank %d: %s after %.3f s (destroy %.4f s, fds %d -> %d): %s\n", what, r,
          mixcclGetErrorString((mixcclResult_t)rep.code), latency, rep.destroySeconds,
          rep.fdsBefore, rep.fdsAfter, rep.message);
  EXPECT_LT(latency, bound);
  EXPECT_NE(rep.laterCode, mixcclSuccess);
  EXPECT_LT(rep.laterSeconds, 0.2);
  EXPECT_LT(rep.destroySeconds, 1.0);
  EXPECT_EQ(rep.threadsAfterDestroy, 1) << "threads left after mixcclCommDestroy";
  EXPECT_EQ(rep.fdsAfter, rep.fdsBefore) << "fds left after mixcclCommDestroy";
}

void killNineMidAllReduce(const char* tls) {
  UcxTls env(tls);
  const std::set<std::string> shmBefore = fault::shmFiles("");  // UCX's files too
  const int n = 3, victim = 1;
  Job job(n, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    return loopUntilFailure(id, rank, nranks, sh, 30);
  });
  ASSERT_TRUE(job.waitPhase(victim, 2, 20)) << "the victim never got going (exit codes: "
                                           << "3 init failed, 4 not ucx)";
  fault::sleepSeconds(0.02);
  job.inject(victim, SIGKILL);
  ASSERT_TRUE(job.waitExit());
  int namingVictim = 0;
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(job.report(r).code, mixcclRemoteError) << "rank " << r;
    expectCleanSurvivor(job, r, tls, kPromptSeconds);
    namingVictim += std::string(job.report(r).message).find(named(victim)) != std::string::npos;
  }
  EXPECT_GE(namingVictim, 1) << "no survivor named the killed rank";
  EXPECT_TRUE(Job::noChildrenLeft()) << "a rank process was left behind";
  EXPECT_EQ(fault::shmLeftSince(shmBefore, ""), "") << "files were left in /dev/shm";
}

}  // namespace

// UCX's tcp transport detects the dead peer itself (UCP_ERR_HANDLING_MODE_PEER), and so does
// the control connection: the first to tell names the peer.
TEST(UcxFault, KillNineMidAllReduceOverTcpNamesThePeerWithinASecond) { killNineMidAllReduce("tcp"); }

// UCX's shared-memory transports cannot detect a dead peer: the control connection does.
TEST(UcxFault, KillNineMidAllReduceOverSharedMemoryNamesThePeerWithinASecond) {
  killNineMidAllReduce("sm,self");
}

// A peer that stops (SIGSTOP) makes the others fail with mixcclTimeout at the bound (or
// mixcclRemoteError when another survivor gave up first), not earlier and not much later,
// naming it.
TEST(UcxFault, StalledPeerTimesOutAtTheBound) {
  UcxTls env("tcp");
  const int n = 3, victim = 2, timeoutS = 2;
  Job job(n, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    return loopUntilFailure(id, rank, nranks, sh, timeoutS);
  });
  ASSERT_EQ(job.stallUntilOthersExit(victim, {0, 1}, 20), "");
  int timeouts = 0;
  for (int r : {0, 1}) {
    int code = job.report(r).code;
    EXPECT_TRUE(code == mixcclTimeout || code == mixcclRemoteError) << "rank " << r;
    timeouts += code == mixcclTimeout;
    double latency = job.report(r).failedAt - job.shared()->injectedAt;  // the stop
    EXPECT_GT(latency, timeoutS - 1.0) << "rank " << r << " gave up before the bound";
    expectCleanSurvivor(job, r, "SIGSTOP over ucx", timeoutS + 1.5);
  }
  EXPECT_GE(timeouts, 1) << "someone must see the stall as a timeout";
  // Every survivor names the stopped rank as the one it, or the survivor that told it, waited
  // for; none says a survivor failed (stall_blame_test.cc asserts the messages' exact shapes).
  for (int r : {0, 1}) {
    const std::string msg = job.report(r).message;
    EXPECT_NE(msg.find("waiting for " + named(victim)), std::string::npos) << msg;
    EXPECT_EQ(msg.find(" failed"), std::string::npos) << msg;
  }
}

// mixcclCommAbort from another thread ends a blocked large AllReduce over ucx within a
// second; the peer fails promptly, naming rank 0.
TEST(UcxFault, AbortFromAnotherThreadEndsALargeAllReduce) {
  UcxTls env("tcp");
  Job job(2, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    rep->fdsBefore = fault::countFds();
    mixcclComm_t comm;
    if (initUcx(&comm, id, rank, nranks, 30) != mixcclSuccess) return 3;
    if (!allUcx(comm, rank, nranks)) return 4;
    std::vector<float> buf(4 << 20, 1.0f);
    std::thread aborter;
    if (rank == 0)
      aborter = std::thread([&] {
        while (rep->phase.load() < 2) usleep(500);
        fault::sleepSeconds(0.05);
        sh->injectedAt = now();
        rep->laterCode = mixcclCommAbort(comm);
      });
    for (int i = 0; i < 1000000; ++i) {
      mixcclResult_t r = mixcclAllReduce(buf.data(), buf.data(), buf.size(), mixcclFloat,
                                         mixcclSum, comm, nullptr);
      if (r != mixcclSuccess) {
        if (rank == 0) {
          rep->code = r;
          rep->failedAt = now();
          break;
        }
        int rc = fault::reportFailureAndDestroy(comm, rep, r, [&] {
          float v = 1;
          return mixcclAllReduce(&v, &v, 1, mixcclFloat, mixcclSum, comm, nullptr);
        });
        rep->fdsAfter = fault::countFds();
        return rc;
      }
      rep->phase.store(2);
    }
    aborter.join();
    rep->threadsAfterDestroy = fault::countThreads();
    rep->fdsAfter = fault::countFds();
    return rep->laterCode == mixcclSuccess && rep->code != mixcclSuccess ? 0 : 7;
  });
  ASSERT_TRUE(job.waitExit());
  EXPECT_EQ(job.exitCode(0), 0);
  EXPECT_LT(job.report(0).failedAt - job.shared()->injectedAt, 1.0);
  EXPECT_EQ(job.report(0).threadsAfterDestroy, 1);
  EXPECT_EQ(job.report(0).fdsAfter, job.report(0).fdsBefore);
  EXPECT_EQ(job.report(1).code, mixcclRemoteError);
  expectCleanSurvivor(job, 1, "abort over ucx (peer)", kPromptSeconds);
  EXPECT_NE(std::string(job.report(1).message).find(named(0)), std::string::npos);
}

// Both ranks of a pair must ask for the same transport; each gets the same exact message,
// naming itself, the peer and both names.
TEST(UcxFault, RankAskingUcxWhilePeerAsksSocketGetsTheExactError) {
  Job job(2, 30);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm = nullptr;
    rep->code = initUcx(&comm, id, rank, nranks, 10, rank == 0 ? "ucx" : "socket");
    fault::copyMessage(rep, mixcclGetLastError(nullptr));
    return rep->code == mixcclSuccess ? 5 : 0;
  });
  ASSERT_TRUE(job.waitExit());
  const char* asked[2] = {"ucx", "socket"};
  for (int r = 0; r < 2; ++r) {
    int p = 1 - r;
    EXPECT_EQ(job.exitCode(r), 0);
    EXPECT_EQ(job.report(r).code, mixcclInvalidUsage);
    std::string want = "rank " + std::to_string(r) + " asked for transport '" + asked[r] +
                       "' (config.netName) but " + named(p) + " pid " +
                       std::to_string(job.pid(p)) + ") asked for '" + asked[p] +
                       "': every rank of a communicator must ask for the same transport "
                       "(MIXCCL_NET / config.netName)";
    EXPECT_EQ(std::string(job.report(r).message), want) << "rank " << r;
  }
}
