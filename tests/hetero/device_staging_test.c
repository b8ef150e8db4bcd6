/* Device memory in a job with several domains, on CPU-only machines: rank(s) on the simulated
 * device adaptor "simdev" (device pointers the host cannot dereference, asynchronous ordered
 * streams) next to host ranks. Checks every collective's result, that calls return while the
 * stream is still held (no host-blocking synchronisation), and that results land in stream
 * order.
 *   device_staging_test NRANKS ADAPTORS (e.g. 4 simdev,host,host,host)
 * MIXCCL_SIMDEV_PLUGIN names the plugin file (the same file mixccl loads, so one runtime). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixccl_adaptor.h"
#include "rank_harness.h"

static const mixcclAdaptor_v2_t* gDev; /* this rank's runtime when it is on simdev */
static long gFailures;

#define EXPECT(cond, ...)                                     \
  do {                                                        \
    if (!(cond)) {                                            \
      fprintf(stderr, __VA_ARGS__);                           \
      fprintf(stderr, "\n");                                  \
      ++gFailures;                                            \
    }                                                         \
  } while (0)

/* A buffer of this rank: device memory on simdev, host memory otherwise. */
static void* bufAlloc(size_t bytes) {
  void* p = NULL;
  if (gDev) {
    if (gDev->memAlloc(&p, bytes ? bytes : 1) != mixcclSuccess) abort();
  } else {
    p = calloc(1, bytes ? bytes : 1);
  }
  return p;
}
static void bufFree(void* p) { if (gDev) gDev->memFree(p); else free(p); }
static void bufWrite(void* dst, const void* host, size_t bytes, void* stream) {
  if (gDev) gDev->memcpyAsync(dst, host, bytes, mixcclCopyHostToDevice, stream);
  else memcpy(dst, host, bytes);
}
/* Reads a buffer after the work on stream (a collective included) has finished. */
static void bufRead(void* host, const void* src, size_t bytes, void* stream) {
  if (gDev) {
    gDev->memcpyAsync(host, src, bytes, mixcclCopyDeviceToHost, stream);
    gDev->streamSynchronize(stream);
  } else {
    memcpy(host, src, bytes);
  }
}

static float fin(int rank, size_t i) { return (float)((rank + i) % 3); }
static int32_t iin(int op, int rank, size_t i) {
  if (op == mixcclProd) return (rank + i) % 4 == 0 ? 2 : 1;
  return (int32_t)((rank * 7 + i) % 11) - 5;
}

/* A ring of Send/Recv in one group, plus a send to self: device memory on simdev ranks (staged
 * through host memory across domains), host memory on the others. */
static void checkSendRecvRing(mixcclComm_t comm, int rank, int n, size_t count, void* stream) {
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  int32_t* h = malloc(count * 4 + 4);
  void* send = bufAlloc(count * 4);
  void* recv = bufAlloc(count * 4);
  void* self = bufAlloc(count * 4);
  for (size_t i = 0; i < count; ++i) h[i] = iin(mixcclSum, rank, i) * 1000 + (int32_t)(i % 997);
  bufWrite(send, h, count * 4, stream);
  mixcclResult_t r = mixcclGroupStart();
  if (r == mixcclSuccess) r = mixcclSend(send, count, mixcclInt32, next, comm, stream);
  if (r == mixcclSuccess) r = mixcclRecv(recv, count, mixcclInt32, prev, comm, stream);
  if (r == mixcclSuccess) r = mixcclSend(send, count, mixcclInt32, rank, comm, stream);
  if (r == mixcclSuccess) r = mixcclRecv(self, count, mixcclInt32, rank, comm, stream);
  mixcclResult_t end = mixcclGroupEnd();
  EXPECT(r == mixcclSuccess && end == mixcclSuccess, "rank %d: Send/Recv ring count %zu: %s", rank,
         count, mixcclGetLastError(comm));
  for (int which = 0; which < 2; ++which) {
    const int from = which ? rank : prev;
    bufRead(h, which ? self : recv, count * 4, stream);
    for (size_t i = 0; i < count; ++i) {
      const int32_t want = iin(mixcclSum, from, i) * 1000 + (int32_t)(i % 997);
      if (h[i] != want) {
        EXPECT(0, "rank %d: Send/Recv %s count %zu: [%zu] = %d, expected %d", rank,
               which ? "self" : "ring", count, i, h[i], want);
        break;
      }
    }
  }
  bufFree(send);
  bufFree(recv);
  bufFree(self);
  free(h);
}

