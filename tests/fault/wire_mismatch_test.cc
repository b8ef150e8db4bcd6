// Mismatched calls with the full pre-check off (the default): every message of a collective
// carries the call's stamp (base/call_stamp.h), so ranks that called different collectives, or
// the same one with another count, datatype, op or root, all get mixcclInvalidUsage naming
// both calls instead of returning wrong data. Run once per transport (MIXCCL_TEST_NET =
// socket, shm, ucx or ofi; CMake registers each), and every rank first checks through
// mixcclCommInspect that its pairs run over that transport.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "fault_harness.h"

namespace {

using fault::Job;
using fault::now;
using fault::Shared;

// Before main, so before mixccl reads its environment (once per process).
const std::string kNet = [] {
  const char* t = getenv("MIXCCL_TEST_NET");
  std::string net = t ? t : "socket";
  unsetenv("MIXCCL_CHECK_MISMATCH");
  setenv("MIXCCL_TIMEOUT_S", "10", 1);
  // The rings, not the shared-memory slots (small calls of one host take them, and they check
  // their own stamps: SlotCollectives.AMismatchIsRefusedOnEveryRankAndTheSlotsStayUsable).
  setenv("MIXCCL_SHM_SLOT_BYTES", "0", 1);
  if (net == "socket") setenv("MIXCCL_SHM_DISABLE", "1", 1);
  if (net == "ucx") {
    setenv("MIXCCL_NET", "ucx", 1);
    setenv("UCX_TLS", "tcp", 1);
  }
  if (net == "ofi") {
    setenv("MIXCCL_NET", "ofi", 1);
    setenv("MIXCCL_OFI_PROVIDER", "tcp;ofi_rxm", 1);
  }
  return net;
}();

int expectTransport(mixcclComm_t comm, int rank, int nranks) {
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    char key[32], value[32] = "";
    snprintf(key, sizeof(key), "transport.%d", p);
    RANK_CHECK(mixcclCommInspect(comm, key, value, sizeof(value)) == mixcclSuccess);
    if (kNet != value) {
      fprintf(stderr, "rank %d: transport to %d is '%s', expected %s\n", rank, p, value,
              kNet.c_str());
      return 9;
    }
  }
  return 0;
}

// Above the shared-memory slots (small calls take them, and they check their own stamps).
constexpr size_t kCount = 262144;

struct Call {
  std::function<mixcclResult_t(mixcclComm_t, std::vector<float>&)> run;
  std::string described;  // how messages name it
};

Call allReduce(size_t count, mixcclDataType_t type, mixcclRedOp_t op, const char* text) {
  return {[=](mixcclComm_t c, std::vector<float>& b) {
            return mixcclAllReduce(b.data(), b.data(), count, type, op, c, nullptr);
          },
          text};
}

Call broadcast(size_t count, int root, const char* text) {
  return {[=](mixcclComm_t c, std::vector<float>& b) {
            return mixcclBroadcast(b.data(), b.data(), count, mixcclFloat, root, c, nullptr);
          },
          text};
}

const Call kAllReduce = allReduce(kCount, mixcclFloat, mixcclSum,
                                  "mixcclAllReduce (count 262144, datatype float, op sum)");

// One scenario: ranks below odd call normal, the ranks from odd on call other.
struct Scenario {
  const char* name;
  int nranks;
  int odd;
  Call normal, other;
  // Ranks below this whose every message of the call matched (a Broadcast's root, which only
  // sends, and the next in the chain) may finish it before a peer finds the mismatch; they
  // learn of it as NCCL programs learn of asynchronous errors, from mixcclCommGetAsyncError.
  int mayFinishBelow = 0;
};

