/* How long a pair takes to connect on first use (MIXCCL_CONNECT=lazy), per transport: one rank
 * of a job started by mixcclrun (every rank runs it alike).
 *
 *   MIXCCL_CONNECT=lazy MIXCCL_NET=ofi mixcclrun -n 2 build/perf/first_use_bench [ROUNDS]
 *
 * Each round makes a communicator, times its first 8-byte AllReduce (which connects the pairs
 * it uses) and its second (connected), and destroys it. Rank 0 prints the medians over the
 * rounds: first, second, and their difference, the cost of connecting on first use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mixccl.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int byValue(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, n, sizeof(double), byValue);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int check(mixcclResult_t r, int rank, const char* what) {
  if (r == mixcclSuccess) return 0;
  fprintf(stderr, "first_use_bench: rank %d: %s failed: %s (%s)\n", rank, what,
          mixcclGetErrorString(r), mixcclGetLastError(NULL));
  return 1;
}

int main(int argc, char** argv) {
  const char* r = getenv("MIXCCL_RANK");
  const char* n = getenv("MIXCCL_NRANKS");
  if (!r || !n) {
    fprintf(stderr, "first_use_bench: run it under mixcclrun\n");
    return 2;
  }
  int rank = atoi(r), nranks = atoi(n), rounds = argc > 1 ? atoi(argv[1]) : 20;
  if (rounds < 1 || rounds > 1000) return 2;
  double* first = calloc(rounds, sizeof(double));
  double* second = calloc(rounds, sizeof(double));
  double* init = calloc(rounds, sizeof(double));
  char mode[16] = "";
  for (int i = 0; i < rounds; i++) {
    mixcclUniqueId id;
    mixcclComm_t comm;
    double value = 1;
    double t0 = now();
    if (check(mixcclGetUniqueId(&id), rank, "GetUniqueId") ||
        check(mixcclCommInitRank(&comm, nranks, id, rank), rank, "CommInitRank"))
      return 1;
    double t1 = now();
    if (check(mixcclAllReduce(&value, &value, 1, mixcclFloat64, mixcclSum, comm, NULL), rank,
              "first AllReduce"))
      return 1;
    double t2 = now();
    if (check(mixcclAllReduce(&value, &value, 1, mixcclFloat64, mixcclSum, comm, NULL), rank,
              "second AllReduce"))
      return 1;
    double t3 = now();
    mixcclCommInspect(comm, "connect", mode, sizeof(mode));
    if (check(mixcclCommDestroy(comm), rank, "CommDestroy")) return 1;
    init[i] = t1 - t0;
    first[i] = t2 - t1;
    second[i] = t3 - t2;
  }
  if (rank == 0) {
    double diff[1000];
    for (int i = 0; i < rounds; i++) diff[i] = first[i] - second[i];
    const char* net = getenv("MIXCCL_NET");
    printf("first_use_bench: %d ranks, MIXCCL_NET=%s, connect %s, %d rounds (medians): init "
           "%.2f ms, first AllReduce %.2f ms, second %.3f ms, connecting %.2f ms\n",
           nranks, net ? net : "auto", mode, rounds, 1e3 * median(init, rounds),
           1e3 * median(first, rounds), 1e3 * median(second, rounds), 1e3 * median(diff, rounds));
  }
  free(first);
  free(second);
  free(init);
  return 0;
}
