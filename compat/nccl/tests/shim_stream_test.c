/* An NCCL program on device memory and a non-default stream, as real NCCL programs run:
 * compiled against the real nccl.h and cuda_runtime_api.h, linked to the shim, its buffers from
 * ncclMemAlloc and registered with ncclCommRegister, every call given a cudaStreamNonBlocking
 * stream, every result read back with a copy on that stream after cudaStreamSynchronize.
 * Ranks whose MIXCCL_ADAPTOR is a host-memory adaptor (host, gloo) pass host buffers and a NULL
 * stream, so the same program checks a mixed job (mixccl stages the device ranks' memory).
 *   mixcclrun -np N [--adaptors nccl,host,...] nccl_shim_stream_test
 * The CUDA runtime is the one the nccl adaptor uses (cuda_runtime_dl.h:
 * MIXCCL_CUDA_RUNTIME_LIBRARY), so on a CPU machine both are the stand-in (tests/standin).
 *
 * Stream order: each round starts with a host function that holds the stream (a gate), then
 * queues the upload of the round's inputs and the round's calls behind it. Every call must
 * return while the gate is closed (the call enqueues, it does not wait), an event recorded
 * after them must not be complete, and the results must be those of the inputs uploaded behind
 * the gate: a call that ran before the stream reached it would read the stale inputs written
 * before the gate (all 77s) and fail the check. */
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_runtime_dl.h"
#include "shim_checks.h"

enum { COUNT = 1531 }; /* per rank and call: not a multiple of any rank count tested */
enum { STALE = 77 };

static CudaRuntimeDl gRt;
static int gDevice;            /* this rank passes device memory and a stream */
static cudaStream_t gStream;   /* NULL on host ranks */
static int gRank, gNranks;
static int gMixed; /* some ranks on host memory: no Send/Recv of device memory across domains */

#define CUDA_OK(call)                                                                         \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "rank %d: line %d: %s: CUDA error %d: %s\n", gRank, __LINE__, #call,    \
              (int)e_, gRt.getErrorString(e_));                                               \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

/* ---- the gate: a host function on the stream that blocks until the main thread opens it */
static pthread_mutex_t gGateMutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gGateCond = PTHREAD_COND_INITIALIZER;
static int gGateOpen;

static void CUDART_CB gateWait(void* arg) {
  (void)arg;
  pthread_mutex_lock(&gGateMutex);
  while (!gGateOpen) pthread_cond_wait(&gGateCond, &gGateMutex);
  pthread_mutex_unlock(&gGateMutex);
}
static void gateClose(void) {
  gGateOpen = 0;
  if (gDevice) CUDA_OK(gRt.launchHostFunc(gStream, gateWait, NULL));
}
static void gateOpen(void) {
  pthread_mutex_lock(&gGateMutex);
  gGateOpen = 1;
  pthread_cond_broadcast(&gGateCond);
  pthread_mutex_unlock(&gGateMutex);
}

/* ---- buffers: ncclMemAlloc'd, host data moved with copies on the stream */
static void* bufAlloc(size_t bytes) {
  void* p = NULL;
  SHIM_OK(ncclMemAlloc(&p, bytes));
  if (!p) exit(1);
  return p;
}
/* Queued behind whatever the stream holds (the gate); immediate on host ranks. */
static void bufUploadAsync(void* dst, const void* host, size_t bytes) {
  if (gDevice) CUDA_OK(gRt.memcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, gStream));
  else memcpy(dst, host, bytes);
}
static void bufDownload(void* host, const void* src, size_t bytes) {
  if (gDevice) {
    CUDA_OK(gRt.memcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, gStream));
    CUDA_OK(gRt.streamSynchronize(gStream));
  } else {
    memcpy(host, src, bytes);
  }
}
static void bufFill(void* dst, float value, size_t count) {
  float* h = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) h[i] = value;
  bufUploadAsync(dst, h, count * sizeof(float));
  if (gDevice) CUDA_OK(gRt.streamSynchronize(gStream));
  free(h);
}

