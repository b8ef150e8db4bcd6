// MIXCCL_CHECK_MISMATCH=1: ranks that call different collectives (or the same with a different
// count, datatype, op or root) all get mixcclInvalidUsage with a message saying what differed,
// instead of wrong data or a hang; the communicator stays in step, so the next matching calls
// work. Also the pure comparison on hostile tables.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/mismatch_check.h"
#include "fault_harness.h"

namespace {

using fault::Job;
using fault::now;
using fault::RankReport;
using fault::Shared;

const bool kCheckOn = [] {
  setenv("MIXCCL_CHECK_MISMATCH", "1", 1);
  setenv("MIXCCL_TIMEOUT_S", "10", 1);
  return true;
}();


bool allReduceWorks(mixcclComm_t comm, int nranks, int count = 12) {
  std::vector<int> buf(count, 1);
  if (mixcclAllReduce(buf.data(), buf.data(), count, mixcclInt, mixcclSum, comm, nullptr) !=
      mixcclSuccess)
    return false;
  for (int v : buf)
    if (v != nranks) return false;
  return true;
}

// One scenario: what the odd rank calls instead of AllReduce(count 12, int, sum), and the
// words the message must contain.
struct Scenario {
  const char* name;
  std::function<mixcclResult_t(mixcclComm_t, std::vector<int>&)> odd;
  std::vector<std::string> mention;
};

mixcclResult_t normalCall(mixcclComm_t comm, std::vector<int>& buf) {
  return mixcclAllReduce(buf.data(), buf.data(), 12, mixcclInt, mixcclSum, comm, nullptr);
}

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> s = {
      {"different collective",
       [](mixcclComm_t c, std::vector<int>& b) {
         return mixcclBroadcast(b.data(), b.data(), 10, mixcclInt, 0, c, nullptr);
       },
       {"rank 2 called mixcclBroadcast (count 10", "while rank 0 called mixcclAllReduce (count 12"}},
      {"different count",
       [](mixcclComm_t c, std::vector<int>& b) {
         return mixcclAllReduce(b.data(), b.data(), 13, mixcclInt, mixcclSum, c, nullptr);
       },
       {"rank 2 called mixcclAllReduce (count 13", "rank 0 called mixcclAllReduce (count 12"}},
      {"different datatype",
       [](mixcclComm_t c, std::vector<int>& b) {
         return mixcclAllReduce(b.data(), b.data(), 12, mixcclFloat, mixcclSum, c, nullptr);
       },
       {"datatype float", "datatype int32"}},
      {"different op",
       [](mixcclComm_t c, std::vector<int>& b) {
         return mixcclAllReduce(b.data(), b.data(), 12, mixcclInt, mixcclMax, c, nullptr);
       },
       {"op max", "op sum"}},
  };
  return s;
}