static void checkAllReduce(mixcclComm_t comm, int rank, int n, size_t count, void* stream) {
  float* hf = malloc(count * 4 + 4);
  int32_t* hi = malloc(count * 4 + 4);
  void* send = bufAlloc(count * 4);
  void* recv = bufAlloc(count * 4);
  /* float32 sum and avg */
  for (int op = mixcclSum; op <= mixcclAvg; op += mixcclAvg - mixcclSum) {
    for (size_t i = 0; i < count; ++i) hf[i] = fin(rank, i);
    bufWrite(send, hf, count * 4, stream);
    mixcclResult_t r = mixcclAllReduce(send, recv, count, mixcclFloat32, op, comm, stream);
    EXPECT(r == mixcclSuccess, "rank %d: AllReduce float32 op %d: %s", rank, op, mixcclGetLastError(comm));
    bufRead(hf, recv, count * 4, stream);
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int p = 0; p < n; ++p) sum += fin(p, i);
      float want = op == mixcclAvg ? sum / (float)n : sum;
      if (hf[i] != want) {
        EXPECT(0, "rank %d: AllReduce float32 op %d count %zu: [%zu] = %g, expected %g", rank, op, count, i, hf[i], want);
        break;
      }
    }
  }
  /* int32 prod, max, min, in place */
  for (int op = mixcclProd; op <= mixcclMin; ++op) {
    for (size_t i = 0; i < count; ++i) hi[i] = iin(op, rank, i);
    bufWrite(recv, hi, count * 4, stream);
    mixcclResult_t r = mixcclAllReduce(recv, recv, count, mixcclInt32, op, comm, stream);
    EXPECT(r == mixcclSuccess, "rank %d: AllReduce int32 op %d: %s", rank, op, mixcclGetLastError(comm));
    bufRead(hi, recv, count * 4, stream);
    for (size_t i = 0; i < count; ++i) {
      int32_t want = iin(op, 0, i);
      for (int p = 1; p < n; ++p) {
        int32_t v = iin(op, p, i);
        want = op == mixcclProd ? want * v : op == mixcclMax ? (v > want ? v : want) : (v < want ? v : want);
      }
      if (hi[i] != want) {
        EXPECT(0, "rank %d: AllReduce int32 op %d count %zu: [%zu] = %d, expected %d", rank, op, count, i, hi[i], want);
        break;
      }
    }
  }
  bufFree(send);
  bufFree(recv);
  free(hf);
  free(hi);
}

/* AllGather, Broadcast (every root), ReduceScatter, Reduce (every root), AlltoAll, Gather,
 * Scatter on int32 blocks whose values name the rank and index. */
