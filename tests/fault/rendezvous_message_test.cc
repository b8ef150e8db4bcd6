// Rendezvous failures name their cause on every rank involved, whatever the order in which the
// ranks arrive: two ranks that disagree on nranks both get the message naming both values (also
// the rank in the root's own process, whose exit would end the root), and a rank holding
// another secret is told so while the root's eventual error says that a connection failed
// authentication instead of only that the rank never arrived. Messages are asserted exactly.
//
// The nranks mismatch runs every order MIXCCL_TEST_RENDEZVOUS_RUNS times (default 5; the race
// it guards against lost the reason in about half the runs, so 20 makes a miss unlikely to go
// unseen: docs/reliability.md).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "bootstrap/root.h"
#include "bootstrap/unique_id.h"
#include "fault_harness.h"

namespace {

using fault::now;
using namespace mixccl;

const int kEnvTimeoutS = [] {
  setenv("MIXCCL_TIMEOUT_S", "3", 1);
  return 3;
}();

int runsPerOrder() { return fault::envCount("MIXCCL_TEST_RENDEZVOUS_RUNS", 5); }

// What both ranks of one run share with each other and with the test.
struct PairShared {
  mixcclUniqueId id;
  std::atomic<int> idReady;     // rank 0 made the id (its process hosts the root)
  std::atomic<int> firstIn;     // the first rank's hello is in the root's table
  int code[2];
  double seconds[2];
  char message[2][768];
};

// Forks two ranks running body(rank, shared), reaps both within limitS (killing them after
// it), returns their exit codes (128 + signal when killed).
void runPair(PairShared* sh, double limitS, const std::function<int(int, PairShared*)>& body,
             int exitCodes[2]) {
  fflush(stdout);
  fflush(stderr);
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int rc = body(r, sh);
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
  }
  double end = now() + limitS;
  for (int r = 0; r < 2; ++r) {
    int st = 0;
    while (waitpid(pids[r], &st, WNOHANG) == 0) {
      if (now() > end) {
        kill(pids[0], SIGKILL);
        kill(pids[1], SIGKILL);
        waitpid(pids[r], &st, 0);
        break;
      }
      usleep(1000);
    }
    exitCodes[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
}

std::string rootAddressOf(const mixcclUniqueId& uid) {
  UniqueIdData id;
  SocketAddress a;
  if (decodeUniqueId(uid, &id) != mixcclSuccess || fromWire(id.root, &a) != mixcclSuccess)
    return "?";
  return a.toString();
}

std::string quoted(const std::string& s) {
  return std::regex_replace(s, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
}

// One run: rank 0 hosts the root, ranks say nranks[0] and nranks[1], `first` is in the root's
// table before the other calls init. Returns "" or what went wrong.
std::string mismatchRun(const int nranks[2], int first) {
  void* p = mmap(nullptr, sizeof(PairShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) return "mmap failed";
  PairShared* sh = static_cast<PairShared*>(p);
  memset(static_cast<void*>(sh), 0, sizeof(*sh));
  int exits[2];
  runPair(sh, 20, [&](int rank, PairShared* s) {
    if (rank == 0) {
      if (mixcclGetUniqueId(&s->id) != mixcclSuccess) return 2;
      s->idReady.store(1);
    } else {
      while (!s->idReady.load()) usleep(200);
    }
    std::thread watcher;
    if (rank == 0)  // only this process sees the root's counts
      watcher = std::thread([s] {
        double end = now() + 10;
        while (rootConnectionCounts().admitted < 1 && now() < end) usleep(200);
        s->firstIn.store(1);
      });
    if (rank != first)
      while (!s->firstIn.load()) usleep(200);
    mixcclComm_t comm = nullptr;
    double t0 = now();
    mixcclResult_t r = mixcclCommInitRank(&comm, nranks[rank], s->id, rank);
    s->seconds[rank] = now() - t0;
    s->code[rank] = r;
    snprintf(s->message[rank], sizeof(s->message[rank]), "%s", mixcclGetLastError(nullptr));
    if (watcher.joinable()) watcher.join();
    if (comm) mixcclCommDestroy(comm);
    return 0;  // the rank returns as soon as its init is over: the root's process may end now
  }, exits);
  std::string failure;
  const std::string second = std::to_string(1 - first);
  const std::string expectedWhy =
      "rendezvous root " + quoted(rootAddressOf(sh->id)) + ": rank " + second + " says nranks=" +
      std::to_string(nranks[1 - first]) + ", others said " + std::to_string(nranks[first]) +
      R"( \(from [^ ]+\))";
  for (int r = 0; r < 2; ++r) {
    const std::string expected =
        "rank " + std::to_string(r) + " of " + std::to_string(nranks[r]) + ": " + expectedWhy;
    std::string who = "rank " + std::to_string(r) + " (says " + std::to_string(nranks[r]) +
                      ", rank " + std::to_string(first) + " first): ";
    if (exits[r] != 0) failure += who + "exit " + std::to_string(exits[r]) + "; ";
    if (sh->code[r] != mixcclInvalidUsage)
      failure += who + "code " + mixcclGetErrorString((mixcclResult_t)sh->code[r]) + "; ";
    if (!std::regex_match(sh->message[r], std::regex(expected)))
      failure += who + "message \"" + sh->message[r] + "\"; ";
    if (sh->seconds[r] > 2.0)
      failure += who + "took " + std::to_string(sh->seconds[r]) + " s; ";
  }
  munmap(p, sizeof(PairShared));
  return failure;
}

TEST(RendezvousMessages, NranksMismatchIsNamedOnEveryRankWhateverTheOrder) {
  const int runs = runsPerOrder();
  const int cases[2][2] = {{3, 2}, {2, 3}};
  int failed = 0, total = 0;
  for (const auto& nranks : cases)
    for (int first = 0; first < 2; ++first)
      for (int i = 0; i < runs; ++i) {
        std::string f = mismatchRun(nranks, first);
        ++total;
        if (!f.empty()) {
          ++failed;
          ADD_FAILURE() << "run " << i << ": " << f;
        }
      }
  fprintf(stderr, "nranks mismatch: %d of %d runs lost or garbled a rank's reason\n", failed,
          total);
  EXPECT_TRUE(fault::Job::noChildrenLeft());
}

// Rank 1 holds another secret: it is told the secrets differ, and rank 0 (timing out at the
// root's deadline) is told that the root refused a connection that failed authentication.
TEST(RendezvousMessages, AWrongSecretIsNamedOnBothSides) {
  fault::Job job(2, 30);
  ASSERT_TRUE(job.ok());
  const std::string root = rootAddressOf(job.id());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, fault::Shared* sh) {
    mixcclUniqueId mine = id;
    if (rank == 1) {
      UniqueIdData data;
      if (decodeUniqueId(id, &data) != mixcclSuccess) return 2;
      data.secret.bytes[7] ^= 0x20;
      encodeUniqueId(data, &mine);
    }
    mixcclComm_t comm = nullptr;
    double t0 = now();
    sh->ranks[rank].code = mixcclCommInitRank(&comm, nranks, mine, rank);
    sh->ranks[rank].laterSeconds = now() - t0;
    fault::copyMessage(&sh->ranks[rank], mixcclGetLastError(nullptr));
    if (comm) mixcclCommDestroy(comm);
    return 0;
  });
  ASSERT_TRUE(job.waitExit());
  const std::string same =
      "every rank of a job must use the same unique id (or the same MIXCCL_COMM_ID and "
      "MIXCCL_COMM_SECRET)";
  const fault::RankReport& wrong = job.report(1);
  EXPECT_EQ(job.exitCode(1), 0);
  EXPECT_EQ(wrong.code, mixcclRemoteError);
  EXPECT_EQ(std::string(wrong.message),
            "authentication with rendezvous root " + root +
                " failed (wrong secret): its proof does not match this rank's secret, so the "
                "two hold different secrets; " + same);
  EXPECT_LT(wrong.laterSeconds, 1.0) << "the wrong secret must be reported at once";
  const fault::RankReport& right = job.report(0);
  EXPECT_EQ(job.exitCode(0), 0);
  EXPECT_EQ(right.code, mixcclTimeout);
  EXPECT_EQ(std::string(right.message),
            "rank 0 of 2: rendezvous root " + root +
                ": refused 1 connection that failed authentication (wrong secret or not a "
                "mixccl peer); rank 1 of 2 never arrived within 3 s (MIXCCL_TIMEOUT_S; rank 0 "
                "did): a rank that never arrives did not start, failed before "
                "mixcclCommInitRank or is blocked before it");
  EXPECT_TRUE(fault::Job::noChildrenLeft());
}

}  // namespace
