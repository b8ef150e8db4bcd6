// Leaving cleanly (docs/reliability.md, "Leaving cleanly"): a program whose last call is a small
// collective or a group of Sends from one root, followed at once by mixcclCommDestroy on every
// rank, must succeed on every rank, whatever the transport. The root's goodbye may leave before
// its peers have matched the data it sent them; a peer must still receive that data and see the
// root's leaving as clean.
//
// DestroyAtOnce: one transport x one pattern, run MIXCCL_TEST_TEARDOWN_RUNS times (default
// kDefaultRuns, the CI subset), each run a fresh job of forked ranks doing "init, the call,
// destroy" and nothing else. Every rank asserts through mixcclCommInspect that each peer got the
// transport under test, then checks the call's result, its data and the destroy's result. The
// test prints how many runs failed and asserts none did, quoting a failed rank's message.
// GoodbyeFirst: the same race on 2 ranks, made certain by waiting (see the test).
#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "fault_harness.h"

namespace {

using fault::Job;
using fault::RankReport;
using fault::Shared;

// Before main, so before mixccl reads its environment (once per process): the ofi runs use
// libfabric's tcp provider, as docs/transports.md's fault tests do.
const bool kOfiProviderSet = [] { return setenv("MIXCCL_OFI_PROVIDER", "tcp;ofi_rxm", 1) == 0; }();

constexpr int kDefaultRuns = 3;
constexpr int kCount = 8;  // doubles per message
constexpr int kRoot = 1;

int runsWanted() { return fault::envCount("MIXCCL_TEST_TEARDOWN_RUNS", kDefaultRuns); }

struct TransportCase {
  const char* name;     // test name suffix
  const char* net;      // config.netName
  const char* ucxTls;   // UCX_TLS for the ranks, or null
  const char* expected; // what mixcclCommInspect must say of every peer
};

enum class Pattern { Scatter, Broadcast, GroupedSends, Sendrecv };

const char* patternName(Pattern p) {
  switch (p) {
    case Pattern::Scatter: return "Scatter";
    case Pattern::Broadcast: return "Broadcast";
    case Pattern::GroupedSends: return "GroupedSends";
    case Pattern::Sendrecv: return "Sendrecv";
  }
  return "?";
}

// Readable parameters in test listings (and so in CTest's names).
void PrintTo(const TransportCase& t, std::ostream* os) { *os << t.name; }
void PrintTo(Pattern p, std::ostream* os) { *os << patternName(p); }

int ranksOf(Pattern p) { return p == Pattern::Sendrecv ? 4 : 8; }

// A value no other (sender, receiver, element) has, exact in a double.
double value(int from, int to, int i) { return 1000.0 * from + 10.0 * to + i + 0.5; }

// Exit codes of a rank (its report's message says more).
enum RankExit { kOk = 0, kInitFailed = 10, kWrongTransport, kCallFailed, kWrongData, kDestroyFailed };

// Runs the pattern's one call on comm; fills got with what this rank received (expected: what
// it should have).
mixcclResult_t runPattern(Pattern p, mixcclComm_t comm, int rank, int n, std::vector<double>* got,
                          std::vector<double>* expected) {
  got->assign(kCount, -1.0);
  expected->clear();
  switch (p) {
    case Pattern::Scatter: {
      std::vector<double> send;
      if (rank == kRoot)
        for (int to = 0; to < n; ++to)
          for (int i = 0; i < kCount; ++i) send.push_back(value(kRoot, to, i));
      for (int i = 0; i < kCount; ++i) expected->push_back(value(kRoot, rank, i));
      return mixcclScatter(rank == kRoot ? send.data() : nullptr, got->data(), kCount,
                           mixcclFloat64, kRoot, comm, nullptr);
    }
    case Pattern::Broadcast: {
      for (int i = 0; i < kCount; ++i) expected->push_back(value(kRoot, 0, i));
      if (rank == kRoot) *got = *expected;
      return mixcclBroadcast(got->data(), got->data(), kCount, mixcclFloat64, kRoot, comm,
                             nullptr);
    }
    case Pattern::GroupedSends: {
      std::vector<std::vector<double>> blocks(n);
      if (rank == kRoot) {
        *got = std::vector<double>(kCount, 0.0);  // the root receives nothing
        *expected = *got;
        mixcclGroupStart();
        for (int to = 0; to < n; ++to) {
          if (to == kRoot) continue;
          for (int i = 0; i < kCount; ++i) blocks[to].push_back(value(kRoot, to, i));
          mixcclSend(blocks[to].data(), kCount, mixcclFloat64, to, comm, nullptr);
        }
        return mixcclGroupEnd();
      }
      for (int i = 0; i < kCount; ++i) expected->push_back(value(kRoot, rank, i));
      return mixcclRecv(got->data(), kCount, mixcclFloat64, kRoot, comm, nullptr);
    }
    case Pattern::Sendrecv: {
      // A ring: every rank sends to the next and receives from the previous, in one group.
      const int to = (rank + 1) % n, from = (rank + n - 1) % n;
      std::vector<double> send;
      for (int i = 0; i < kCount; ++i) send.push_back(value(rank, to, i));
      for (int i = 0; i < kCount; ++i) expected->push_back(value(from, rank, i));
      mixcclGroupStart();
      mixcclSend(send.data(), kCount, mixcclFloat64, to, comm, nullptr);
      mixcclRecv(got->data(), kCount, mixcclFloat64, from, comm, nullptr);
      return mixcclGroupEnd();
    }
  }
  return mixcclInternalError;
}

// Init over the transport under test and assert through mixcclCommInspect that every peer got
// it. kOk, or the exit code with rep->message saying why.
int initOver(const TransportCase& t, const mixcclUniqueId& id, int rank, int n,
             mixcclComm_t* comm, RankReport* rep) {
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  // A rank left waiting fails the run before the job's limit; not sooner, so that a slow init
  // under load (libfabric's takes 2 s for 8 ranks on 2 quiet cores) is no failure.
  cfg.timeout = 20;
  cfg.netName = t.net;
  if (mixcclCommInitRankConfig(comm, n, id, rank, &cfg) != mixcclSuccess) {
    fault::copyMessage(rep, mixcclGetLastError(nullptr));
    return kInitFailed;
  }
  // Under MIXCCL_CONNECT=lazy a pair that init's own exchanges did not use is not connected yet
  // (no transport): only the pairs that exist are checked, which are then the ones under test.
  std::string connect;
  if (!fault::connectModeAsAsked(*comm, &connect)) {
    snprintf(rep->message, sizeof(rep->message), "connections '%s', not as MIXCCL_CONNECT asked",
             connect.c_str());
    mixcclCommDestroy(*comm);
    return kWrongTransport;
  }
  const bool lazy = connect == "lazy";
  for (int peer = 0; peer < n; ++peer) {
    if (peer == rank) continue;
    char v[64] = "";
    std::string key = "transport." + std::to_string(peer);
    if (mixcclCommInspect(*comm, key.c_str(), v, sizeof(v)) != mixcclSuccess ||
        (std::string(v) != t.expected && !(lazy && v[0] == '\0'))) {
      snprintf(rep->message, sizeof(rep->message), "transport to rank %d is '%s', not '%s'", peer,
               v, t.expected);
      mixcclCommDestroy(*comm);
      return kWrongTransport;
    }
  }
  return kOk;
}

// One rank of one run: init, assert the transport, the call, destroy at once; then the checks.
// rep->code: the call's result, rep->laterCode: the destroy's, rep->message: what went wrong.
int rankBody(const TransportCase& t, Pattern p, const mixcclUniqueId& id, int rank, int n,
             Shared* sh) {
  RankReport* rep = &sh->ranks[rank];
  mixcclComm_t comm;
  int rc = initOver(t, id, rank, n, &comm, rep);
  if (rc != kOk) return rc;
  std::vector<double> got, expected;
  mixcclResult_t call = runPattern(p, comm, rank, n, &got, &expected);
  std::string callError = call == mixcclSuccess ? "" : mixcclGetLastError(comm);
  mixcclResult_t destroyed = mixcclCommDestroy(comm);
  rep->code = call;
  rep->laterCode = destroyed;
  if (call != mixcclSuccess) {
    fault::copyMessage(rep, callError.c_str());
    return kCallFailed;
  }
  if (destroyed != mixcclSuccess) {
    fault::copyMessage(rep, mixcclGetLastError(nullptr));
    return kDestroyFailed;
  }
  for (int i = 0; i < kCount; ++i)
    if (got[i] != expected[i]) {
      snprintf(rep->message, sizeof(rep->message), "element %d is %g, expected %g", i, got[i],
               expected[i]);
      return kWrongData;
    }
  return kOk;
}

// Sets UCX_TLS for the ranks forked meanwhile (UCX reads it in each rank at init).
struct ScopedUcxTls {
  explicit ScopedUcxTls(const char* tls) : set_(tls != nullptr) {
    if (set_) setenv("UCX_TLS", tls, 1);
  }
  ~ScopedUcxTls() {
    if (set_) unsetenv("UCX_TLS");
  }
  bool set_;
};

// One run; "" when every rank succeeded, else what the first failing rank said.
std::string oneRun(const TransportCase& t, Pattern p) {
  const int n = ranksOf(p);
  Job job(n, 50);
  if (!job.ok()) return "cannot set up the job";
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    return rankBody(t, p, id, rank, nranks, sh);
  });
  if (!job.waitExit()) return "the job did not end within 50 s (killed)";
  for (int r = 0; r < n; ++r) {
    int code = job.exitCode(r);
    if (code == kOk) continue;
    const RankReport& rep = job.report(r);
    return "rank " + std::to_string(r) + " exit " + std::to_string(code) + " (call " +
           mixcclGetErrorString((mixcclResult_t)rep.code) + ", destroy " +
           mixcclGetErrorString((mixcclResult_t)rep.laterCode) + "): " + rep.message;
  }
  return "";
}