static void checkOthers(mixcclComm_t comm, int rank, int n, size_t count, void* stream) {
  size_t all = count * n;
  int32_t* h = malloc(all * 4 + 4);
  int32_t* got = malloc(all * 4 + 4);
  void* send = bufAlloc(all * 4);
  void* recv = bufAlloc(all * 4);
  mixcclResult_t r;
#define VAL(p, i) ((int32_t)((p) * 100000 + (int32_t)(i)))
  /* AllGather */
  for (size_t i = 0; i < count; ++i) h[i] = VAL(rank, i);
  bufWrite(send, h, count * 4, stream);
  r = mixcclAllGather(send, recv, count, mixcclInt32, comm, stream);
  EXPECT(r == mixcclSuccess, "rank %d: AllGather: %s", rank, mixcclGetLastError(comm));
  bufRead(got, recv, all * 4, stream);
  for (size_t i = 0; i < all; ++i)
    if (got[i] != VAL(i / count, i % count)) { EXPECT(0, "rank %d: AllGather [%zu] = %d", rank, i, got[i]); break; }
  /* AlltoAll: block p of rank q's input goes to rank p's block q */
  for (size_t i = 0; i < all; ++i) h[i] = VAL(rank, i);
  bufWrite(send, h, all * 4, stream);
  r = mixcclAlltoAll(send, recv, count, mixcclInt32, comm, stream);
  EXPECT(r == mixcclSuccess, "rank %d: AlltoAll: %s", rank, mixcclGetLastError(comm));
  bufRead(got, recv, all * 4, stream);
  for (size_t i = 0; i < all; ++i)
    if (got[i] != VAL(i / count, rank * count + i % count)) { EXPECT(0, "rank %d: AlltoAll [%zu] = %d", rank, i, got[i]); break; }
  /* ReduceScatter sum: block rank of sum over p of VAL(p, i) */
  r = mixcclReduceScatter(send, recv, count, mixcclInt32, mixcclSum, comm, stream);
  EXPECT(r == mixcclSuccess, "rank %d: ReduceScatter: %s", rank, mixcclGetLastError(comm));
  bufRead(got, recv, count * 4, stream);
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int p = 0; p < n; ++p) want += VAL(p, rank * count + i);
    if (got[i] != want) { EXPECT(0, "rank %d: ReduceScatter [%zu] = %d, expected %d", rank, i, got[i], want); break; }
  }
  for (int root = 0; root < n; ++root) {
    /* Broadcast */
    for (size_t i = 0; i < count; ++i) h[i] = VAL(root + 7, i);
    if (rank == root) bufWrite(send, h, count * 4, stream);
    r = mixcclBroadcast(send, recv, count, mixcclInt32, root, comm, stream);
    EXPECT(r == mixcclSuccess, "rank %d: Broadcast root %d: %s", rank, root, mixcclGetLastError(comm));
    bufRead(got, recv, count * 4, stream);
    for (size_t i = 0; i < count; ++i)
      if (got[i] != VAL(root + 7, i)) { EXPECT(0, "rank %d: Broadcast root %d [%zu] = %d", rank, root, i, got[i]); break; }
    /* Reduce max */
    for (size_t i = 0; i < count; ++i) h[i] = VAL(rank, i);
    bufWrite(send, h, count * 4, stream);
    r = mixcclReduce(send, recv, count, mixcclInt32, mixcclMax, root, comm, stream);
    EXPECT(r == mixcclSuccess, "rank %d: Reduce root %d: %s", rank, root, mixcclGetLastError(comm));
    if (rank == root) {
      bufRead(got, recv, count * 4, stream);
      for (size_t i = 0; i < count; ++i)
        if (got[i] != VAL(n - 1, i)) { EXPECT(0, "rank %d: Reduce root %d [%zu] = %d", rank, root, i, got[i]); break; }
    }
    /* Gather then Scatter */
    r = mixcclGather(send, recv, count, mixcclInt32, root, comm, stream);
    EXPECT(r == mixcclSuccess, "rank %d: Gather root %d: %s", rank, root, mixcclGetLastError(comm));
    if (rank == root) {
      bufRead(got, recv, all * 4, stream);
      for (size_t i = 0; i < all; ++i)
        if (got[i] != VAL(i / count, i % count)) { EXPECT(0, "rank %d: Gather root %d [%zu] = %d", rank, root, i, got[i]); break; }
    }
    r = mixcclScatter(recv, send, count, mixcclInt32, root, comm, stream);
    EXPECT(r == mixcclSuccess, "rank %d: Scatter root %d: %s", rank, root, mixcclGetLastError(comm));
    bufRead(got, send, count * 4, stream);
    for (size_t i = 0; i < count; ++i)
      if (got[i] != VAL(rank, i)) { EXPECT(0, "rank %d: Scatter root %d [%zu] = %d", rank, root, i, got[i]); break; }
  }
#undef VAL
  bufFree(send);
  bufFree(recv);
  free(h);
  free(got);
}

/* A host function that holds the stream until the test opens the gate. */
static pthread_mutex_t gGateMutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gGateCond = PTHREAD_COND_INITIALIZER;
static int gGateOpen;
static void gate(void* arg) {
  (void)arg;
  pthread_mutex_lock(&gGateMutex);
  while (!gGateOpen) pthread_cond_wait(&gGateCond, &gGateMutex);
  pthread_mutex_unlock(&gGateMutex);
}

