// The CUDA runtime and NCCL as their own headers declare them: every function type the adaptor
// binds is decltype of the real declaration, so a call with the wrong argument types does not
// compile. Used where CMake found cuda_runtime_api.h and nccl.h (MIXCCL_NCCL_REAL_HEADERS).
#pragma once

// The adaptor binds the plain names (cudaMemcpyAsync); with per-thread default streams the
// headers rename them (cudaMemcpyAsync_ptsz) and the types would describe other symbols.
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "the nccl adaptor binds the legacy-stream names; build it without CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#include <cuda_runtime_api.h>

#include "nccl_api_list.h"

namespace mixccl_nccl::real {

using ::cudaError_t;
using ::cudaSuccess;
using ::cudaErrorNotReady;
using ::cudaMemcpyKind;
using ::cudaStream_t;
using ::cudaEvent_t;
using ::cudaHostFn_t;
constexpr unsigned kStreamNonBlocking = cudaStreamNonBlocking;
constexpr unsigned kEventDisableTiming = cudaEventDisableTiming;

// Taken here, before nccl.h includes cuda_runtime.h: its C++ overloads of cudaMalloc and
// cudaMallocHost would make decltype(&::cudaMalloc) ambiguous. Here only the C functions the
// library exports are declared.
#define MIXCCL_NCCL_REAL_RUNTIME_TYPE(s) using cuda##s##_fn = decltype(&::cuda##s);
MIXCCL_NCCL_RUNTIME_FUNCTIONS(MIXCCL_NCCL_REAL_RUNTIME_TYPE)
#undef MIXCCL_NCCL_REAL_RUNTIME_TYPE

}  // namespace mixccl_nccl::real

#include <nccl.h>

namespace mixccl_nccl::real {

using ::ncclResult_t;
using ::ncclSuccess;
using ::ncclDataType_t;
using ::ncclRedOp_t;
using ::ncclComm_t;
using ::ncclUniqueId;
constexpr int kUniqueIdBytes = NCCL_UNIQUE_ID_BYTES;

#define MIXCCL_NCCL_REAL_LIBRARY_TYPE(f) using f##_fn = decltype(&::f);
MIXCCL_NCCL_LIBRARY_FUNCTIONS(MIXCCL_NCCL_REAL_LIBRARY_TYPE)
MIXCCL_NCCL_OPTIONAL_LIBRARY_FUNCTIONS(MIXCCL_NCCL_REAL_LIBRARY_TYPE)
#undef MIXCCL_NCCL_REAL_LIBRARY_TYPE

}  // namespace mixccl_nccl::real
