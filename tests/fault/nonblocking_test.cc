// Non-blocking communicators (config.blocking = 0): init returns mixcclInProgress at once and
// completes in the background; mixcclCommGetAsyncError reports mixcclInProgress, then the
// outcome; a communicator used before it is ready is refused (mixcclInvalidArgument, as NCCL
// does) without disturbing its init; abort and destroy stop an init in progress at once.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "fault_harness.h"

namespace {

using fault::Job;
using fault::now;
using fault::RankReport;
using fault::Shared;

const int kEnvTimeoutS = [] {
  setenv("MIXCCL_TIMEOUT_S", "3", 1);
  return 3;
}();

mixcclResult_t initNonBlocking(mixcclComm_t* comm, const mixcclUniqueId& id, int rank, int n,
                               int timeoutS) {
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.timeout = timeoutS;
  return mixcclCommInitRankConfig(comm, n, id, rank, &cfg);
}

// Polls the async state until it is no longer mixcclInProgress (or seconds pass).
mixcclResult_t pollUntilDone(mixcclComm_t comm, double seconds) {
  double end = now() + seconds;
  mixcclResult_t state = mixcclInProgress;
  while (now() < end) {
    if (mixcclCommGetAsyncError(comm, &state) != mixcclSuccess) return mixcclInternalError;
    if (state != mixcclInProgress) return state;
    usleep(1000);
  }
  return state;
}


TEST(NonBlocking, InitReturnsInProgressThenCompletes) {
  const int n = 3, late = 0;
  Job job(n, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    if (rank == late) fault::sleepSeconds(0.5);  // the others are surely still initialising
    mixcclComm_t comm = nullptr;
    double t0 = now();
    mixcclResult_t r = initNonBlocking(&comm, id, rank, nranks, 20);
    double took = now() - t0;
    RANK_CHECK(r == mixcclInProgress);
    RANK_CHECK(comm != nullptr);
    RANK_CHECK(took < 0.2);  // returns at once
    if (rank != late) {
      mixcclResult_t state;
      RANK_CHECK(mixcclCommGetAsyncError(comm, &state) == mixcclSuccess);
      RANK_CHECK(state == mixcclInProgress);
      // Used before it is ready: refused with a message, the init goes on undisturbed.
      float v = 1;
      RANK_CHECK(mixcclAllReduce(&v, &v, 1, mixcclFloat, mixcclSum, comm, nullptr) ==
                 mixcclInvalidArgument);
      RANK_CHECK(std::string(mixcclGetLastError(comm)).find("still initialising") !=
                 std::string::npos);
      int flag = -1;
      size_t bytes = 1;
      RANK_CHECK(mixcclIprobe((rank + 1) % nranks, &flag, &bytes, comm) == mixcclInvalidArgument);
      RANK_CHECK(std::string(mixcclGetLastError(comm)).find("mixcclIprobe: the communicator is "
                                                            "still initialising") != std::string::npos);
      int count = 0;
      RANK_CHECK(mixcclCommCount(comm, &count) == mixcclSuccess && count == nranks);
    }
    RANK_CHECK(pollUntilDone(comm, 10) == mixcclSuccess);
    rep->failedAt = now() - t0;
    // Collectives on host memory complete before they return, also in non-blocking mode.
    std::vector<int> buf(1000, rank + 1);
    RANK_CHECK(mixcclAllReduce(buf.data(), buf.data(), buf.size(), mixcclInt, mixcclSum, comm,
                               nullptr) == mixcclSuccess);
    for (int x : buf) RANK_CHECK(x == nranks * (nranks + 1) / 2);
    mixcclResult_t state;
    RANK_CHECK(mixcclCommGetAsyncError(comm, &state) == mixcclSuccess && state == mixcclSuccess);
    // A non-blocking split: mixcclInProgress, then ready.
    mixcclComm_t sub = nullptr;
    mixcclResult_t sr = mixcclCommSplit(comm, rank % 2, rank, &sub, nullptr);
    RANK_CHECK(sr == mixcclInProgress || sr == mixcclSuccess);
    RANK_CHECK(sub != nullptr);
    RANK_CHECK(pollUntilDone(sub, 10) == mixcclSuccess);
    int one = 1;
    RANK_CHECK(mixcclAllReduce(&one, &one, 1, mixcclInt, mixcclSum, sub, nullptr) ==
               mixcclSuccess);
    RANK_CHECK(one == (rank % 2 == 0 ? (nranks + 1) / 2 : nranks / 2));
    RANK_CHECK(mixcclCommDestroy(sub) == mixcclSuccess);
    RANK_CHECK(mixcclCommDestroy(comm) == mixcclSuccess);
    RANK_CHECK(fault::countThreads() == 1);
    return 0;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
    fprintf(stderr, "rank %d: ready %.3f s after mixcclCommInitRankConfig\n", r,
            job.report(r).failedAt);
  }
}

// Runs body in a child that ends with _exit. A rank never arrives in these tests, so the
// rendezvous root the Job started in this process is still waiting (or handshaking with a rank
// that reports its failure) when the test ends; a normal exit would run OpenSSL's atexit
// cleanup under that thread, and LeakSanitizer then reports what the handshake allocated.
void inChild(const std::function<void()>& body) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    body();
    fflush(stdout);
    fflush(stderr);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the test's child process reported the failures above";
}