/* The call returns while the stream is held; the result appears once the stream moves on. */
static void checkStreamOrder(mixcclComm_t comm, int rank, int n, void* stream) {
  const size_t count = 1 << 16;
  float* h = malloc(count * 4);
  void* buf = bufAlloc(count * 4);
  for (size_t i = 0; i < count; ++i) h[i] = fin(rank, i);
  bufWrite(buf, h, count * 4, stream);
  if (gDev) gDev->launchHostFunc(stream, gate, NULL);
  double t0 = harnessNow();
  mixcclResult_t r = mixcclAllReduce(buf, buf, count, mixcclFloat32, mixcclSum, comm, stream);
  double took = harnessNow() - t0;
  EXPECT(r == mixcclSuccess, "rank %d: AllReduce behind a held stream: %s", rank, mixcclGetLastError(comm));
  if (gDev) {
    EXPECT(took < 1.0, "rank %d: AllReduce on a held stream took %.2f s to return (it must only enqueue)", rank, took);
    printf("rank %d: AllReduce returned in %.3f ms with its stream held\n", rank, took * 1e3);
    pthread_mutex_lock(&gGateMutex);
    gGateOpen = 1;
    pthread_cond_broadcast(&gGateCond);
    pthread_mutex_unlock(&gGateMutex);
  }
  bufRead(h, buf, count * 4, stream);
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int p = 0; p < n; ++p) want += fin(p, i);
    if (h[i] != want) { EXPECT(0, "rank %d: held-stream AllReduce [%zu] = %g, expected %g", rank, i, h[i], want); break; }
  }
  bufFree(buf);
  free(h);
}

static int rankMain(mixcclComm_t comm, int rank, int nranks, void* arg) {
  (void)arg;
  char adaptor[32];
  harnessListItem(gHarnessAdaptors, rank, adaptor, sizeof(adaptor));
  void* stream = NULL;
  if (!strcmp(adaptor, "simdev")) {
    const char* path = getenv("MIXCCL_SIMDEV_PLUGIN");
    void* h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    gDev = h ? (const mixcclAdaptor_v2_t*)dlsym(h, MIXCCL_ADAPTOR_SYMBOL) : NULL;
    if (!gDev) {
      fprintf(stderr, "rank %d: cannot open simdev (%s): %s\n", rank, path ? path : "MIXCCL_SIMDEV_PLUGIN unset", dlerror());
      return 1;
    }
    gDev->streamCreate(&stream);
  }
  char memory[16] = "";
  EXPECT(mixcclCommInspect(comm, "memory", memory, sizeof memory) == mixcclSuccess &&
             strcmp(memory, gDev ? "device" : "host") == 0,
         "rank %d: inspect memory gave '%s'", rank, memory);
  size_t counts[] = {0, 1, 1009, 300000};
  for (int k = 0; k < 4; ++k) {
    checkAllReduce(comm, rank, nranks, counts[k], stream);
    checkOthers(comm, rank, nranks, counts[k] / 4 + (k > 0), stream);
  }
  checkStreamOrder(comm, rank, nranks, stream);
  for (int k = 0; k < 4; ++k) checkSendRecvRing(comm, rank, nranks, counts[k], stream);
  if (gDev) {
    /* One group's device transfers are staged on one stream: two streams are refused, and
     * the communicator still works (the ring after it). */
    void* other = NULL;
    gDev->streamCreate(&other);
    void* b = bufAlloc(16);
    mixcclResult_t r = mixcclGroupStart();
    if (r == mixcclSuccess) r = mixcclSend(b, 4, mixcclInt32, rank, comm, stream);
    if (r == mixcclSuccess) r = mixcclRecv(b, 4, mixcclInt32, rank, comm, other);
    mixcclResult_t end = mixcclGroupEnd();
    EXPECT(r == mixcclSuccess && end == mixcclInvalidUsage &&
               strstr(mixcclGetLastError(comm), "in one group on two streams") != NULL,
           "rank %d: a device group on two streams gave %d/%d: %s", rank, (int)r, (int)end,
           mixcclGetLastError(comm));
    bufFree(b);
    gDev->streamDestroy(other);
  }
  checkSendRecvRing(comm, rank, nranks, 1009, stream);
  mixcclResult_t async = mixcclSuccess;
  mixcclCommGetAsyncError(comm, &async);
  EXPECT(async == mixcclSuccess, "rank %d: async error %d: %s", rank, (int)async, mixcclGetLastError(comm));
  if (gDev) gDev->streamDestroy(stream);
  printf("rank %d (%s): %ld failures\n", rank, adaptor, gFailures);
  return gFailures ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s NRANKS ADAPTORS\n", argv[0]);
    return 2;
  }
  gHarnessAdaptors = argv[2];
  int rc = runRanks(atoi(argv[1]), rankMain, NULL, 240);
  printf("device staging: %s\n", rc ? "FAILED" : "passed");
  return rc;
}
