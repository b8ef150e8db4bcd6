/* What one rank of perf/scale_bench measures about itself, shared by the mixccl and the Open MPI
 * programs so that both count alike (docs/scale.md). */
#ifndef MIXCCL_SCALE_BENCH_STATS_H
#define MIXCCL_SCALE_BENCH_STATS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double scaleNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Open descriptors of this process, and how many of them are sockets. */
static void scaleCountFds(int* fds, int* sockets) {
  *fds = 0;
  *sockets = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent* e;
  char path[300], target[256];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n < 0) continue; /* the directory's own descriptor, closed meanwhile */
    target[n] = 0;
    ++*fds;
    if (strncmp(target, "socket:", 7) == 0) ++*sockets;
  }
  closedir(d);
  --*fds; /* opendir's own */
}

/* Resident memory (VmRSS) in KiB. */
static long scaleRssKiB(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

/* Shared memory this process maps (KiB): mappings of /dev/shm files (mixccl's rings and slots,
 * Open MPI's vader segments), unlinked or not. */
static long scaleShmMappedKiB(void) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[512];
  long kib = 0;
  while (fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    if (strstr(line, "/dev/shm/") == NULL) continue;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) kib += (long)((hi - lo) >> 10);
  }
  fclose(f);
  return kib;
}

static int scaleCompareDouble(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double scaleMedian(double* v, int n) {
  qsort(v, n, sizeof(double), scaleCompareDouble);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One rank's numbers. */
struct ScaleStats {
  int rank;
  double initS;        /* communicator creation (mixcclCommInitRank / MPI_Init) */
  int fdsInit, socketsInit;
  int fds, sockets;    /* after the collectives */
  long rssKiB, shmKiB;
  int peers;           /* connected peers after the collectives (-1: unknown) */
  double latencyUs;    /* 8-byte AllReduce, median of the iterations */
  double busGBs;       /* 1 MiB AllReduce bus bandwidth */
};

#endif