/* Rank r's input element i of round k: small integers, every sum exact in float. */
static float input(int r, size_t i, int k) { return (float)((r * 3 + (int)i + k) % 11); }

/* A round's buffers: every call reads its own input and writes its own output, so all of one
 * round's calls can wait behind one gate and be checked after it. */
typedef struct {
  const char* name;
  size_t inCount, outCount; /* elements */
  float *in, *out;          /* device (or host) memory */
  float* hostIn;            /* what is uploaded behind the gate: pinned on device ranks (a copy
                               from pageable memory may wait for the stream, as CUDA's may) */
} Call;

static void callInit(Call* c, const char* name, size_t inCount, size_t outCount, int k) {
  c->name = name;
  c->inCount = inCount;
  c->outCount = outCount;
  c->in = bufAlloc(inCount * sizeof(float));
  c->out = bufAlloc(outCount * sizeof(float));
  if (gDevice) CUDA_OK(gRt.mallocHost((void**)&c->hostIn, inCount * sizeof(float)));
  else c->hostIn = malloc(inCount * sizeof(float));
  for (size_t i = 0; i < inCount; ++i) c->hostIn[i] = input(gRank, i, k);
  bufFill(c->in, STALE, inCount); /* what an early call would read */
  bufFill(c->out, -1, outCount);
}
static void callFree(Call* c) {
  SHIM_OK(ncclMemFree(c->in));
  SHIM_OK(ncclMemFree(c->out));
  if (gDevice) CUDA_OK(gRt.freeHost(c->hostIn));
  else free(c->hostIn);
}

/* Compares out with want(i); reports the first difference. */
static void expectOut(Call* c, float (*want)(size_t i, int k), int k) {
  float* got = malloc(c->outCount * sizeof(float));
  bufDownload(got, c->out, c->outCount * sizeof(float));
  for (size_t i = 0; i < c->outCount; ++i) {
    float w = want(i, k);
    if (got[i] != w) {
      fprintf(stderr, "rank %d: %s element %zu: %g, expected %g%s\n", gRank, c->name, i, got[i], w,
              got[i] == STALE * gNranks || got[i] == STALE ? " (the stale input: the call ran "
                                                            "before the stream reached it)" : "");
      SHIM_CHECK(got[i] == w);
      break;
    }
  }
  free(got);
}

static float sumAll(size_t i, int k) {
  float s = 0;
  for (int r = 0; r < gNranks; ++r) s += input(r, i, k);
  return s;
}
static float fromRoot1(size_t i, int k) { return input(1 % gNranks, i, k); }
static float gathered(size_t i, int k) { return input((int)(i / COUNT), i % COUNT, k); }
static float scatteredShard(size_t i, int k) { return sumAll(gRank * COUNT + i, k); }
static float alltoallPiece(size_t i, int k) {
  /* piece j of the result is rank j's piece for me: its elements [me*COUNT, (me+1)*COUNT) */
  return input((int)(i / COUNT), gRank * COUNT + i % COUNT, k);
}
static float scatterPiece(size_t i, int k) { return input(0, gRank * COUNT + i, k); }
static float fromLeft(size_t i, int k) { return input((gRank + gNranks - 1) % gNranks, i, k); }

/* Closes the gate, uploads every call's input behind it, issues the calls (issue), checks that
 * they returned with the stream still held, opens the gate and waits for the stream. */
