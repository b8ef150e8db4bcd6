/* nccl_all_reduce_perf: perf/all_reduce_perf's measurement written against the NCCL API only
 * (the real nccl.h) and linked to mixccl's NCCL shim, so the cost of the shim shows against
 * mixccl's own tool on the same table (docs/nccl-compat.md, "Performance"). Float Sum on host
 * buffers, out of place then in place; the same table and footer perf/compare and perf/ab read.
 *
 * usage: mixcclrun -np N nccl_all_reduce_perf [-b MINBYTES] [-e MAXBYTES] [-f FACTOR]
 *        [-n ITERS] [-w WARMUP] [-c 0|1]
 * Ranks come from mixcclrun (MIXCCL_RANK, MIXCCL_NRANKS) or Open MPI's mpirun
 * (OMPI_COMM_WORLD_RANK/SIZE); every rank must then share MIXCCL_COMM_ID (and
 * MIXCCL_COMM_SECRET) so that each rank's ncclGetUniqueId returns the same id. */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  size_t minBytes, maxBytes;
  int factor, iters, warmup, check;
} Options;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "32M", "8", "1G": bytes with an optional K/M/G suffix. */
static int parseBytes(const char* s, size_t* out) {
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return -1;
  if (*end == 'K' || *end == 'k') v <<= 10, ++end;
  else if (*end == 'M' || *end == 'm') v <<= 20, ++end;
  else if (*end == 'G' || *end == 'g') v <<= 30, ++end;
  if (*end) return -1;
  *out = (size_t)v;
  return 0;
}

static int parseOptions(int argc, char** argv, Options* o) {
  o->minBytes = o->maxBytes = 32 << 20;
  o->factor = 2, o->iters = 20, o->warmup = 1, o->check = 1;
  int c;
  while ((c = getopt(argc, argv, "b:e:f:n:w:c:h")) != -1) {
    switch (c) {
      case 'b': if (parseBytes(optarg, &o->minBytes)) return -1; break;
      case 'e': if (parseBytes(optarg, &o->maxBytes)) return -1; break;
      case 'f': o->factor = atoi(optarg); break;
      case 'n': o->iters = atoi(optarg); break;
      case 'w': o->warmup = atoi(optarg); break;
      case 'c': o->check = atoi(optarg); break;
      default: return -1;
    }
  }
  if (o->factor < 2 || o->iters < 1 || o->warmup < 0 || o->minBytes > o->maxBytes) return -1;
  return 0;
}

static int envInt(const char* a, const char* b) {
  const char* v = getenv(a);
  if (!v) v = getenv(b);
  return v ? atoi(v) : -1;
}

#define NCCLCHECK(call)                                                                    \
  do {                                                                                     \
    ncclResult_t r_ = (call);                                                              \
    if (r_ != ncclSuccess) {                                                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, ncclGetErrorString(r_),                \
              ncclGetLastError(NULL));                                                     \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

/* Rank r's input: small integers, so every sum is exact in float. */
static void fill(float* buf, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) buf[i] = (float)((rank + i) % 7);
}
static long long wrongElements(const float* buf, size_t count, int nranks) {
  long long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += (float)((r + i) % 7);
    wrong += buf[i] != want;
  }
  return wrong;
}

/* One placement at one size: the time (us) of an iteration, the slowest rank's, and the wrong
 * elements of a checked run summed over ranks. Timed as perf/all_reduce_perf times it (a
 * barrier before the clock starts, the maximum over ranks), so the two tables compare the API
 * and nothing else; the warm-up runs over every size before the sweep (main). */
static void measure(ncclComm_t comm, int rank, int nranks, const Options* o, float* send,
                    float* recv, size_t count, int inPlace, double* timeUs, long long* wrong) {
  float* out = inPlace ? send : recv;
  fill(send, count, rank);
  float token = 0, sink;
  NCCLCHECK(ncclAllReduce(&token, &sink, 1, ncclFloat, ncclSum, comm, NULL)); /* barrier */
  double t0 = now();
  for (int i = 0; i < o->iters; ++i)
    NCCLCHECK(ncclAllReduce(send, out, count, ncclFloat, ncclSum, comm, NULL));
  double mine = (now() - t0) / o->iters * 1e6;
  NCCLCHECK(ncclAllReduce(&mine, timeUs, 1, ncclDouble, ncclMax, comm, NULL));
  long long bad = 0;
  if (o->check) {
    fill(send, count, rank);
    NCCLCHECK(ncclAllReduce(send, out, count, ncclFloat, ncclSum, comm, NULL));
    bad = wrongElements(out, count, nranks);
  }
  NCCLCHECK(ncclAllReduce(&bad, wrong, 1, ncclInt64, ncclSum, comm, NULL));
}

