// Hand-typed declarations of the CUDA runtime and NCCL, used only where cuda_runtime_api.h and
// nccl.h are absent at build time (CMake decides, plugins/CMakeLists.txt). Each mirrors the
// real declaration's shape (enums, opaque struct pointers, a by-value unique id) so that
// nccl_api_agreement_test can compare the two wherever both exist. Macro constants of the real
// headers (cudaStreamNonBlocking, ...) are k-names here so both can be included together.
#pragma once

#include <cstddef>

#include "nccl_api_list.h"

namespace mixccl_nccl::fallback {

enum cudaError_t { cudaSuccess = 0, cudaErrorNotReady = 600 };
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct CUevent_st;
using cudaEvent_t = CUevent_st*;
using cudaHostFn_t = void (*)(void*);
constexpr unsigned kStreamNonBlocking = 0x01;   // cudaStreamNonBlocking
constexpr unsigned kEventDisableTiming = 0x02;  // cudaEventDisableTiming

enum ncclResult_t { ncclSuccess = 0 };
enum ncclDataType_t { ncclInt8 = 0 };
enum ncclRedOp_t { ncclSum = 0 };
struct ncclComm;
using ncclComm_t = ncclComm*;
constexpr int kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct ncclUniqueId {
  char internal[kUniqueIdBytes];
};

// Declared, never defined: only their types are used (decltype below).
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device);
cudaError_t cudaMalloc(void** devPtr, size_t size);
cudaError_t cudaFree(void* devPtr);
cudaError_t cudaMallocHost(void** ptr, size_t size);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData);
const char* cudaGetErrorString(cudaError_t error);

ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
const char* ncclGetErrorString(ncclResult_t result);
const char* ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommRegister(ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(ncclComm_t comm, void* handle);

#define MIXCCL_NCCL_FALLBACK_RUNTIME_TYPE(s) using cuda##s##_fn = decltype(&cuda##s);
MIXCCL_NCCL_RUNTIME_FUNCTIONS(MIXCCL_NCCL_FALLBACK_RUNTIME_TYPE)
#undef MIXCCL_NCCL_FALLBACK_RUNTIME_TYPE
#define MIXCCL_NCCL_FALLBACK_LIBRARY_TYPE(f) using f##_fn = decltype(&f);
MIXCCL_NCCL_LIBRARY_FUNCTIONS(MIXCCL_NCCL_FALLBACK_LIBRARY_TYPE)
MIXCCL_NCCL_OPTIONAL_LIBRARY_FUNCTIONS(MIXCCL_NCCL_FALLBACK_LIBRARY_TYPE)
#undef MIXCCL_NCCL_FALLBACK_LIBRARY_TYPE

}  // namespace mixccl_nccl::fallback
