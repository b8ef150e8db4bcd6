/* The main job: N ranks on this host (forked processes, the unique id passed through fork)
 * AllReduce a buffer over mixccl and print what they got.
 * usage: allreduce_demo [NRANKS [COUNT]]   (default 4 ranks, 1048576 floats each) */
#include <errno.h>
#include <mixccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static int runRank(mixcclUniqueId id, int rank, int nranks, size_t count) {
  mixcclComm_t comm;
  mixcclResult_t res = mixcclCommInitRank(&comm, nranks, id, rank);
  if (res != mixcclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, mixcclGetLastError(NULL));
    return 1;
  }
  float* buf = malloc(count * sizeof(float));
  if (buf == NULL) {
    fprintf(stderr, "rank %d: cannot allocate %zu floats (%zu bytes)\n", rank, count,
            count * sizeof(float));
    mixcclCommDestroy(comm);
    return 1;
  }
  for (size_t i = 0; i < count; ++i) buf[i] = (float)(rank + 1);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  res = mixcclAllReduce(buf, buf, count, mixcclFloat, mixcclSum, comm, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
  float want = nranks * (nranks + 1) / 2.0f;
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += buf[i] != want;
  if (res != mixcclSuccess)
    printf("rank %d: AllReduce failed: %s\n", rank, mixcclGetLastError(comm));
  else
    printf("rank %d of %d: AllReduce of %zu floats -> buf[0] = %.1f (expected %.1f), %zu wrong, "
           "%.2f ms\n", rank, nranks, count, buf[0], want, wrong, ms);
  fflush(stdout);
  free(buf);
  mixcclCommDestroy(comm);
  return res != mixcclSuccess || wrong != 0;
}

#define MAX_RANKS 256

static int usage(const char* why) {
  fprintf(stderr, "allreduce_demo: %s\n"
                  "usage: allreduce_demo [NRANKS [COUNT]]\n"
                  "  NRANKS  ranks to fork on this host, 1 to %d (default 4)\n"
                  "  COUNT   floats each rank reduces, at least 1 (default 1048576)\n",
          why, MAX_RANKS);
  return 2;
}

/* A whole decimal number in [lo, hi]: "abc", "2x", "-1" and "" are refused, not read as 0. */
static int parseCount(const char* s, unsigned long long lo, unsigned long long hi,
                      unsigned long long* out) {
  if (*s < '0' || *s > '9') return 0;
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

int main(int argc, char** argv) {
  unsigned long long nranks = 4, count = 1u << 20;
  char why[256];
  if (argc > 3) return usage("too many arguments");
  if (argc > 1 && !parseCount(argv[1], 1, MAX_RANKS, &nranks)) {
    snprintf(why, sizeof(why), "NRANKS must be a number from 1 to %d, got '%s'", MAX_RANKS,
             argv[1]);
    return usage(why);
  }
  if (argc > 2 && !parseCount(argv[2], 1, SIZE_MAX / sizeof(float), &count)) {
    snprintf(why, sizeof(why), "COUNT must be a number of floats, at least 1, got '%s'", argv[2]);
    return usage(why);
  }
  mixcclUniqueId id;
  if (mixcclGetUniqueId(&id) != mixcclSuccess) {
    fprintf(stderr, "mixcclGetUniqueId failed: %s\n", mixcclGetLastError(NULL));
    return 1;
  }
  pid_t pids[MAX_RANKS];
  for (int r = 0; r < (int)nranks; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      _exit(runRank(id, r, (int)nranks, (size_t)count));
    }
  }
  /* Name every rank that did not succeed, so a failure never reads as a bare "FAILED". */
  int failed = 0, status;
  for (int r = 0; r < (int)nranks; ++r) {
    if (pids[r] < 0) {
      fprintf(stderr, "allreduce_demo: cannot start rank %d\n", r);
      ++failed;
    } else if (waitpid(pids[r], &status, 0) == pids[r] &&
               !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      if (WIFSIGNALED(status))
        fprintf(stderr, "allreduce_demo: rank %d was killed by signal %d\n", r, WTERMSIG(status));
      else
        fprintf(stderr, "allreduce_demo: rank %d failed (exit status %d)\n", r,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      ++failed;
    }
  }
  if (failed)
    printf("FAILED: %d of %llu ranks did not get the expected result (see above)\n", failed,
           nranks);
  else
    printf("all ranks agree\n");
  return failed ? 1 : 0;
}