static void gatedRound(Call* calls, int n, void (*issue)(Call*, ncclComm_t), ncclComm_t comm) {
  cudaEvent_t done = NULL;
  gateClose();
  for (int j = 0; j < n; ++j)
    bufUploadAsync(calls[j].in, calls[j].hostIn, calls[j].inCount * sizeof(float));
  issue(calls, comm);
  if (gDevice) {
    CUDA_OK(gRt.eventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_OK(gRt.eventRecord(done, gStream));
    usleep(20000); /* time for work that wrongly runs ahead of the stream to finish */
    SHIM_CHECK(gRt.eventQuery(done) == cudaErrorNotReady);
  }
  gateOpen();
  if (gDevice) {
    CUDA_OK(gRt.streamSynchronize(gStream));
    SHIM_CHECK(gRt.eventQuery(done) == cudaSuccess);
    CUDA_OK(gRt.eventDestroy(done));
  }
}

static void issueCollectives(Call* c, ncclComm_t comm) {
  SHIM_OK(ncclAllReduce(c[0].in, c[0].out, COUNT, ncclFloat, ncclSum, comm, gStream));
  SHIM_OK(ncclBroadcast(c[1].in, c[1].out, COUNT, ncclFloat, 1 % gNranks, comm, gStream));
  SHIM_OK(ncclReduce(c[2].in, c[2].out, COUNT, ncclFloat, ncclSum, 0, comm, gStream));
  SHIM_OK(ncclAllGather(c[3].in, c[3].out, COUNT, ncclFloat, comm, gStream));
  SHIM_OK(ncclReduceScatter(c[4].in, c[4].out, COUNT, ncclFloat, ncclSum, comm, gStream));
  SHIM_OK(ncclAlltoAll(c[5].in, c[5].out, COUNT, ncclFloat, comm, gStream));
  SHIM_OK(ncclGather(c[6].in, c[6].out, COUNT, ncclFloat, 0, comm, gStream));
  SHIM_OK(ncclScatter(c[7].in, c[7].out, COUNT, ncclFloat, 0, comm, gStream));
}

/* A group: a ring of Send/Recv (each rank to its right) and an AllReduce, run at GroupEnd. */
static void issueGroup(Call* c, ncclComm_t comm) {
  SHIM_OK(ncclGroupStart());
  if (!gMixed) {
    SHIM_OK(ncclSend(c[0].in, COUNT, ncclFloat, (gRank + 1) % gNranks, comm, gStream));
    SHIM_OK(ncclRecv(c[0].out, COUNT, ncclFloat, (gRank + gNranks - 1) % gNranks, comm, gStream));
  }
  SHIM_OK(ncclGroupStart()); /* nested: the work still runs at the outermost end */
  SHIM_OK(ncclAllReduce(c[1].in, c[1].out, COUNT, ncclFloat, ncclSum, comm, gStream));
  SHIM_OK(ncclGroupEnd());
  SHIM_OK(ncclGroupEnd());
}

/* ncclMemAlloc where the process's adaptor cannot load: the loader's result and message (one
 * rank; prints the code and ncclGetLastError's message). */
static int memAllocError(void) {
  void* p = NULL;
  ncclResult_t res = ncclMemAlloc(&p, 4096);
  printf("ncclMemAlloc: %d: %s\n", (int)res, ncclGetLastError(NULL));
  return res != ncclSuccess && p == NULL ? 0 : 1;
}

/* Registration reaches the library: with MIXCCL_STANDIN_NCCL_FAIL=ncclCommRegister=3@9 (round
 * 1 made eight calls) the ninth fails in the stand-in, and the NCCL program gets its code and
 * message through the adaptor; the communicator stays usable (the next one registers). */
static void registerFails(ncclComm_t comm, void* buf) {
  const int failuresBefore = gShimFailures;
  void* h = NULL;
  SHIM_FAILS(ncclCommRegister(comm, buf, 64, &h), ncclInternalError, comm,
             "nccl adaptor: native commRegister failed: nccl adaptor: ncclCommRegister: internal "
             "error (stand-in NCCL) (NCCL 22809, code 3; last error: ncclCommRegister: failure "
             "injected by MIXCCL_STANDIN_NCCL_FAIL=ncclCommRegister=3@9)");
  SHIM_CHECK(h == NULL);
  SHIM_OK(ncclCommRegister(comm, buf, 64, &h));
  SHIM_OK(ncclCommDeregister(comm, h));
  if (gShimFailures == failuresBefore)
    printf("rank %d: ncclCommRegister failed in the library as injected\n", gRank);
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "memalloc-error") == 0) return memAllocError();
  const char* r = getenv("MIXCCL_RANK");
  const char* n = getenv("MIXCCL_NRANKS");
  const char* adaptor = getenv("MIXCCL_ADAPTOR");
  if (!r || !n || !adaptor) {
    fprintf(stderr, "run under mixcclrun (MIXCCL_ADAPTOR set for every rank)\n");
    return 2;
  }
  gRank = gShimRank = atoi(r);
  gNranks = atoi(n);
  gDevice = strcmp(adaptor, "nccl") == 0;
  gMixed = getenv("SHIM_STREAM_TEST_MIXED") != NULL;
  if (gDevice) {
    char why[600];
    if (cudaRuntimeOpen(&gRt, why, sizeof why) != 0) {
      fprintf(stderr, "rank %d: %s\n", gRank, why);
      return 2;
    }
  }
  /* Allocated before the communicator exists: still the adaptor's (device) memory. */
  float* early = bufAlloc(COUNT * sizeof(float));
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  SHIM_OK(ncclGetUniqueId(&id));
  SHIM_OK(ncclCommInitRank(&comm, gNranks, id, gRank));
  if (gShimFailures) return 1;
  if (gDevice) CUDA_OK(gRt.streamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  {
    Call e = {"AllReduce in place on memory allocated before init", COUNT, COUNT, early, early, NULL};
    float* h = malloc(COUNT * sizeof(float));
    for (size_t i = 0; i < COUNT; ++i) h[i] = input(gRank, i, 0);
    bufUploadAsync(early, h, COUNT * sizeof(float));
    SHIM_OK(ncclAllReduce(early, early, COUNT, ncclFloat, ncclSum, comm, gStream));
    expectOut(&e, sumAll, 0);
    SHIM_OK(ncclMemFree(early));
    free(h);
  }

  /* Round 1: every collective behind one gate, buffers registered. */
  Call c[8];
  const size_t N = COUNT, W = (size_t)COUNT * gNranks;
  callInit(&c[0], "AllReduce", N, N, 1);
  callInit(&c[1], "Broadcast", N, N, 1);
  callInit(&c[2], "Reduce", N, N, 1);
  callInit(&c[3], "AllGather", N, W, 1);
  callInit(&c[4], "ReduceScatter", W, N, 1);
  callInit(&c[5], "AlltoAll", W, W, 1);
  callInit(&c[6], "Gather", N, W, 1);
  callInit(&c[7], "Scatter", W, N, 1);
  void* handles[8];
  for (int j = 0; j < 8; ++j)
    SHIM_OK(ncclCommRegister(comm, c[j].in, c[j].inCount * sizeof(float), &handles[j]));
  gatedRound(c, 8, issueCollectives, comm);
  expectOut(&c[0], sumAll, 1);
  expectOut(&c[1], fromRoot1, 1);
  if (gRank == 0) expectOut(&c[2], sumAll, 1);
  expectOut(&c[3], gathered, 1);
  expectOut(&c[4], scatteredShard, 1);
  expectOut(&c[5], alltoallPiece, 1);
  if (gRank == 0) expectOut(&c[6], gathered, 1);
  expectOut(&c[7], scatterPiece, 1);
  for (int j = 0; j < 8; ++j) SHIM_OK(ncclCommDeregister(comm, handles[j]));
  if (gDevice && getenv("SHIM_STREAM_TEST_REGISTER_FAILS")) registerFails(comm, c[0].in);
  for (int j = 0; j < 8; ++j) callFree(&c[j]);

  /* Round 2: Send/Recv and a nested group (mixccl has no Send/Recv of device memory across
   * domains: a mixed job runs the group's AllReduce alone). */
  Call g[2];
  callInit(&g[0], "Send/Recv", N, N, 2);
  callInit(&g[1], "grouped AllReduce", N, N, 2);
  gatedRound(g, 2, issueGroup, comm);
  if (!gMixed) expectOut(&g[0], fromLeft, 2);
  expectOut(&g[1], sumAll, 2);
  callFree(&g[0]);
  callFree(&g[1]);

  SHIM_OK(ncclCommDestroy(comm));
  if (gDevice) CUDA_OK(gRt.streamDestroy(gStream));
  printf("rank %d (%s%s): %s\n", gRank, adaptor, gDevice ? ", device memory, stream" : "",
         gShimFailures ? "FAILED" : "PASSED");
  return gShimFailures != 0;
}
