#define _GNU_SOURCE /* closefrom */
/* perf/scale_bench: what a communicator of n ranks costs on one host (docs/scale.md). Forks n
 * ranks, each times mixcclCommInitRank, counts its descriptors, resident and shared memory and
 * connected peers, times 8-byte AllReduces (median) and 1 MiB AllReduces (bus bandwidth); the
 * parent prints one line of medians (and the slowest init) over the ranks, the host's shared
 * memory (every /dev/shm file the ranks map, once, read while they wait), and the CPU time of
 * the rendezvous root (root_cpu_s: the parent's threads but its main one, which forks and waits).
 *   scale_bench <nranks> [iterations [rank-nofile]]   (MIXCCL_NET, MIXCCL_CONNECT as usual)
 * rank-nofile: each rank's RLIMIT_NOFILE (ulimit -n), set after the fork.
 * SCALE_BENCH_ROOTS=k (default 1): k rendezvous roots (all in the parent), the ranks init with
 * mixcclCommInitRankScalable. */
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <time.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mixccl.h"
#include "scale_bench_stats.h"

#define CHECK(call)                                                                     \
  do {                                                                                  \
    mixcclResult_t r_ = (call);                                                         \
    if (r_ != mixcclSuccess) {                                                          \
      fprintf(stderr, "rank %d: %s failed: %s\n", rank, #call, mixcclGetLastError(NULL)); \
      _exit(1);                                                                         \
    }                                                                                   \
  } while (0)

static void runRank(int rank, int n, int iters, int nroots, mixcclUniqueId* ids, int out) {
  struct ScaleStats s;
  memset(&s, 0, sizeof(s));
  s.rank = rank;
  mixcclComm_t comm;
  double t0 = scaleNow();
  if (nroots > 1)
    CHECK(mixcclCommInitRankScalable(&comm, n, rank, nroots, ids, NULL));
  else
    CHECK(mixcclCommInitRank(&comm, n, ids[0], rank));
  s.initS = scaleNow() - t0;
  scaleCountFds(&s.fdsInit, &s.socketsInit);

  float small[2] = {1, 2}, smallOut[2];
  double* lat = (double*)malloc(sizeof(double) * iters);
  for (int i = 0; i < 5; ++i) CHECK(mixcclAllReduce(small, smallOut, 2, mixcclFloat, mixcclSum, comm, NULL));
  for (int i = 0; i < iters; ++i) {
    double a = scaleNow();
    CHECK(mixcclAllReduce(small, smallOut, 2, mixcclFloat, mixcclSum, comm, NULL));
    lat[i] = scaleNow() - a;
  }
  s.latencyUs = scaleMedian(lat, iters) * 1e6;
  if (smallOut[0] != (float)n) {
    fprintf(stderr, "rank %d: AllReduce gave %g, expected %d\n", rank, smallOut[0], n);
    _exit(1);
  }
  const size_t count = (1 << 20) / sizeof(float);
  float* big = (float*)calloc(count, sizeof(float));
  CHECK(mixcclAllReduce(big, big, count, mixcclFloat, mixcclSum, comm, NULL));
  const int bigIters = 5;
  double* bw = (double*)malloc(sizeof(double) * bigIters);
  for (int i = 0; i < bigIters; ++i) {
    double a = scaleNow();
    CHECK(mixcclAllReduce(big, big, count, mixcclFloat, mixcclSum, comm, NULL));
    bw[i] = scaleNow() - a;
  }
  s.busGBs = 2.0 * (n - 1) / n * (double)(count * sizeof(float)) / scaleMedian(bw, bigIters) / 1e9;

  scaleCountFds(&s.fds, &s.sockets);
  s.rssKiB = scaleRssKiB();
  s.shmKiB = scaleShmMappedKiB();
  char v[32] = "";
  s.peers = mixcclCommInspect(comm, "connected_peers", v, sizeof(v)) == mixcclSuccess ? atoi(v) : -1;
  /* Every rank has measured before any leaves. */
  CHECK(mixcclAllReduce(small, smallOut, 2, mixcclFloat, mixcclSum, comm, NULL));
  /* The parent reads every rank's mappings once all have reported, then sends SIGUSR1 (blocked
   * since the fork, so it cannot come too early); the communicator and its shared memory live
   * until then, within a bound. A signal, not a pipe: no descriptor more to count. */
  sigset_t go;
  sigemptyset(&go);
  sigaddset(&go, SIGUSR1);
  if (write(out, &s, sizeof(s)) != (ssize_t)sizeof(s)) _exit(1);
  struct timespec bound = {120, 0};
  sigtimedwait(&go, NULL, &bound);
  CHECK(mixcclCommDestroy(comm));
  _exit(0);
}

static double cpuSeconds(const struct rusage* u) {
  return u->ru_utime.tv_sec + u->ru_stime.tv_sec + (u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1e6;
}

int main(int argc, char** argv) {
  int rank = -1;
  if (argc < 2) {
    fprintf(stderr, "usage: scale_bench <nranks> [iterations [rank-nofile]]\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  const int iters = argc > 2 ? atoi(argv[2]) : 50;
  const int rankNofile = argc > 3 ? atoi(argv[3]) : 0;
  const char* rootsEnv = getenv("SCALE_BENCH_ROOTS");
  const int nroots = rootsEnv ? atoi(rootsEnv) : 1;
  if (nroots < 1 || nroots > n) {
    fprintf(stderr, "scale_bench: SCALE_BENCH_ROOTS=%s: expected 1 to %d\n", rootsEnv, n);
    return 2;
  }
  mixcclUniqueId* ids = (mixcclUniqueId*)calloc(nroots, sizeof(mixcclUniqueId));
  for (int k = 0; k < nroots; ++k) CHECK(mixcclGetUniqueId(&ids[k]));
  int fds[2];
  if (pipe(fds) != 0) return 1;
  pid_t* pids = (pid_t*)calloc(n, sizeof(pid_t));
  for (int r = 0; r < n; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      sigset_t go;
      sigemptyset(&go);
      sigaddset(&go, SIGUSR1);
      sigprocmask(SIG_BLOCK, &go, NULL);
      /* Only the report pipe stays (as fd 3): the parent's other descriptors (the rendezvous
       * root's connections with the ranks forked before) are not this rank's to count. */
      if (dup2(fds[1], 3) != 3) _exit(3);
      closefrom(4);
      fds[1] = 3;
      if (rankNofile > 0) {
        /* The ranks' own limit; the launching process (the rendezvous root here) keeps its. */
        struct rlimit lim = {(rlim_t)rankNofile, (rlim_t)rankNofile};
        if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(3);
      }
      runRank(r, n, iters, nroots, ids, fds[1]);
    }
  }
  close(fds[1]);
  long shmHostKiB = -1;
  struct ScaleStats* all = (struct ScaleStats*)calloc(n, sizeof(struct ScaleStats));
  int got = 0, failed = 0, reaped = 0;
  /* Reports come through the pipe; a rank that fails ends the run at once (the others would
   * only wait for it until their timeout). */
  while (got < n && !failed) {
    struct pollfd p = {fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      if (read(fds[0], &all[got], sizeof(struct ScaleStats)) != (ssize_t)sizeof(struct ScaleStats)) failed = 1;
      else ++got;
    }
    if (got == n) {
      /* Every rank waits for SIGUSR1 with its communicator alive: count, then let them go. */
      shmHostKiB = scaleShmHostKiB(pids, n);
      for (int r = 0; r < n; ++r)
        if (pids[r] > 0) kill(pids[r], SIGUSR1);
    }
    int status = 0;
    pid_t done;
    while ((done = waitpid(-1, &status, WNOHANG)) > 0) {
      ++reaped;
      for (int r = 0; r < n; ++r)
        if (pids[r] == done) pids[r] = 0;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    }
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    if (!pids[r]) continue;
    if (failed) kill(pids[r], SIGKILL);
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  if (failed) {
    fprintf(stderr, "scale_bench: %d of %d ranks reported; a rank failed\n", got, n);
    return 1;
  }
  /* The root's thread has ended; its time stays in the process's. */
  struct rusage self, mainThread;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_THREAD, &mainThread);
  const double rootCpu = cpuSeconds(&self) - cpuSeconds(&mainThread);
  char extra[64];
  snprintf(extra, sizeof(extra), " root_cpu_s %.3f roots %d", rootCpu, nroots);
  scalePrintSummary(all, n, shmHostKiB, extra);
  return 0;
}
