/* Device pointers and a stream through the shim, without a GPU: ranks on mixccl's simulated
 * device adaptor "simdev" (tests/hetero: device pointers the host cannot dereference,
 * asynchronous ordered streams) pass simdev buffers and a simdev stream to ncclAllReduce,
 * ncclBroadcast and ncclBcast exactly as a CUDA program passes cudaMalloc'd buffers and a
 * cudaStream_t; host ranks pass host buffers and NULL. mixccl stages the device memory in stream
 * order. A pre-multiplied sum on device memory (both scalar residences) is staged and scaled on
 * the host. ncclMemAlloc'd buffers are the rank's adaptor's memory (simdev's on simdev ranks).
 *   mixcclrun -np N --adaptors simdev,host,... nccl_shim_device_memory_test
 * MIXCCL_SIMDEV_PLUGIN names the plugin file (the one mixccl loads, so one runtime). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixccl_adaptor.h" /* the simulated device's runtime entries */
#include "shim_checks.h"

static const mixcclAdaptor_v2_t* gDev; /* this rank's runtime when it is on simdev */
static void* gStream;

static void* bufAlloc(size_t bytes) {
  void* p = NULL;
  if (gDev) {
    if (gDev->memAlloc(&p, bytes) != mixcclSuccess) abort();
  } else {
    p = calloc(1, bytes);
  }
  return p;
}
static void bufFree(void* p) {
  if (gDev) gDev->memFree(p);
  else free(p);
}
static void bufWrite(void* dst, const void* host, size_t bytes) {
  if (gDev) gDev->memcpyAsync(dst, host, bytes, mixcclCopyHostToDevice, gStream);
  else memcpy(dst, host, bytes);
}
/* After the work queued on the stream (the collective included) has finished. */
static void bufRead(void* host, const void* src, size_t bytes) {
  if (gDev) {
    gDev->memcpyAsync(host, src, bytes, mixcclCopyDeviceToHost, gStream);
    gDev->streamSynchronize(gStream);
  } else {
    memcpy(host, src, bytes);
  }
}

