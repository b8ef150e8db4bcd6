/* The CUDA runtime of an NCCL program that must run against more than one runtime: NVIDIA's
 * libcudart, or the stand-in runtime the tests run on (tests/standin). Opened by name at run
 * time, the way mixccl's nccl adaptor opens it, so the program and the adaptor underneath the
 * shim share one runtime (a stream or a device pointer of one runtime means nothing to
 * another): MIXCCL_CUDA_RUNTIME_LIBRARY when set (the adaptor's own variable), else
 * libcudart.so.13, libcudart.so.12. Every pointer has the type of the real declaration in
 * cuda_runtime_api.h (__typeof__), so a wrong call does not compile. Header-only: one concept,
 * used by compat/nccl's C programs. */
#ifndef MIXCCL_CUDA_RUNTIME_DL_H_
#define MIXCCL_CUDA_RUNTIME_DL_H_

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  char path[512]; /* the name it was opened by */
  __typeof__(cudaMalloc)* malloc_;
  __typeof__(cudaFree)* free_;
  __typeof__(cudaMallocHost)* mallocHost;
  __typeof__(cudaFreeHost)* freeHost;
  __typeof__(cudaMemcpyAsync)* memcpyAsync;
  __typeof__(cudaStreamCreateWithFlags)* streamCreateWithFlags;
  __typeof__(cudaStreamDestroy)* streamDestroy;
  __typeof__(cudaStreamSynchronize)* streamSynchronize;
  __typeof__(cudaLaunchHostFunc)* launchHostFunc;
  __typeof__(cudaEventCreateWithFlags)* eventCreateWithFlags;
  __typeof__(cudaEventRecord)* eventRecord;
  __typeof__(cudaEventQuery)* eventQuery;
  __typeof__(cudaEventDestroy)* eventDestroy;
  __typeof__(cudaGetErrorString)* getErrorString;
} CudaRuntimeDl;

/* Fills rt; returns 0, or -1 after writing why to why (why may be NULL). */
static int cudaRuntimeOpen(CudaRuntimeDl* rt, char* why, size_t whyLen) {
  const char* named = getenv("MIXCCL_CUDA_RUNTIME_LIBRARY");
  const char* candidates[] = {named && *named ? named : "libcudart.so.13", "libcudart.so.12"};
  const int n = named && *named ? 1 : 2;
  void* h = NULL;
  for (int i = 0; i < n && !h; ++i) {
    h = dlopen(candidates[i], RTLD_NOW | RTLD_GLOBAL);
    if (h) snprintf(rt->path, sizeof rt->path, "%s", candidates[i]);
  }
  if (!h) {
    if (why) snprintf(why, whyLen, "cannot open the CUDA runtime (%s): %s",
                      n == 1 ? candidates[0] : "libcudart.so.13, libcudart.so.12", dlerror());
    return -1;
  }
#define CUDA_RUNTIME_DL_BIND(field, name)                                              \
  if (!(rt->field = (__typeof__(rt->field))dlsym(h, #name))) {                         \
    if (why) snprintf(why, whyLen, "%s: missing %s", rt->path, #name);                 \
    return -1;                                                                         \
  }
  CUDA_RUNTIME_DL_BIND(malloc_, cudaMalloc)
  CUDA_RUNTIME_DL_BIND(free_, cudaFree)
  CUDA_RUNTIME_DL_BIND(mallocHost, cudaMallocHost)
  CUDA_RUNTIME_DL_BIND(freeHost, cudaFreeHost)
  CUDA_RUNTIME_DL_BIND(memcpyAsync, cudaMemcpyAsync)
  CUDA_RUNTIME_DL_BIND(streamCreateWithFlags, cudaStreamCreateWithFlags)
  CUDA_RUNTIME_DL_BIND(streamDestroy, cudaStreamDestroy)
  CUDA_RUNTIME_DL_BIND(streamSynchronize, cudaStreamSynchronize)
  CUDA_RUNTIME_DL_BIND(launchHostFunc, cudaLaunchHostFunc)
  CUDA_RUNTIME_DL_BIND(eventCreateWithFlags, cudaEventCreateWithFlags)
  CUDA_RUNTIME_DL_BIND(eventRecord, cudaEventRecord)
  CUDA_RUNTIME_DL_BIND(eventQuery, cudaEventQuery)
  CUDA_RUNTIME_DL_BIND(eventDestroy, cudaEventDestroy)
  CUDA_RUNTIME_DL_BIND(getErrorString, cudaGetErrorString)
#undef CUDA_RUNTIME_DL_BIND
  return 0; /* the runtime stays loaded for the process, like a linked one */
}

#endif