// Runs the scenario and asserts, on every rank, mixcclInvalidUsage within the timeout with a
// message that names both calls, an unchanged buffer where the call failed before writing,
// and a destroy that returns.
void runScenario(const Scenario& s) {
  Job job(s.nranks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared*) {
    mixcclComm_t comm;
    RANK_CHECK(mixcclCommInitRank(&comm, nranks, id, rank) == mixcclSuccess);
    if (int bad = expectTransport(comm, rank, nranks)) return bad;
    std::vector<float> buf(2 * kCount, 1.0f);
    const Call& mine = rank >= s.odd ? s.other : s.normal;
    double t0 = now();
    mixcclResult_t r = mine.run(comm, buf);
    if (r == mixcclSuccess && rank < s.mayFinishBelow) {
      for (double end = now() + 5.0; r == mixcclSuccess && now() < end; fault::sleepSeconds(0.01))
        RANK_CHECK(mixcclCommGetAsyncError(comm, &r) == mixcclSuccess);
    }
    double took = now() - t0;
    std::string msg = mixcclGetLastError(comm);
    if (r != mixcclInvalidUsage || took > 5.0) {
      fprintf(stderr, "rank %d, %s: got %s after %.3f s: %s\n", rank, s.name,
              mixcclGetErrorString(r), took, msg.c_str());
      return 2;
    }
    for (const std::string& m :
         {s.normal.described, s.other.described, std::string("mismatched calls")})
      if (msg.find(m) == std::string::npos) {
        fprintf(stderr, "rank %d, %s: message lacks \"%s\": %s\n", rank, s.name, m.c_str(),
                msg.c_str());
        return 3;
      }
    // A rank that found the mismatch itself says which call is its own.
    const std::string own =
        "while this rank (rank " + std::to_string(rank) + ") called " + mine.described;
    const bool relayed = msg.find("(reported by") != std::string::npos;
    if (!relayed && msg.find(own) == std::string::npos) {
      fprintf(stderr, "rank %d, %s: message lacks \"%s\": %s\n", rank, s.name, own.c_str(),
              msg.c_str());
      return 4;
    }
    mixcclResult_t async = mixcclSuccess;
    RANK_CHECK(mixcclCommGetAsyncError(comm, &async) == mixcclSuccess);
    RANK_CHECK(async == mixcclInvalidUsage);
    fprintf(stderr, "%s, rank %d, after %.3f s: %s\n", s.name, rank, took, msg.c_str());
    RANK_CHECK(mixcclCommDestroy(comm) == mixcclSuccess);
    return 0;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < s.nranks; ++r) EXPECT_EQ(job.exitCode(r), 0) << s.name << ", rank " << r;
}

TEST(WireMismatch, DifferentCountsFailEveryRankNamingBothCalls) {
  runScenario({"count", 2, 1, kAllReduce,
               allReduce(2 * kCount, mixcclFloat, mixcclSum,
                         "mixcclAllReduce (count 524288, datatype float, op sum)")});
}

// At most 1 KiB against 4-8 KiB per message: over UCX the first message of one call goes as a
// contiguous copy and of the other as an IOV (ucx_stamped.h), so each side meets the other form.
TEST(WireMismatch, CountsWhoseMessagesTakeDifferentFormsFailEveryRank) {
  runScenario({"count across forms", 2, 1,
               allReduce(256, mixcclFloat, mixcclSum,
                         "mixcclAllReduce (count 256, datatype float, op sum)"),
               allReduce(2048, mixcclFloat, mixcclSum,
                         "mixcclAllReduce (count 2048, datatype float, op sum)")});
}

TEST(WireMismatch, DifferentDatatypesFailEveryRankNamingBothCalls) {
  runScenario({"datatype", 2, 1, kAllReduce,
               allReduce(kCount, mixcclInt32, mixcclSum,
                         "mixcclAllReduce (count 262144, datatype int32, op sum)")});
}

TEST(WireMismatch, DifferentOpsFailEveryRankNamingBothCalls) {
  runScenario({"op", 3, 2, kAllReduce,
               allReduce(kCount, mixcclFloat, mixcclMax,
                         "mixcclAllReduce (count 262144, datatype float, op max)")});
}

TEST(WireMismatch, DifferentCollectivesFailEveryRankNamingBothCalls) {
  runScenario({"collective", 2, 1, kAllReduce,
               broadcast(kCount, 0, "mixcclBroadcast (count 262144, datatype float, root 0)")});
}

TEST(WireMismatch, DifferentRootsFailEveryRankNamingBothCalls) {
  runScenario({"root", 3, 2,
               broadcast(kCount, 0, "mixcclBroadcast (count 262144, datatype float, root 0)"),
               broadcast(kCount, 1, "mixcclBroadcast (count 262144, datatype float, root 1)"), 2});
}

}  // namespace
