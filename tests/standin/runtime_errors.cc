// The stand-in runtime's error names and texts: the codes it returns, in its own words, each
// text marked as the stand-in's so a message shows which runtime produced it.
#include <cuda_runtime_api.h>

#include "standin_export.h"

namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

const ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument (stand-in runtime)"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory (stand-in runtime)"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error (stand-in runtime)"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction (stand-in runtime)"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "driver too old for this runtime (stand-in runtime)"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no device (stand-in runtime, MIXCCL_STANDIN_DEVICES=0)"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal (stand-in runtime)"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid stream or event handle (stand-in runtime)"},
    {cudaErrorNotReady, "cudaErrorNotReady", "work not finished yet (stand-in runtime)"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "illegal memory access (stand-in runtime)"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "stream operation failed (stand-in runtime)"},
    {cudaErrorNotPermitted, "cudaErrorNotPermitted", "not permitted here, e.g. in a host function (stand-in runtime)"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error (stand-in runtime)"},
};

const ErrorText* find(cudaError_t e) {
  for (const ErrorText& t : kErrors)
    if (t.code == e) return &t;
  return nullptr;
}

}  // namespace

extern "C" {

STANDIN_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* t = find(error);
  return t ? t->text : "unrecognized error code (stand-in runtime)";
}

STANDIN_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* t = find(error);
  return t ? t->name : "cudaErrorUnknown";
}

}  // extern "C"
