// What the stand-in NCCL-API library needs of the stand-in runtime beyond CUDA's API: to run
// a function on a stream's worker in stream order, and to reach the memory behind a device
// pointer. Exported by libmixccl_standin_cudart.so under these names only.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

extern "C" {

// Enqueues fn(arg, skipped) on stream (NULL: the legacy default stream). It runs on the
// stream's worker once the work before it has finished; skipped is 1 when it does not run
// because an asynchronous error has poisoned the runtime (fn then only releases what it
// holds). Not subject to fault injection. Returns cudaErrorInvalidResourceHandle for an
// unknown stream, or the runtime's sticky error.
cudaError_t mixcclStandinStreamEnqueue(cudaStream_t stream, void (*fn)(void* arg, int skipped),
                                       void* arg);

// The host address of [ptr, ptr + bytes): the shadow mapping of stand-in device memory, or ptr
// itself for pinned host memory (cudaMallocHost). NULL when the range is neither, or crosses
// the end of its allocation.
void* mixcclStandinHostView(const void* ptr, size_t bytes);

}
