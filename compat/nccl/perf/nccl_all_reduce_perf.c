/* nccl_all_reduce_perf: perf/all_reduce_perf's measurement written against the NCCL API only
 * (the real nccl.h), so the same program runs on mixccl's NCCL shim and on NVIDIA's NCCL and the
 * tables compare the library and nothing else (docs/nccl-compat.md, "Performance"). Float Sum,
 * out of place then in place; the same table and footer perf/compare and perf/ab read.
 *   -M host (default): host buffers and a NULL stream (mixccl's host path; no GPU).
 *   -M device: device buffers from the CUDA runtime (cuda_runtime_dl.h: MIXCCL_CUDA_RUNTIME_LIBRARY
 *     or libcudart) and a non-blocking stream, as nccl-tests: data filled and checked on the host
 *     and copied; every call, the barrier and the time reduction included, on device memory; the
 *     clock stops once the stream has finished.
 *
 * usage: mixcclrun -np N nccl_all_reduce_perf [-b MINBYTES] [-e MAXBYTES] [-f FACTOR]
 *        [-n ITERS] [-w WARMUP] [-c 0|1] [-M host|device]
 * Ranks come from mixcclrun (MIXCCL_RANK, MIXCCL_NRANKS) or Open MPI's mpirun
 * (OMPI_COMM_WORLD_RANK/SIZE); every rank must then share MIXCCL_COMM_ID (and
 * MIXCCL_COMM_SECRET) so that each rank's ncclGetUniqueId returns the same id. On NVIDIA's NCCL
 * run one rank (-np 1, or MIXCCL_RANK=0 MIXCCL_NRANKS=1 MIXCCL_COMM_ID=127.0.0.1:0 set by hand):
 * its unique id does not travel through the environment. */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_runtime_dl.h"

typedef struct {
  size_t minBytes, maxBytes;
  int factor, iters, warmup, check;
  int device; /* -M device */
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
  o->factor = 2, o->iters = 20, o->warmup = 1, o->check = 1, o->device = 0;
  int c;
  while ((c = getopt(argc, argv, "b:e:f:n:w:c:M:h")) != -1) {
    switch (c) {
      case 'b': if (parseBytes(optarg, &o->minBytes)) return -1; break;
      case 'e': if (parseBytes(optarg, &o->maxBytes)) return -1; break;
      case 'f': o->factor = atoi(optarg); break;
      case 'n': o->iters = atoi(optarg); break;
      case 'w': o->warmup = atoi(optarg); break;
      case 'c': o->check = atoi(optarg); break;
      case 'M':
        if (strcmp(optarg, "device") == 0) o->device = 1;
        else if (strcmp(optarg, "host") == 0) o->device = 0;
        else return -1;
        break;
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

/* Where the buffers live: host memory with a NULL stream, or device memory with a stream. */
typedef struct {
  int device;
  CudaRuntimeDl rt;
  cudaStream_t stream; /* NULL on host memory */
} Memory;

#define CUDACHECK(m, call)                                                                 \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "%s failed: CUDA error %d: %s\n", #call, (int)e_,                     \
              (m)->rt.getErrorString(e_));                                                 \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static void* memAlloc(Memory* m, size_t bytes) {
  void* p = NULL;
  if (bytes == 0) bytes = 1;
  if (m->device) CUDACHECK(m, m->rt.malloc_(&p, bytes));
  else p = calloc(1, bytes);
  if (!p) {
    fprintf(stderr, "cannot allocate %zu bytes\n", bytes);
    exit(1);
  }
  return p;
}
static void memFree(Memory* m, void* p) {
  if (m->device) CUDACHECK(m, m->rt.free_(p));
  else free(p);
}
/* Waits for the work on the stream (nothing to wait for on host memory). */
static void memSync(Memory* m) {
  if (m->device) CUDACHECK(m, m->rt.streamSynchronize(m->stream));
}
/* Host bytes into a buffer of the memory, and back; both complete when they return. */
static void memUpload(Memory* m, void* dst, const void* host, size_t bytes) {
  if (!m->device) {
    if (dst != host) memcpy(dst, host, bytes);
    return;
  }
  CUDACHECK(m, m->rt.memcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, m->stream));
  memSync(m);
}
static void memDownload(Memory* m, void* host, const void* src, size_t bytes) {
  if (!m->device) {
    if (host != src) memcpy(host, src, bytes);
    return;
  }
  CUDACHECK(m, m->rt.memcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, m->stream));
  memSync(m);
}

