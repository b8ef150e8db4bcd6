// The bootstrap at scale (bootstrap/peer_exchange.h, docs/scale.md): the peer-info exchange
// along the tree fails every rank with the same cause, naming the rank that died inside it or
// stopped answering, within the bound; mixcclCommInitRankScalable spreads the rendezvous over
// 2 and 3 roots and the job works (the roots' admission counts prove each served its block and
// the guests); its argument checks. Ranks are forked processes (tests/fault/fault_harness.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/peer_exchange.h"
#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "fault_harness.h"

namespace {

using fault::Job;
using fault::now;
using fault::RankReport;
using fault::Shared;

constexpr int kRanks = 6, kVictim = 1;  // rank 1: parent 0, children 3 and 4

// A rank of the real library: init, record what it returned and when.
int initAndReport(const mixcclUniqueId& id, int rank, int n, int timeoutS, Shared* sh) {
  RankReport* rep = &sh->ranks[rank];
  rep->phase.store(1);
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.timeout = timeoutS;
  mixcclComm_t comm = nullptr;
  mixcclResult_t r = mixcclCommInitRankConfig(&comm, n, id, rank, &cfg);
  rep->code = r;
  rep->failedAt = now();
  fault::copyMessage(rep, mixcclGetLastError(nullptr));
  rep->threadsAfterDestroy = fault::countThreads();
  if (comm) mixcclCommDestroy(comm);
  return comm == nullptr ? 0 : 1;
}

// The victim runs the bootstrap by hand (internal API) and stops once connected to its tree
// neighbours, before sending its records: phase 2 says it is there.
int victimInsideTheExchange(const mixcclUniqueId& uid, int rank, int n, Shared* sh) {
  using namespace mixccl;
  UniqueIdData id;
  if (decodeUniqueId(uid, &id) != mixcclSuccess) return 3;
  SocketAddress any, bound;
  Socket listener;
  if (parseHostPort("127.0.0.1:0", &any) != mixcclSuccess ||
      listenOn(any, &listener, &bound) != mixcclSuccess)
    return 4;
  PeerInfo mine{};
  fillLocalHostInfo(&mine);
  mine.rank = rank;
  mine.listenAddr = toWire(bound);
  snprintf(mine.adaptor, sizeof(mine.adaptor), "host");
  mine.device = -1;
  const Deadline deadline = Deadline::afterSeconds(30);
  ExchangePlace place;
  if (joinRendezvous({id}, rank, n, mine, deadline, &place) != mixcclSuccess) return 5;
  TreeExchange exchange(std::move(place), deadline);
  if (exchange.connect() != mixcclSuccess) return 6;
  sh->ranks[rank].phase.store(2);
  pause();
  return 7;
}

std::string named(int r, pid_t pid) {
  return "rank " + std::to_string(r) + " (" + fault::hostName() + " pid " + std::to_string(pid) +
         ")";
}

// kill -9 of rank 1 inside the exchange: its parent (0) and children (3, 4) see its connection
// close; 0 sends the cause on to 2, and 2 to 5. Every survivor fails at once with the same cause
// (the rank that saw the connection close named in it).
TEST(BootstrapExchange, ARankKilledInsideTheExchangeIsNamedByEveryOther) {
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    return rank == kVictim ? victimInsideTheExchange(id, rank, n, sh)
                           : initAndReport(id, rank, n, 30, sh);
  });
  ASSERT_TRUE(job.waitPhase(kVictim, 2, 20));
  fault::sleepSeconds(0.3);  // the others now wait inside the exchange
  job.inject(kVictim, SIGKILL);
  ASSERT_TRUE(job.waitExit());
  for (int r : {0, 2, 3, 4, 5}) {
    const RankReport& rep = job.report(r);
    const double latency = rep.failedAt - job.shared()->injectedAt;
    fprintf(stderr, "[killed inside the exchange] rank %d: %s after %.3f s: %s\n", r,
            mixcclGetErrorString((mixcclResult_t)rep.code), latency, rep.message);
    const int saw = (r == 2 || r == 5) ? 0 : r;
    EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
    EXPECT_EQ(rep.code, mixcclRemoteError) << "rank " << r;
    EXPECT_EQ(std::string(rep.message),
              "rank " + std::to_string(r) + " of 6: peer-info exchange: " +
                  named(kVictim, job.pid(kVictim)) +
                  " left during the peer-info exchange (its connection with rank " +
                  std::to_string(saw) + " closed)");
    EXPECT_LT(latency, 1.0) << "rank " << r;
    EXPECT_EQ(rep.threadsAfterDestroy, 1) << "rank " << r;
  }
  EXPECT_TRUE(Job::noChildrenLeft());
}