void initFailureIsReportedAsynchronously();
void abortAndDestroyStopAnInitInProgress();

// A peer never arrives: the error comes through mixcclCommGetAsyncError within the bound.
TEST(NonBlocking, InitFailureIsReportedAsynchronously) { inChild(initFailureIsReportedAsynchronously); }

void initFailureIsReportedAsynchronously() {
  const int n = 2, absent = 1, timeoutS = 2;
  Job job(n, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    if (rank == absent) return 0;
    mixcclComm_t comm = nullptr;
    double t0 = now();
    RANK_CHECK(initNonBlocking(&comm, id, rank, nranks, timeoutS) == mixcclInProgress);
    mixcclResult_t state = pollUntilDone(comm, timeoutS + 5);
    double took = now() - t0;
    fprintf(stderr, "rank %d: async init ended with %s after %.3f s: %s\n", rank,
            mixcclGetErrorString(state), took, mixcclGetLastError(comm));
    RANK_CHECK(state == mixcclTimeout);
    RANK_CHECK(took < timeoutS + 1.5);
    float v = 1;  // later calls report the init's error
    RANK_CHECK(mixcclAllReduce(&v, &v, 1, mixcclFloat, mixcclSum, comm, nullptr) == mixcclTimeout);
    RANK_CHECK(mixcclCommDestroy(comm) == mixcclSuccess);
    RANK_CHECK(fault::countThreads() == 1);
    return 0;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < n; ++r) EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
}

// Abort and destroy while the init is still in progress (a peer is missing and the timeout
// is long): both return at once and leave no thread.
TEST(NonBlocking, AbortAndDestroyStopAnInitInProgress) { inChild(abortAndDestroyStopAnInitInProgress); }

void abortAndDestroyStopAnInitInProgress() {
  const int n = 3;
  Job job(n, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    if (rank == 2) return 0;  // never joins
    mixcclComm_t comm = nullptr;
    RANK_CHECK(initNonBlocking(&comm, id, rank, nranks, 60) == mixcclInProgress);
    fault::sleepSeconds(0.3);  // well inside the rendezvous
    mixcclResult_t state;
    RANK_CHECK(mixcclCommGetAsyncError(comm, &state) == mixcclSuccess);
    RANK_CHECK(state == mixcclInProgress);
    double t0 = now();
    RANK_CHECK((rank == 0 ? mixcclCommAbort(comm) : mixcclCommDestroy(comm)) == mixcclSuccess);
    double took = now() - t0;
    fprintf(stderr, "rank %d: %s of an initialising communicator took %.3f s\n", rank,
            rank == 0 ? "abort" : "destroy", took);
    RANK_CHECK(took < 0.5);
    RANK_CHECK(fault::countThreads() == 1);
    return 0;
  });
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < n; ++r) EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
  EXPECT_TRUE(Job::noChildrenLeft());
}

}  // namespace
