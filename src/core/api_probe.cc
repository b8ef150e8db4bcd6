// mixcclIprobe: has the next unmatched message from a peer begun to arrive (and its size).
#include <mixccl.h>

#include "adaptors/adaptor_loader.h"
#include "core/api_support.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/group.h"
#include "proxy/proxy.h"

namespace mixccl {
namespace {

const char* const kFn = "mixcclIprobe";

Result probe(Comm* comm, int peer, int* flag, size_t* bytes) {
  if (!flag || !bytes)
    return raiseError(mixcclInvalidArgument, "%s: %s is NULL", kFn, flag ? "bytes" : "flag");
  *flag = 0;
  *bytes = 0;
  MIXCCL_CHECK(checkCommUsable(kFn, comm));
  MIXCCL_CHECK(checkCommReady(kFn, comm));  // a non-blocking init may not have a proxy yet
  MIXCCL_CHECK(checkRank(kFn, "peer", peer, comm->nranks));
  if (peer == comm->rank)
    return raiseError(mixcclInvalidUsage, "%s: rank %d probes for a message from itself (a send "
                      "to itself is matched inside its group)", kFn, comm->rank);
  // Inside a group the recorded receives are not posted yet: the answer would be about a
  // message one of them will take.
  if (groupOpen())
    return raiseError(mixcclInvalidUsage, "%s: called inside a group (between mixcclGroupStart "
                      "and mixcclGroupEnd)", kFn);
  if (comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY)
    return raiseError(mixcclInvalidUsage, "%s: the %s adaptor moves Send/Recv through its own "
                      "library, which has no probe", kFn, comm->adaptor->name.c_str());
  bool arrived = false;
  uint64_t size = 0;
  MIXCCL_CHECK(comm->proxy->probe(peer, &arrived, &size));
  *flag = arrived ? 1 : 0;
  *bytes = arrived ? (size_t)size : 0;
  return mixcclSuccess;
}

}  // namespace
}  // namespace mixccl

using namespace mixccl;

MIXCCL_API mixcclResult_t mixcclIprobe(int peer, int* flag, size_t* bytes, mixcclComm_t comm) {
  CommRef ref(comm);
  if (!ref) return badComm(kFn, comm);
  return finishCall(ref.get(), probe(ref.get(), peer, flag, bytes));
}