// A rank that stops answering inside the exchange: every other rank's init ends with
// mixcclTimeout at its bound (2 s), and the ranks next to it name it.
TEST(BootstrapExchange, ARankStoppedInsideTheExchangeTimesEveryOtherOutWithinTheBound) {
  const int timeoutS = 2;
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    return rank == kVictim ? victimInsideTheExchange(id, rank, n, sh)
                           : initAndReport(id, rank, n, timeoutS, sh);
  });
  ASSERT_TRUE(job.waitPhase(kVictim, 2, 20));
  const double stoppedAt = now();
  ASSERT_TRUE(job.waitExit({0, 2, 3, 4, 5}));
  job.inject(kVictim, SIGKILL);
  ASSERT_TRUE(job.reap(kVictim, 10));
  job.shared()->injectedAt = stoppedAt;
  for (int r : {0, 2, 3, 4, 5}) {
    const RankReport& rep = job.report(r);
    fprintf(stderr, "[stopped inside the exchange] rank %d: %s after %.3f s: %s\n", r,
            mixcclGetErrorString((mixcclResult_t)rep.code),
            rep.failedAt - job.shared()->injectedAt, rep.message);
    EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
    EXPECT_EQ(rep.code, mixcclTimeout) << "rank " << r;
    // Each rank's deadline counts from its own start, before the victim was in place.
    EXPECT_LT(rep.failedAt - job.shared()->injectedAt, timeoutS + 1.0) << "rank " << r;
    if (r == 0 || r == 3 || r == 4) {
      EXPECT_NE(std::string(rep.message).find(named(kVictim, job.pid(kVictim)) +
                                              " sent nothing within the init's time limit"),
                std::string::npos)
          << "rank " << r << ": " << rep.message;
    }
  }
  EXPECT_TRUE(Job::noChildrenLeft());
}

// nroots ids made in this process (nroots roots); every rank inits with all of them and sums.
void runScalableJob(int n, int nroots, bool blocking) {
  const mixccl::RootConnectionCounts before = mixccl::rootConnectionCounts();
  std::vector<mixcclUniqueId> ids(nroots);
  for (mixcclUniqueId& id : ids) ASSERT_EQ(mixcclGetUniqueId(&id), mixcclSuccess);
  Job job(n, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId&, int rank, int nranks, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
    cfg.blocking = blocking ? 1 : 0;
    mixcclComm_t comm = nullptr;
    mixcclResult_t r =
        mixcclCommInitRankScalable(&comm, nranks, rank, nroots, ids.data(), &cfg);
    while (r == mixcclInProgress) {
      usleep(1000);
      if (mixcclCommGetAsyncError(comm, &r) != mixcclSuccess) return 2;
    }
    rep->code = r;
    fault::copyMessage(rep, mixcclGetLastError(comm));
    if (r != mixcclSuccess) return 3;
    float v = (float)(rank + 1);
    if (mixcclAllReduce(&v, &v, 1, mixcclFloat, mixcclSum, comm, nullptr) != mixcclSuccess)
      return 4;
    rep->iterations = (int)v;
    int count = 0, me = -1;
    mixcclCommCount(comm, &count);
    mixcclCommUserRank(comm, &me);
    rep->phase.store(count * 1000 + me);
    return mixcclCommDestroy(comm) == mixcclSuccess ? 0 : 5;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(job.exitCode(r), 0) << job.report(r).message;
    EXPECT_EQ(job.report(r).code, mixcclSuccess);
    EXPECT_EQ(job.report(r).iterations, n * (n + 1) / 2);
    EXPECT_EQ(job.report(r).phase.load(), n * 1000 + r);
  }
  // Each root admitted its block, and the roots above a block its leader as a guest: n ranks
  // and nroots - 1 guests in all (one root would admit n).
  const mixccl::RootConnectionCounts after = mixccl::rootConnectionCounts();
  EXPECT_EQ(after.admitted - before.admitted, (uint64_t)(n + nroots - 1));
  EXPECT_TRUE(Job::noChildrenLeft());
}

TEST(BootstrapScalable, TwoRootsFiveRanks) { runScalableJob(5, 2, true); }
TEST(BootstrapScalable, ThreeRootsSevenRanksNonBlocking) { runScalableJob(7, 3, false); }

TEST(BootstrapScalable, ArgumentsAreCheckedWithClearMessages) {
  mixcclUniqueId ids[2];
  for (mixcclUniqueId& id : ids) ASSERT_EQ(mixcclGetUniqueId(&id), mixcclSuccess);
  mixcclComm_t comm = nullptr;
  EXPECT_EQ(mixcclCommInitRankScalable(&comm, 4, 0, 5, ids, nullptr), mixcclInvalidArgument);
  EXPECT_STREQ(mixcclGetLastError(nullptr),
               "mixcclCommInitRankScalable: nId 5 must be between 1 and nranks (4)");
  EXPECT_EQ(mixcclCommInitRankScalable(&comm, 4, 0, 0, ids, nullptr), mixcclInvalidArgument);
  EXPECT_STREQ(mixcclGetLastError(nullptr),
               "mixcclCommInitRankScalable: nId 0 must be between 1 and nranks (4)");
  EXPECT_EQ(mixcclCommInitRankScalable(&comm, 4, 0, 2, nullptr, nullptr), mixcclInvalidArgument);
  EXPECT_STREQ(mixcclGetLastError(nullptr), "mixcclCommInitRankScalable: commIds is NULL");
  EXPECT_EQ(mixcclCommInitRankScalable(&comm, 4, 4, 2, ids, nullptr), mixcclInvalidArgument);
  EXPECT_STREQ(mixcclGetLastError(nullptr),
               "mixcclCommInitRankScalable: rank 4 is out of range [0, 4)");
  EXPECT_EQ(comm, nullptr);
}

}  // namespace