const TransportCase kTransports[] = {
    {"socket", "socket", nullptr, "socket"},
    {"shm", "shm", nullptr, "shm"},
#ifdef MIXCCL_TEST_HAVE_UCX
    {"ucx_tcp", "ucx", "tcp", "ucx"},
    {"ucx_sm", "ucx", "sm,self", "ucx"},
#endif
#ifdef MIXCCL_TEST_HAVE_OFI
    {"ofi_tcp", "ofi", nullptr, "ofi"},
#endif
};

const Pattern kPatterns[] = {Pattern::Scatter, Pattern::Broadcast, Pattern::GroupedSends,
                             Pattern::Sendrecv};

class DestroyAtOnce : public ::testing::TestWithParam<std::tuple<TransportCase, Pattern>> {};

TEST_P(DestroyAtOnce, EveryRankOfEveryRunSucceeds) {
  ASSERT_TRUE(kOfiProviderSet);
  const TransportCase& t = std::get<0>(GetParam());
  const Pattern p = std::get<1>(GetParam());
  ScopedUcxTls tls(t.ucxTls);
  const int runs = runsWanted();
  int failed = 0;
  std::string first;
  for (int i = 0; i < runs; ++i) {
    std::string why = oneRun(t, p);
    if (why.empty()) continue;
    ++failed;
    if (first.empty()) first = "run " + std::to_string(i + 1) + ": " + why;
  }
  fprintf(stderr, "[teardown %s %s, %d ranks] %d of %d runs failed%s%s\n", t.name,
          patternName(p), ranksOf(p), failed, runs, first.empty() ? "" : "; first: ",
          first.c_str());
  EXPECT_EQ(failed, 0) << first;
  EXPECT_TRUE(Job::noChildrenLeft()) << "a rank process was left behind";
}

