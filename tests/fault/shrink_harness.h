// What the shrink, revoke and grow tests share (docs/reliability.md "Surviving a lost rank"):
// the per-transport fixture, a job whose ranks come up initialised over the transport under test,
// the loop that keeps a rank in AllReduces until a fault ends them, and an AllReduce whose exact
// result every rank knows. Ranks are forked processes (fault_harness.h).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "fault_harness.h"

namespace shrinktest {

using fault::Job;
using fault::now;
using fault::RankReport;
using fault::Shared;

// Every rank's MIXCCL_TIMEOUT_S where a test does not need another.
constexpr int kTimeoutS = 5;

// The timeout of a test that waits for it (a stopped rank): 1 s, but 2 s over ofi, whose init
// alone can take a second on a loaded machine (stall_blame_test.cc does the same).
inline int shortTimeoutFor(const std::string& net) { return net == "ofi" ? 2 : 1; }

// Parameterised by the transport (config netName): socket, shm, ucx (UCX_TLS=tcp) and ofi
// (tcp;ofi_rxm) where built; shrink_nets.cc instantiates it. Every test reaps its ranks.
class ShrinkTest : public ::testing::TestWithParam<const char*> {
 protected:
  void TearDown() override { EXPECT_TRUE(Job::noChildrenLeft()) << "a rank process was left behind"; }
};

inline mixcclResult_t initRank(mixcclComm_t* comm, const mixcclUniqueId& id, int rank, int n,
                               const char* net, int timeoutS = kTimeoutS) {
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.timeout = timeoutS;
  cfg.netName = net;
  return mixcclCommInitRankConfig(comm, n, id, rank, &cfg);
}

// One rank of a job as its body sees it; comm is initialised over the job's transport (NULL for
// a rank that joins later, see startRanks).
struct Rank {
  int rank;
  int n;
  Shared* sh;
  RankReport* rep;
  mixcclComm_t comm;
};
using RankBody = std::function<int(Rank&)>;

// Starts the job: ranks below initRanks (all by default) initialise over net with timeoutS and
// run body (an init failure exits 10, with the message); the others run body without a comm.
inline void startRanks(Job& job, const char* net, int timeoutS, const RankBody& body,
                       int initRanks = 16) {
  job.start([=](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    Rank me{rank, n, sh, &sh->ranks[rank], nullptr};
    if (rank < initRanks && initRank(&me.comm, id, rank, std::min(n, initRanks), net, timeoutS) !=
                                mixcclSuccess) {
      fault::copyMessage(me.rep, mixcclGetLastError(nullptr));
      return 10;
    }
    return body(me);
  });
}

// An AllReduce (Sum, int32) whose result every rank knows: rank r contributes r+1+i at i.
// 0 if the result is exact, 2 if the call failed, 3 if a value is wrong.
inline int exactAllReduce(mixcclComm_t comm, size_t count) {
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

// AllReduces of 4 MiB until one fails (a fault injected by the parent), announcing phase after
// each so the parent knows the rank is inside the loop. Returns the failing call's result.
inline mixcclResult_t allReduceUntilFailure(mixcclComm_t comm, RankReport* rep, int phase,
                                            size_t floats = 1 << 20) {
  std::vector<float> big(floats, 1.0f);
  mixcclResult_t r = mixcclSuccess;
  for (int i = 0; i < 100000 && r == mixcclSuccess; ++i) {
    r = mixcclAllReduce(big.data(), big.data(), big.size(), mixcclFloat, mixcclSum, comm, nullptr);
    big.assign(big.size(), 1.0f);  // no overflow to inf however long it runs
    rep->phase.store(phase);
  }
  return r;
}

// A rank's place in comm as one number the parent can compare: rank * 100 + size.
inline int placeOf(mixcclComm_t comm) {
  int rank = -1, n = -1;
  mixcclCommUserRank(comm, &rank);
  mixcclCommCount(comm, &n);
  return rank * 100 + n;
}

inline std::string inspect(mixcclComm_t comm, const char* key) {
  char v[256] = {0};
  return mixcclCommInspect(comm, key, v, sizeof(v)) == mixcclSuccess ? v : "?";
}

// " (host": how messages name a rank's host, after "rank N".
inline std::string hostPart() { return " (" + fault::hostName(); }

}  // namespace shrinktest