/* Rank r's input: small integers, so every sum is exact in float. Both loops are periodic in i
 * (period 7) and avoid a division per element: the GPU check fills and checks 1 GiB on the
 * host within its time bound. */
static void fill(float* buf, size_t count, int rank) {
  int v = rank % 7;
  for (size_t i = 0; i < count; ++i) {
    buf[i] = (float)v;
    if (++v == 7) v = 0;
  }
}
static long long wrongElements(const float* buf, size_t count, int nranks) {
  float want[7];
  for (int k = 0; k < 7; ++k) {
    want[k] = 0;
    for (int r = 0; r < nranks; ++r) want[k] += (float)((r + k) % 7);
  }
  long long wrong = 0;
  int k = 0;
  for (size_t i = 0; i < count; ++i) {
    wrong += buf[i] != want[k];
    if (++k == 7) k = 0;
  }
  return wrong;
}

/* One rank's buffers: send and recv in the measured memory, their host copies (the same
 * buffers on host memory) and 32 bytes of scratch for the barrier and the reductions of the
 * time and the error count (in the measured memory too: NCCL takes device memory only). */
typedef struct {
  float *send, *recv, *hostSend, *hostRecv;
  char *scratch, *hostScratch;
} Buffers;

/* An AllReduce of one value of type at hostScratch (8 bytes), through the scratch buffer. */
static void scratchAllReduce(ncclComm_t comm, Memory* m, Buffers* b, ncclDataType_t type,
                             ncclRedOp_t op) {
  memUpload(m, b->scratch, b->hostScratch, 8);
  NCCLCHECK(ncclAllReduce(b->scratch, b->scratch + 16, 1, type, op, comm, m->stream));
  memDownload(m, b->hostScratch + 16, b->scratch + 16, 8);
}

/* One placement at one size: the time (us) of an iteration, the slowest rank's, and the wrong
 * elements of a checked run summed over ranks. Timed as perf/all_reduce_perf times it (a
 * barrier before the clock starts, the stream finished before it stops, the maximum over
 * ranks), so the two tables compare the API and nothing else; the warm-up runs over every size
 * before the sweep (main). */