INSTANTIATE_TEST_SUITE_P(
    Teardown, DestroyAtOnce,
    ::testing::Combine(::testing::ValuesIn(kTransports), ::testing::ValuesIn(kPatterns)),
    [](const ::testing::TestParamInfo<DestroyAtOnce::ParamType>& info) {
      return std::string(std::get<0>(info.param).name) + "_" +
             patternName(std::get<1>(info.param));
    });

class GoodbyeFirst : public ::testing::TestWithParam<TransportCase> {};

// The race made certain: rank 1 sends a message and destroys the communicator before rank 0
// has even posted its receive, and rank 0 waits until rank 1's process has ended (its goodbye
// has arrived: the control connection's end wakes rank 0's progress thread, which reads it).
// Only then does rank 0 receive: it must get the message; a second receive, of a message
// rank 1 never sent, fails at once with the exact message of a post to a peer that left.
TEST_P(GoodbyeFirst, DataSentBeforeTheGoodbyeIsReceivedAfterIt) {
  const TransportCase& t = GetParam();
  ScopedUcxTls tls(t.ucxTls);
  Job job(2, 50);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) -> int {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm;
    int rc = initOver(t, id, rank, nranks, &comm, rep);
    if (rc != kOk) return rc;
    std::vector<double> buf(kCount);
    if (rank == 1) {
      for (int i = 0; i < kCount; ++i) buf[i] = value(1, 0, i);
      RANK_CHECK(mixcclSend(buf.data(), kCount, mixcclFloat64, 0, comm, nullptr) == mixcclSuccess);
      RANK_CHECK(mixcclCommDestroy(comm) == mixcclSuccess);
      return kOk;
    }
    while (!sh->ranks[0].released.load()) usleep(1000);
    fault::sleepSeconds(0.2);  // the progress thread hears of the end at once; to be sure
    rep->code = mixcclRecv(buf.data(), kCount, mixcclFloat64, 1, comm, nullptr);
    if (rep->code != mixcclSuccess) {
      fault::copyMessage(rep, mixcclGetLastError(comm));
      mixcclCommDestroy(comm);
      return kCallFailed;
    }
    for (int i = 0; i < kCount; ++i)
      if (buf[i] != value(1, 0, i)) {
        snprintf(rep->message, sizeof(rep->message), "element %d is %g, expected %g", i, buf[i],
                 value(1, 0, i));
        mixcclCommDestroy(comm);
        return kWrongData;
      }
    double t0 = fault::now();
    rep->laterCode = mixcclRecv(buf.data(), kCount, mixcclFloat64, 1, comm, nullptr);
    rep->laterSeconds = fault::now() - t0;
    fault::copyMessage(rep, mixcclGetLastError(comm));
    return mixcclCommDestroy(comm) == mixcclSuccess ? kOk : kDestroyFailed;
  });
  ASSERT_TRUE(job.waitExit({1}));
  EXPECT_EQ(job.exitCode(1), kOk) << job.report(1).message;
  job.report(0).released.store(1);
  ASSERT_TRUE(job.waitExit({0}));
  const RankReport& rep = job.report(0);
  ASSERT_EQ(job.exitCode(0), kOk) << "exit " << job.exitCode(0) << ": " << rep.message;
  EXPECT_EQ(rep.code, mixcclSuccess);
  EXPECT_EQ(rep.laterCode, mixcclRemoteError);
  EXPECT_LT(rep.laterSeconds, 1.0);
  EXPECT_EQ(std::string(rep.message), "rank 1 (" + fault::hostName() + " pid " +
                                          std::to_string(job.pid(1)) +
                                          ") has left the communicator (destroyed it) but an "
                                          "operation with it was posted");
  EXPECT_TRUE(Job::noChildrenLeft()) << "a rank process was left behind";
}

INSTANTIATE_TEST_SUITE_P(Teardown, GoodbyeFirst, ::testing::ValuesIn(kTransports),
                         [](const ::testing::TestParamInfo<TransportCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
