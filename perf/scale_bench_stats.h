/* What one rank of perf/scale_bench measures about itself, shared by the mixccl and the Open MPI
 * programs so that both count alike (docs/scale.md). */
#ifndef MIXCCL_SCALE_BENCH_STATS_H
#define MIXCCL_SCALE_BENCH_STATS_H

#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
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

/* One /dev/shm file mapped by some process: its device and inode, and its mapped size. */
struct ScaleShmFile {
  unsigned long dev, inode;
  long kib;
};

static int scaleCompareShmFile(const void* a, const void* b) {
  const struct ScaleShmFile *x = (const struct ScaleShmFile*)a, *y = (const struct ScaleShmFile*)b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return x->inode < y->inode ? -1 : x->inode > y->inode;
}

/* The host's shared memory held by the processes pids (KiB): every /dev/shm file any of them
 * maps, counted once (by device and inode, unlinked files included) at its largest mapping.
 * A ring is mapped by its two ranks, a rank's slots by every rank: summing each process's
 * mappings would count those two and n times. -1 if a process's maps cannot be read. */
static long scaleShmHostKiB(const pid_t* pids, int n) {
  size_t len = 0, cap = 1024;
  struct ScaleShmFile* files = (struct ScaleShmFile*)malloc(cap * sizeof(*files));
  for (int i = 0; i < n; ++i) {
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/maps", pids[i]);
    FILE* f = fopen(path, "r");
    if (!f) {
      free(files);
      return -1;
    }
    while (fgets(line, sizeof(line), f)) {
      unsigned long lo, hi, major, minor, inode;
      if (strstr(line, "/dev/shm/") == NULL) continue;
      if (sscanf(line, "%lx-%lx %*s %*x %lx:%lx %lu", &lo, &hi, &major, &minor, &inode) != 5)
        continue;
      if (len == cap) {
        cap *= 2;
        files = (struct ScaleShmFile*)realloc(files, cap * sizeof(*files));
      }
      files[len].dev = major << 20 | minor;
      files[len].inode = inode;
      files[len].kib = (long)((hi - lo) >> 10);
      ++len;
    }
    fclose(f);
  }
  qsort(files, len, sizeof(*files), scaleCompareShmFile);
  long kib = 0;
  for (size_t i = 0; i < len; ++i) {
    long largest = files[i].kib;
    while (i + 1 < len && scaleCompareShmFile(&files[i], &files[i + 1]) == 0) {
      ++i;
      if (files[i].kib > largest) largest = files[i].kib;
    }
    kib += largest;
  }
  free(files);
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

enum ScaleFieldKind { kScaleDouble, kScaleInt, kScaleLong };

/* The median over the ranks of one field of ScaleStats. */
static double scaleMedianOfField(const struct ScaleStats* all, int n, size_t offset,
                                 enum ScaleFieldKind kind) {
  double* v = (double*)malloc(sizeof(double) * n);
  for (int i = 0; i < n; ++i) {
    const char* p = (const char*)&all[i] + offset;
    v[i] = kind == kScaleInt ? *(const int*)p
           : kind == kScaleLong ? (double)*(const long*)p : *(const double*)p;
  }
  double m = scaleMedian(v, n);
  free(v);
  return m;
}

/* The one summary line both programs print (perf/scale_bench.sh parses it). */
/* shmHostKiB: scaleShmHostKiB of the job's ranks (-1: not measured). extra: appended to the
 * line ("" for none). */
static void scalePrintSummary(const struct ScaleStats* all, int n, long shmHostKiB,
                              const char* extra) {
  double initMax = 0, shmTotal = 0;
  int fdsMax = 0;
  for (int r = 0; r < n; ++r) {
    if (all[r].initS > initMax) initMax = all[r].initS;
    if (all[r].fds > fdsMax) fdsMax = all[r].fds;
    shmTotal += all[r].shmKiB;
  }
#define SCALE_MEDIAN(field, kind) scaleMedianOfField(all, n, offsetof(struct ScaleStats, field), kind)
  /* shm_mapped_host_mib: the sum of every rank's mappings / 2 (a ring is mapped by its two
   * ranks; slots, mapped by every rank, are over-counted); shm_host_mib: each file once. */
  printf("ranks %d init_median_s %.3f init_max_s %.3f fds_init %.0f fds %.0f fds_max %d sockets %.0f "
         "peers %.0f rss_mib %.1f shm_mapped_host_mib %.1f shm_host_mib %.1f lat8_us %.1f "
         "busbw_1mib_gbs %.3f%s\n",
         n, SCALE_MEDIAN(initS, kScaleDouble), initMax, SCALE_MEDIAN(fdsInit, kScaleInt),
         SCALE_MEDIAN(fds, kScaleInt), fdsMax, SCALE_MEDIAN(sockets, kScaleInt),
         SCALE_MEDIAN(peers, kScaleInt), SCALE_MEDIAN(rssKiB, kScaleLong) / 1024.0,
         shmTotal / 2 / 1024.0, shmHostKiB / 1024.0, SCALE_MEDIAN(latencyUs, kScaleDouble),
         SCALE_MEDIAN(busGBs, kScaleDouble), extra);
#undef SCALE_MEDIAN
}

#endif
