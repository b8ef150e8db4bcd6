// Errors from the library and the runtime under the nccl adaptor, injected through the
// stand-in's fault plans (docs/adaptors.md): each case checks the exact mixccl result and
// message, and what is still usable afterwards.
//   errors-library  every rank: the 2nd ncclAllReduce fails with ncclUnhandledCudaError, the
//                   1st ncclBroadcast with ncclSystemError; the communicator stays usable.
//   errors-async    every rank: the 2nd collective fails on its stream (CUDA error 719): the
//                   call returns success, synchronising the stream reports the error, and the
//                   runtime stays poisoned as CUDA's does.
//   errors-native-async  every rank: the 2nd ncclAllReduce fails on its stream (ncclRemoteError,
//                   as NCCL reports a peer gone): mixcclCommGetAsyncError reports it with the
//                   library's message and the communicator has failed.
//   errors-runtime  rank 0 (nccl, beside host ranks): a failed cudaMalloc through the adaptor,
//                   then a failed staging copy of AllReduce.
#pragma once

#include <string>

#include "mixccl.h"
#include "ranks_buffers.h"

namespace ranks_test {

bool knownSuite(const std::string& suite);
// Sets the fault plan of an error case before the ranks start (no-op for other suites); returns
// the function each rank's process runs before it joins (the rank harness's setup), or NULL.
using RankSetup = void (*)(int rank);
RankSetup prepareErrorCase(const std::string& suite);
long runErrorCase(const std::string& suite, mixcclComm_t comm, RankBuffers& buffers, int rank, int nranks);

}  // namespace ranks_test