/* The widest fixed-point rendering of value that fits width (perf's table cells). */
static void cell(char* buf, size_t len, double value, int width) {
  for (int decimals = 2; decimals >= 0; --decimals)
    if (snprintf(buf, len, "%*.*f", width, decimals, value) <= width) return;
  snprintf(buf, len, width >= 7 ? "%*.1e" : "%*.0e", width, value);
}

static void rowHalf(char* out, size_t len, double timeUs, size_t bytes, int nranks, int check,
                    long long wrong, double* busBw) {
  double algBw = timeUs > 0 ? bytes / timeUs / 1e3 : 0;
  *busBw = algBw * 2.0 * (nranks - 1) / nranks;
  char t[32], a[32], b[32];
  cell(t, sizeof t, timeUs, 7);
  cell(a, sizeof a, algBw, 6);
  cell(b, sizeof b, *busBw, 6);
  if (check) snprintf(out, len, "  %7s  %6s  %6s  %6lld", t, a, b, wrong);
  else snprintf(out, len, "  %7s  %6s  %6s    N/A", t, a, b);
}

int main(int argc, char** argv) {
  Options o;
  if (parseOptions(argc, argv, &o)) {
    fprintf(stderr, "usage: %s [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS] [-w WARMUP] "
                    "[-c 0|1] (under mixcclrun or mpirun)\n", argv[0]);
    return 2;
  }
  int rank = envInt("MIXCCL_RANK", "OMPI_COMM_WORLD_RANK");
  int nranks = envInt("MIXCCL_NRANKS", "OMPI_COMM_WORLD_SIZE");
  if (rank < 0 || nranks < 1 || !getenv("MIXCCL_COMM_ID")) {
    fprintf(stderr, "%s: run under mixcclrun (or mpirun with MIXCCL_COMM_ID set on every rank)\n",
            argv[0]);
    return 2;
  }
  ncclUniqueId id;
  ncclComm_t comm;
  NCCLCHECK(ncclGetUniqueId(&id));
  NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int version = 0;
  NCCLCHECK(ncclGetVersion(&version));
  size_t maxCount = o.maxBytes / sizeof(float);
  float* send = malloc((maxCount ? maxCount : 1) * sizeof(float));
  float* recv = malloc((maxCount ? maxCount : 1) * sizeof(float));
  if (rank == 0) {
    printf("# nccl-api all_reduce_perf on libnccl.so.2 reporting NCCL %d\n", version);
    printf("# nRanks %d minBytes %zu maxBytes %zu step: %d(factor) warmup iters: %d iters: %d "
           "validation: %d\n#\n", nranks, o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, o.check);
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place\n",
           "", "", "", "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  /* Warm-up over every size first, out of place (perf/all_reduce_perf does the same): the
   * buffers' pages and whatever the library allocates per size exist before any clock runs. */
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    for (int i = 0; i < o.warmup; ++i) {
      fill(send, bytes / sizeof(float), rank);
      NCCLCHECK(ncclAllReduce(send, recv, bytes / sizeof(float), ncclFloat, ncclSum, comm, NULL));
    }
    if (bytes == 0) break;
  }
  long long totalWrong = 0;
  double busSum = 0;
  int rows = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    size_t count = bytes / sizeof(float);
    double tOut, tIn, busOut, busIn;
    long long wOut, wIn;
    measure(comm, rank, nranks, &o, send, recv, count, 0, &tOut, &wOut);
    measure(comm, rank, nranks, &o, send, recv, count, 1, &tIn, &wIn);
    char outHalf[160], inHalf[160];
    rowHalf(outHalf, sizeof outHalf, tOut, count * sizeof(float), nranks, o.check, wOut, &busOut);
    rowHalf(inHalf, sizeof inHalf, tIn, count * sizeof(float), nranks, o.check, wIn, &busIn);
    if (rank == 0)
      printf("%12zu  %12zu  %8s  %6s  %6d%s%s\n", count * sizeof(float), count, "float", "sum", -1,
             outHalf, inHalf);
    totalWrong += wOut + wIn;
    busSum += busOut;
    ++rows;
    if (bytes == 0) break;
  }
  if (rank == 0) {
    printf("# %-20s : %d %s\n", "Out of bounds values", totalWrong ? 1 : 0, totalWrong ? "FAILED" : "OK");
    printf("# %-20s : %g \n#\n", "Avg bus bandwidth", rows ? busSum / rows : 0.0);
  }
  free(send);
  free(recv);
  NCCLCHECK(ncclCommDestroy(comm));
  return totalWrong != 0;
}
