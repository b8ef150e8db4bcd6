// The public collective and point-to-point calls: each fills one descriptor and takes one
// checked path to run or record it.
#include "core/api_support.h"
#include "adaptors/adaptor_loader.h"
#include "core/args.h"
#include "core/group.h"
#include "core/user_ops.h"

using namespace mixccl;

namespace {

// The one path of every collective entry point: check the call against its kind's record,
// then run it or record it in the open group.
Result submitCollective(Comm* comm, const CollCall& original) {
  WorkItem w;
  w.call = original;
  MIXCCL_CHECK(resolveUserOp(comm, &w.call, &w.preMul, &w.isPreMul));
  MIXCCL_CHECK(checkCollArgs(comm, w.call));
  w.comm = comm;
  w.name = w.call.spec().apiName;
  w.kind = WorkItem::Kind::Collective;
  return submitWork(std::move(w));
}

// The handle may be anything the user passed: a reference is taken (or the handle refused)
// before anything reads the communicator.
Result enterCollective(mixcclComm_t handle, const CollCall& call) {
  CommRef ref(handle);
  if (!ref) return badComm(call.spec().apiName, handle);
  return finishCall(ref.get(), submitCollective(ref.get(), call));
}

Result pointToPoint(const char* fn, WorkItem::Kind kind, const void* buf, size_t count,
                    mixcclDataType_t type, int peer, Comm* comm, mixcclStream_t stream) {
  size_t bytes;
  MIXCCL_CHECK(checkCommonArgs(fn, comm, type, stream));
  MIXCCL_CHECK(checkRank(fn, "peer", peer, comm->nranks));
  MIXCCL_CHECK(checkBuffer(fn, "buffer", buf, count, 1, type, &bytes));
  // Device memory in one domain moves through the library's own send/recv, which a table may
  // leave out. (In a job of several domains it is staged through host memory: work.cc.)
  if (comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY &&
      comm->domainMap.single() && comm->domainComm && !comm->adaptor->table->hasPointToPoint())
    return raiseError(mixcclInvalidUsage,
                      "%s: the %s adaptor's native library has no send/recv (its table leaves "
                      "them NULL), and mixccl's own transport cannot move device memory", fn,
                      comm->adaptor->name.c_str());
  WorkItem w;
  w.comm = comm;
  w.name = fn;
  w.kind = kind;
  w.peer = peer;
  w.buf = const_cast<void*>(buf);
  w.bytes = bytes;
  w.count = count;
  w.type = type;
  w.stream = stream;
  return submitWork(std::move(w));
}

}  // namespace

#define MIXCCL_ENTRY(fn, comm, call)                  \
  CommRef ref(comm);                                  \
  if (!ref) return badComm(fn, comm);                 \
  return finishCall(ref.get(), call)

// Non-reducing kinds carry mixcclSum and unrooted ones root -1: never read (collSpec says
// which arguments a kind has).
MIXCCL_API mixcclResult_t mixcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          mixcclDataType_t datatype, mixcclRedOp_t op,
                                          mixcclComm_t comm, mixcclStream_t stream) {
  return enterCollective(comm, {CollKind::AllReduce, sendbuff, recvbuff, count, datatype, op, -1, stream});
}

MIXCCL_API mixcclResult_t mixcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                          mixcclDataType_t datatype, int root, mixcclComm_t comm,
                                          mixcclStream_t stream) {
  return enterCollective(comm, {CollKind::Broadcast, sendbuff, recvbuff, count, datatype, mixcclSum, root, stream});
}

MIXCCL_API mixcclResult_t mixcclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       mixcclDataType_t datatype, mixcclRedOp_t op, int root,
                                       mixcclComm_t comm, mixcclStream_t stream) {
  return enterCollective(comm, {CollKind::Reduce, sendbuff, recvbuff, count, datatype, op, root, stream});
}

MIXCCL_API mixcclResult_t mixcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          mixcclDataType_t datatype, mixcclComm_t comm,
                                          mixcclStream_t stream) {
  return enterCollective(comm, {CollKind::AllGather, sendbuff, recvbuff, sendcount, datatype, mixcclSum, -1, stream});
}

MIXCCL_API mixcclResult_t mixcclReduceScatter(const void* sendbuff, void* recvbuff,
                                              size_t recvcount, mixcclDataType_t datatype,
                                              mixcclRedOp_t op, mixcclComm_t comm,
                                              mixcclStream_t stream) {
  return enterCollective(comm, {CollKind::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, stream});
}

MIXCCL_API mixcclResult_t mixcclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                         mixcclDataType_t datatype, mixcclComm_t comm,
                                         mixcclStream_t stream) {
  return enterCollective(comm, {CollKind::AlltoAll, sendbuff, recvbuff, count, datatype, mixcclSum, -1, stream});
}

MIXCCL_API mixcclResult_t mixcclGather(const void* sendbuff, void* recvbuff, size_t count,
                                       mixcclDataType_t datatype, int root, mixcclComm_t comm,
                                       mixcclStream_t stream) {
  return enterCollective(comm, {CollKind::Gather, sendbuff, recvbuff, count, datatype, mixcclSum, root, stream});
}

MIXCCL_API mixcclResult_t mixcclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                        mixcclDataType_t datatype, int root, mixcclComm_t comm,
                                        mixcclStream_t stream) {
  return enterCollective(comm, {CollKind::Scatter, sendbuff, recvbuff, count, datatype, mixcclSum, root, stream});
}

MIXCCL_API mixcclResult_t mixcclSend(const void* sendbuff, size_t count, mixcclDataType_t datatype,
                                     int peer, mixcclComm_t comm, mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclSend", comm,
               pointToPoint("mixcclSend", WorkItem::Kind::Send, sendbuff, count, datatype, peer,
                            ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclRecv(void* recvbuff, size_t count, mixcclDataType_t datatype,
                                     int peer, mixcclComm_t comm, mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclRecv", comm,
               pointToPoint("mixcclRecv", WorkItem::Kind::Recv, recvbuff, count, datatype, peer,
                            ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclGroupStart(void) { return groupStart(); }
MIXCCL_API mixcclResult_t mixcclGroupEnd(void) { return groupEnd(); }
