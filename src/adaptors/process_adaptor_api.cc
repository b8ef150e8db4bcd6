// mixcclGetProcessAdaptor: the adaptor of this process before it has a communicator, for calls
// that allocate memory the communicators will take (the NCCL shim's ncclMemAlloc: a program may
// call it before ncclCommInitRank, and its buffers must be the adaptor's device memory).
#include "adaptors/adaptor_loader.h"
#include "base/env.h"
#include "base/error.h"
#include "mixccl_adaptor.h"

extern "C" __attribute__((visibility("default"))) mixcclResult_t mixcclGetProcessAdaptor(
    const mixcclAdaptor_v2_t** adaptor) {
  using namespace mixccl;
  if (!adaptor) return raiseError(mixcclInvalidArgument, "mixcclGetProcessAdaptor: adaptor is NULL");
  // What a communicator without a configured adaptor chooses (core/config.cc, domain_comm.cc):
  // MIXCCL_ADAPTOR, else detection. The load is cached, so both get the same table.
  const std::string name = env().adaptor.empty() ? detectAdaptorName() : env().adaptor;
  const Adaptor* loaded = nullptr;
  Result r = loadAdaptor(name, &loaded);
  if (r != mixcclSuccess) return r;
  *adaptor = &loaded->publicTable;
  return mixcclSuccess;
}
