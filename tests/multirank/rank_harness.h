/* Runs a test function as N ranks, each a forked process that joins one mixccl communicator
 * over loopback. Uses only the public header. The parent creates the unique id (so the
 * rendezvous root runs in the parent), forks the ranks, and fails the test if any rank fails,
 * crashes, or the whole run exceeds its time limit (then every rank is killed). */
#ifndef MIXCCL_TEST_RANK_HARNESS_H_
#define MIXCCL_TEST_RANK_HARNESS_H_

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mixccl.h"

typedef int (*RankMain)(mixcclComm_t comm, int rank, int nranks, void* arg);

#define HARNESS_MAX_RANKS 64

static inline double harnessNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Optional per-rank device adaptors, "host,gloo,gloo,host" (item r for rank r): ranks of
 * one forked job then form several domains. NULL: the default adaptor for every rank. */
static const char* gHarnessAdaptors;
/* Optional config.netName for every rank (NULL: unset). */
static const char* gHarnessNet;
/* Optional: called in rank r's process before it joins (e.g. to give ranks different
 * environments, such as HWLOC_XMLFILE). NULL: nothing. */
static void (*gHarnessRankSetup)(int rank);
/* Optional: the rank a test kills on purpose (a fault test); its death by SIGKILL is then not a
 * failure of the run, any other end of it is. -1: none. */
static int gHarnessKilledRank = -1;

/* Item r of a comma-separated list into buf ("" when the list is shorter). */
static inline void harnessListItem(const char* list, int r, char* buf, size_t len) {
  buf[0] = 0;
  for (int i = 0; list && *list; ++i) {
    const char* end = strchr(list, ',');
    size_t n = end ? (size_t)(end - list) : strlen(list);
    if (i == r) {
      snprintf(buf, len, "%.*s", (int)n, list);
      return;
    }
    if (!end) break;
    list = end + 1;
  }
}

/* Joins the communicator as rank r, with rank r's adaptor from gHarnessAdaptors if set. */
static inline mixcclResult_t harnessInitRank(mixcclComm_t* comm, int nranks, mixcclUniqueId id,
                                             int r) {
  if (!gHarnessAdaptors && !gHarnessNet) return mixcclCommInitRank(comm, nranks, id, r);
  char adaptor[64];
  harnessListItem(gHarnessAdaptors, r, adaptor, sizeof(adaptor));
  mixcclConfig_t config = MIXCCL_CONFIG_INITIALIZER;
  config.adaptor = adaptor[0] ? adaptor : NULL;
  config.netName = gHarnessNet;
  return mixcclCommInitRankConfig(comm, nranks, id, r, &config);
}

/* Returns 0 when every rank returned 0. */
static inline int runRanks(int nranks, RankMain fn, void* arg, int timeoutSeconds) {
  mixcclUniqueId id;
  if (nranks < 1 || nranks > HARNESS_MAX_RANKS) return 2;
  if (mixcclGetUniqueId(&id) != mixcclSuccess) {
    fprintf(stderr, "mixcclGetUniqueId failed: %s\n", mixcclGetLastError(NULL));
    return 2;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pids[HARNESS_MAX_RANKS];
  for (int r = 0; r < nranks; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
      mixcclComm_t comm = NULL;
      if (gHarnessRankSetup) gHarnessRankSetup(r);
      mixcclResult_t res = harnessInitRank(&comm, nranks, id, r);
      if (res != mixcclSuccess) {
        fprintf(stderr, "rank %d: mixcclCommInitRank failed: %s: %s\n", r,
                mixcclGetErrorString(res), mixcclGetLastError(NULL));
        _exit(3);
      }
      int rc = fn(comm, r, nranks, arg);
      if (mixcclCommDestroy(comm) != mixcclSuccess) rc = rc ? rc : 4;
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
  }
  int failed = 0, remaining = nranks;
  double deadline = harnessNow() + timeoutSeconds;
  while (remaining > 0) {
    int status;
    pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      --remaining;
      int r = 0;
      while (r < nranks && pids[r] != p) ++r;
      if (r == gHarnessKilledRank && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
        printf("rank %d killed by signal 9, as the test meant\n", r);
      } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "rank %d %s %d\n", r, WIFEXITED(status) ? "exited with" : "killed by signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        failed = 1;
      }
      continue;
    }
    if (harnessNow() > deadline) {
      fprintf(stderr, "test exceeded %d s: killing all ranks\n", timeoutSeconds);
      for (int r = 0; r < nranks; ++r) kill(pids[r], SIGKILL);
      while (waitpid(-1, &status, 0) > 0) {
      }
      return 1;
    }
    usleep(2000);
  }
  return failed;
}

#endif