TEST(Mismatch, EveryRankGetsInvalidUsageAndTheCommStaysInStep) {
  const int n = 3, odd = 2;
  Job job(n, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm;
    RANK_CHECK(mixcclCommInitRank(&comm, nranks, id, rank) == mixcclSuccess);
    RANK_CHECK(allReduceWorks(comm, nranks));
    std::string all;
    for (const Scenario& s : scenarios()) {
      std::vector<int> buf(16, 1);
      double t0 = now();
      mixcclResult_t r = rank == odd ? s.odd(comm, buf) : normalCall(comm, buf);
      double took = now() - t0;
      std::string msg = mixcclGetLastError(comm);
      if (r != mixcclInvalidUsage || took > 2.0) {
        fprintf(stderr, "rank %d, %s: got %s after %.3f s: %s\n", rank, s.name,
                mixcclGetErrorString(r), took, msg.c_str());
        return 2;
      }
      for (const std::string& m : s.mention)
        if (msg.find(m) == std::string::npos) {
          fprintf(stderr, "rank %d, %s: message lacks \"%s\": %s\n", rank, s.name, m.c_str(),
                  msg.c_str());
          return 3;
        }
      // Nothing was written and the communicator still works.
      for (int v : buf) RANK_CHECK(v == 1);
      RANK_CHECK(allReduceWorks(comm, nranks));
      all += msg + "\n";
    }
    // Different roots.
    {
      std::vector<int> buf(8, rank);
      mixcclResult_t r =
          mixcclBroadcast(buf.data(), buf.data(), 8, mixcclInt, rank == 1 ? 1 : 0, comm, nullptr);
      RANK_CHECK(r == mixcclInvalidUsage);
      RANK_CHECK(std::string(mixcclGetLastError(comm)).find("root 1") != std::string::npos);
      RANK_CHECK(allReduceWorks(comm, nranks));
    }
    // Inside a group: the mismatched collective fails the group on every rank.
    {
      std::vector<int> a(12, 1), b(12, 1);
      RANK_CHECK(mixcclGroupStart() == mixcclSuccess);
      mixcclAllReduce(a.data(), a.data(), 12, mixcclInt, mixcclSum, comm, nullptr);
      mixcclAllReduce(b.data(), b.data(), rank == odd ? 11 : 12, mixcclInt, mixcclSum, comm,
                      nullptr);
      RANK_CHECK(mixcclGroupEnd() == mixcclInvalidUsage);
      RANK_CHECK(a[0] == nranks);  // the first, matching, collective ran
      RANK_CHECK(allReduceWorks(comm, nranks));
    }
    // Matching calls of every collective pass the check.
    {
      std::vector<int> in(4 * nranks, 1), out(4 * nranks, 0);
      RANK_CHECK(mixcclAllGather(in.data(), out.data(), 4, mixcclInt, comm, nullptr) ==
                 mixcclSuccess);
      RANK_CHECK(mixcclReduceScatter(in.data(), out.data(), 4, mixcclInt, mixcclSum, comm,
                                     nullptr) == mixcclSuccess);
      RANK_CHECK(out[0] == nranks);
      RANK_CHECK(mixcclReduce(in.data(), out.data(), 4, mixcclInt, mixcclSum, 1, comm,
                              nullptr) == mixcclSuccess);
      RANK_CHECK(mixcclAlltoAll(in.data(), out.data(), 4, mixcclInt, comm, nullptr) ==
                 mixcclSuccess);
      RANK_CHECK(mixcclGather(in.data(), out.data(), 4, mixcclInt, 2, comm, nullptr) ==
                 mixcclSuccess);
      RANK_CHECK(mixcclScatter(in.data(), out.data(), 4, mixcclInt, 0, comm, nullptr) ==
                 mixcclSuccess);
    }
    if (rank == 0) fprintf(stderr, "%s", all.c_str());
    (void)rep;
    RANK_CHECK(mixcclCommDestroy(comm) == mixcclSuccess);
    return 0;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < n; ++r) EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
}

// The comparison itself, on tables as they could come off the wire.
TEST(Mismatch, CompareRejectsHostileEntriesWithoutTrustingThem) {
  using mixccl::CollDescWire;
  std::vector<CollDescWire> t(3);
  for (auto& d : t) d = CollDescWire{0x4b434843, 0, 7, 0, -1, 5, 12};
  std::string msg;
  uint32_t next = 0;
  EXPECT_EQ(mixccl::compareCollDescs("mixcclAllReduce", t, &msg, &next), mixcclSuccess);
  EXPECT_EQ(next, 6u);
  t[1].kind = 1 << 30;  // no such collective: named as unknown, never used as an index
  t[1].datatype = -5;
  t[1].op = 99;
  EXPECT_EQ(mixccl::compareCollDescs("mixcclAllReduce", t, &msg, &next), mixcclInvalidUsage);
  EXPECT_NE(msg.find("rank 1 called an unknown collective"), std::string::npos) << msg;
  t[1] = t[0];
  t[2].seq = 9;  // same call, but rank 2 is further along: everyone continues after 9
  EXPECT_EQ(mixccl::compareCollDescs("mixcclAllReduce", t, &msg, &next), mixcclInvalidUsage);
  EXPECT_NE(msg.find("rank 2 is at collective #9 while rank 0 is at #5"), std::string::npos)
      << msg;
  EXPECT_EQ(next, 10u);
  t[2].magic = 0;
  EXPECT_EQ(mixccl::compareCollDescs("mixcclAllReduce", t, &msg, &next), mixcclInvalidUsage);
  EXPECT_NE(msg.find("MIXCCL_CHECK_MISMATCH"), std::string::npos) << msg;
}

}  // namespace
