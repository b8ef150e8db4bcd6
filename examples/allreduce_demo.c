/* The main job: N ranks on this host (forked processes, the unique id passed through fork)
 * AllReduce a buffer over mixccl and print what they got.
 * usage: allreduce_demo [NRANKS] [COUNT] */
#include <mixccl.h>
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

int main(int argc, char** argv) {
  int nranks = argc > 1 ? atoi(argv[1]) : 4;
  size_t count = argc > 2 ? strtoull(argv[2], NULL, 0) : (1u << 20);
  mixcclUniqueId id;
  if (mixcclGetUniqueId(&id) != mixcclSuccess) {
    fprintf(stderr, "mixcclGetUniqueId failed: %s\n", mixcclGetLastError(NULL));
    return 1;
  }
  for (int r = 0; r < nranks; ++r) {
    if (fork() == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      _exit(runRank(id, r, nranks, count));
    }
  }
  int status, failed = 0;
  while (wait(&status) > 0)
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  printf("%s\n", failed ? "FAILED" : "all ranks agree");
  return failed;
}
