// The device-runtime and NCCL-API functions the nccl adaptor binds with dlsym, listed once: the
// adaptor's function table (nccl_api.h), the binding (nccl_api.cc) and the test that the
// hand-typed declarations agree with the real headers all expand these lists, so a function
// cannot be bound without being typed, or typed one way and checked another.
#pragma once

// Runtime functions by the part of the name after the runtime's prefix: CUDA's "cuda" or
// HIP's "hip" (HIP's runtime mirrors CUDA's signatures and constants for these).
#define MIXCCL_NCCL_RUNTIME_FUNCTIONS(X)                                                   \
  X(GetDeviceCount) X(SetDevice) X(GetDevice) X(DeviceGetPCIBusId) X(Malloc) X(Free)       \
  X(MallocHost) X(FreeHost) X(MemcpyAsync) X(StreamCreateWithFlags) X(StreamDestroy)       \
  X(StreamSynchronize) X(EventCreateWithFlags) X(EventDestroy) X(EventRecord) X(EventQuery) \
  X(StreamWaitEvent) X(LaunchHostFunc) X(GetErrorString)

// NCCL-API functions (NCCL, RCCL and other vendors' libraries export these names).
#define MIXCCL_NCCL_LIBRARY_FUNCTIONS(X)                                                 \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy)            \
  X(ncclCommAbort) X(ncclAllReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclBroadcast) \
  X(ncclReduce) X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)                \
  X(ncclGetErrorString)

// Bound where the library has them, never required: ncclGetLastError (NCCL 2.13 and later)
// gives the detail behind a result code, which the adaptor adds to its messages;
// ncclCommGetAsyncError reports work that failed after it was enqueued; ncclCommRegister and
// ncclCommDeregister (NCCL 2.19 and later) register a user buffer.
#define MIXCCL_NCCL_OPTIONAL_LIBRARY_FUNCTIONS(X) \
  X(ncclGetLastError) X(ncclCommGetAsyncError) X(ncclCommRegister) X(ncclCommDeregister)