static void measure(ncclComm_t comm, Memory* m, Buffers* b, int rank, int nranks,
                    const Options* o, size_t count, int inPlace, double* timeUs, long long* wrong) {
  float* out = inPlace ? b->send : b->recv;
  float* hostOut = inPlace ? b->hostSend : b->hostRecv;
  const size_t bytes = count * sizeof(float);
  fill(b->hostSend, count, rank);
  memUpload(m, b->send, b->hostSend, bytes);
  float token = 0;
  memcpy(b->hostScratch, &token, sizeof token);
  scratchAllReduce(comm, m, b, ncclFloat, ncclSum); /* barrier */
  double t0 = now();
  for (int i = 0; i < o->iters; ++i)
    NCCLCHECK(ncclAllReduce(b->send, out, count, ncclFloat, ncclSum, comm, m->stream));
  memSync(m);
  double mine = (now() - t0) / o->iters * 1e6;
  memcpy(b->hostScratch, &mine, sizeof mine);
  scratchAllReduce(comm, m, b, ncclDouble, ncclMax);
  memcpy(timeUs, b->hostScratch + 16, sizeof *timeUs);
  long long bad = 0;
  if (o->check) {
    fill(b->hostSend, count, rank);
    memUpload(m, b->send, b->hostSend, bytes);
    NCCLCHECK(ncclAllReduce(b->send, out, count, ncclFloat, ncclSum, comm, m->stream));
    memDownload(m, hostOut, out, bytes);
    bad = wrongElements(hostOut, count, nranks);
  }
  memcpy(b->hostScratch, &bad, sizeof bad);
  scratchAllReduce(comm, m, b, ncclInt64, ncclSum);
  memcpy(wrong, b->hostScratch + 16, sizeof *wrong);
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
                    "[-c 0|1] [-M host|device] (under mixcclrun or mpirun)\n", argv[0]);
    return 2;
  }
  int rank = envInt("MIXCCL_RANK", "OMPI_COMM_WORLD_RANK");
  int nranks = envInt("MIXCCL_NRANKS", "OMPI_COMM_WORLD_SIZE");
  if (rank < 0 || nranks < 1 || !getenv("MIXCCL_COMM_ID")) {
    fprintf(stderr, "%s: run under mixcclrun (or mpirun with MIXCCL_COMM_ID set on every rank)\n",
            argv[0]);
    return 2;
  }
  Memory mem = {0};
  mem.device = o.device;
  if (mem.device) {
    char why[600];
    if (cudaRuntimeOpen(&mem.rt, why, sizeof why) != 0) {
      fprintf(stderr, "%s: rank %d: -M device: %s\n", argv[0], rank, why);
      return 1;
    }
  }
  ncclUniqueId id;
  ncclComm_t comm;
  NCCLCHECK(ncclGetUniqueId(&id));
  NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int version = 0;
  NCCLCHECK(ncclGetVersion(&version));
  /* The stream after the communicator: NCCL sets up the device in ncclCommInitRank. */
  if (mem.device) CUDACHECK(&mem, mem.rt.streamCreateWithFlags(&mem.stream, cudaStreamNonBlocking));
  const size_t maxBytes = (o.maxBytes / sizeof(float)) * sizeof(float);
  Buffers b;
  b.send = memAlloc(&mem, maxBytes);
  b.recv = memAlloc(&mem, maxBytes);
  b.scratch = memAlloc(&mem, 32);
  b.hostSend = mem.device ? malloc(maxBytes ? maxBytes : 1) : b.send;
  b.hostRecv = mem.device ? malloc(maxBytes ? maxBytes : 1) : b.recv;
  b.hostScratch = mem.device ? malloc(32) : b.scratch;
  if (!b.hostSend || !b.hostRecv || !b.hostScratch) {
    fprintf(stderr, "%s: cannot allocate %zu bytes of host memory\n", argv[0], maxBytes);
    return 1;
  }
  if (rank == 0) {
    printf("# nccl-api all_reduce_perf on libnccl.so.2 reporting NCCL %d, %s\n", version,
           mem.device ? "device memory" : "host memory");
    if (mem.device) printf("# CUDA runtime: %s\n", mem.rt.path);
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
    for (int i = 0; i < o.warmup; ++i)
      NCCLCHECK(ncclAllReduce(b.send, b.recv, bytes / sizeof(float), ncclFloat, ncclSum, comm,
                              mem.stream));
    memSync(&mem);
    if (bytes == 0) break;
  }
  long long totalWrong = 0;
  double busSum = 0;
  int rows = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    size_t count = bytes / sizeof(float);
    double tOut, tIn, busOut, busIn;
    long long wOut, wIn;
    measure(comm, &mem, &b, rank, nranks, &o, count, 0, &tOut, &wOut);
    measure(comm, &mem, &b, rank, nranks, &o, count, 1, &tIn, &wIn);
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
  NCCLCHECK(ncclCommDestroy(comm));
  if (mem.device) {
    free(b.hostSend);
    free(b.hostRecv);
    free(b.hostScratch);
    CUDACHECK(&mem, mem.rt.streamDestroy(mem.stream));
  }
  memFree(&mem, b.send);
  memFree(&mem, b.recv);
  memFree(&mem, b.scratch);
  return totalWrong != 0;
}