int main(void) {
  const char* r = getenv("MIXCCL_RANK");
  const char* n = getenv("MIXCCL_NRANKS");
  const char* adaptor = getenv("MIXCCL_ADAPTOR");
  if (!r || !n || !adaptor) {
    fprintf(stderr, "run under mixcclrun --adaptors\n");
    return 2;
  }
  int rank = atoi(r), nranks = atoi(n);
  gShimRank = rank;
  if (strcmp(adaptor, "simdev") == 0) {
    const char* path = getenv("MIXCCL_SIMDEV_PLUGIN");
    void* h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    gDev = h ? (const mixcclAdaptor_v2_t*)dlsym(h, MIXCCL_ADAPTOR_SYMBOL) : NULL;
    if (!gDev) {
      fprintf(stderr, "rank %d: cannot open MIXCCL_SIMDEV_PLUGIN\n", rank);
      return 2;
    }
  }
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  SHIM_OK(ncclGetUniqueId(&id));
  SHIM_OK(ncclCommInitRank(&comm, nranks, id, rank)); /* initialises the simdev runtime */
  if (gShimFailures) return 1;
  if (gDev && gDev->streamCreate(&gStream) != mixcclSuccess) return 2;
  cudaStream_t stream = (cudaStream_t)gStream; /* NULL on host ranks */

  enum { COUNT = 1000 };
  float host[COUNT];
  void* send = bufAlloc(sizeof host);
  void* recv = bufAlloc(sizeof host);
  for (int i = 0; i < COUNT; ++i) host[i] = (float)((rank + i) % 5);
  bufWrite(send, host, sizeof host);
  SHIM_OK(ncclAllReduce(send, recv, COUNT, ncclFloat, ncclSum, comm, stream));
  bufRead(host, recv, sizeof host);
  for (int i = 0; i < COUNT; ++i) {
    float want = 0;
    for (int p = 0; p < nranks; ++p) want += (float)((p + i) % 5);
    if (host[i] != want) {
      SHIM_CHECK(host[i] == want);
      break;
    }
  }
  for (int i = 0; i < COUNT; ++i) host[i] = (float)(rank * 1000 + i);
  bufWrite(send, host, sizeof host);
  SHIM_OK(ncclBroadcast(send, recv, COUNT, ncclFloat, nranks - 1, comm, stream));
  SHIM_OK(ncclBcast(send, COUNT, ncclFloat, 0, comm, stream));
  bufRead(host, recv, sizeof host);
  SHIM_CHECK(host[0] == (float)((nranks - 1) * 1000) && host[COUNT - 1] == (float)((nranks - 1) * 1000 + COUNT - 1));
  bufRead(host, send, sizeof host);
  SHIM_CHECK(host[0] == 0 && host[COUNT - 1] == (float)(COUNT - 1));

  /* A pre-multiplied sum: device ranks scale in the staged host copy, with the scalar read on
   * the stream (ncclScalarDevice: the scalar lives in device memory, and is changed after the
   * op is created and before the call, which must see the new value) or copied at creation
   * (ncclScalarHostImmediate). Every rank contributes (rank + i) % 5. */
  for (int round = 0; round < 2; ++round) {
    const float factor = round == 0 ? 3.0f : 0.5f;
    float first = 7.0f;
    void* scalarBuf = bufAlloc(sizeof(float));
    ncclRedOp_t op;
    if (round == 0) {
      bufWrite(scalarBuf, &first, sizeof first);
      SHIM_OK(ncclRedOpCreatePreMulSum(&op, scalarBuf, ncclFloat, ncclScalarDevice, comm));
      bufWrite(scalarBuf, &factor, sizeof factor); /* the call must read this one */
    } else {
      SHIM_OK(ncclRedOpCreatePreMulSum(&op, (void*)&factor, ncclFloat, ncclScalarHostImmediate,
                                       comm));
    }
    for (int i = 0; i < COUNT; ++i) host[i] = (float)((rank + i) % 5);
    bufWrite(send, host, sizeof host);
    SHIM_OK(ncclAllReduce(send, recv, COUNT, ncclFloat, op, comm, stream));
    bufRead(host, recv, sizeof host);
    for (int i = 0; i < COUNT; ++i) {
      float want = 0;
      for (int p = 0; p < nranks; ++p) want += factor * (float)((p + i) % 5);
      if (host[i] != want) {
        fprintf(stderr, "rank %d: premulsum round %d element %d: %g, expected %g\n", rank, round,
                i, host[i], want);
        SHIM_CHECK(host[i] == want);
        break;
      }
    }
    SHIM_OK(ncclRedOpDestroy(op, comm));
    bufFree(scalarBuf);
  }
  /* ncclMemAlloc allocates through the rank's adaptor: simdev device memory (faults if the
   * host touches it; moved only with simdev's copies) on simdev ranks, host memory elsewhere. */
  void* nsend = NULL;
  void* nrecv = NULL;
  SHIM_OK(ncclMemAlloc(&nsend, sizeof host));
  SHIM_OK(ncclMemAlloc(&nrecv, sizeof host));
  for (int i = 0; i < COUNT; ++i) host[i] = (float)(rank + 2 * i);
  bufWrite(nsend, host, sizeof host);
  SHIM_OK(ncclAllReduce(nsend, nrecv, COUNT, ncclFloat, ncclMax, comm, stream));
  bufRead(host, nrecv, sizeof host);
  SHIM_CHECK(host[0] == (float)(nranks - 1) && host[COUNT - 1] == (float)(nranks - 1 + 2 * (COUNT - 1)));
  SHIM_OK(ncclMemFree(nsend));
  SHIM_OK(ncclMemFree(nrecv));

  bufFree(send);
  bufFree(recv);
  SHIM_OK(ncclCommDestroy(comm));
  if (gDev) gDev->streamDestroy(gStream);
  printf("rank %d (%s): %s\n", rank, adaptor, gShimFailures ? "FAILED" : "PASSED");
  return gShimFailures != 0;
}
