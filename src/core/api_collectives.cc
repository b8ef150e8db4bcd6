// The public collective and point-to-point calls: check arguments, then run or record.
#include "algo/algorithms.h"
#include "core/api_support.h"
#include "adaptors/adaptor_loader.h"
#include "core/args.h"
#include "core/collective_dispatch.h"
#include "core/group.h"

using namespace mixccl;

namespace {

Result submitCollective(Comm* comm, const char* fn, const CollDesc& desc, const CollCall& call) {
  WorkItem w;
  w.comm = comm;
  w.name = fn;
  w.kind = WorkItem::Kind::Collective;
  w.run = [comm, call](CollContext& c) { return runCollective(comm, c, call); };
  w.desc = desc;
  return submitWork(std::move(w));
}

Result commonChecks(const char* fn, Comm* comm, mixcclDataType_t type, mixcclStream_t stream) {
  MIXCCL_CHECK(checkCommUsable(fn, comm));
  MIXCCL_CHECK(checkDataType(fn, type));
  // Device adaptors order work on the caller's stream; host memory takes NULL.
  if (comm->adaptor && comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY)
    return mixcclSuccess;
  return checkStream(fn, stream);
}

CollCall makeCall(CollCall::Kind kind, const void* sendbuff, void* recvbuff, size_t count,
                  mixcclDataType_t type, mixcclRedOp_t op, int root, mixcclStream_t stream) {
  return CollCall{kind, sendbuff, recvbuff, count, type, op, root, stream};
}

Result allReduce(const void* sendbuff, void* recvbuff, size_t count, mixcclDataType_t type,
                 mixcclRedOp_t op, Comm* comm, mixcclStream_t stream) {
  const char* fn = "mixcclAllReduce";
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkRedOp(fn, op));
  MIXCCL_CHECK(checkBuffer(fn, "sendbuff", sendbuff, count, 1, type, &bytes));
  MIXCCL_CHECK(checkBuffer(fn, "recvbuff", recvbuff, count, 1, type, &bytes));
  return submitCollective(comm, fn, makeCollDesc(fn, count, type, (int)op, -1),
                          makeCall(CollCall::Kind::AllReduce, sendbuff, recvbuff, count, type, op, -1, stream));
}

Result broadcast(const void* sendbuff, void* recvbuff, size_t count, mixcclDataType_t type,
                 int root, Comm* comm, mixcclStream_t stream) {
  const char* fn = "mixcclBroadcast";
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkRank(fn, "root", root, comm->nranks));
  if (comm->rank == root) MIXCCL_CHECK(checkBuffer(fn, "sendbuff", sendbuff, count, 1, type, &bytes));
  MIXCCL_CHECK(checkBuffer(fn, "recvbuff", recvbuff, count, 1, type, &bytes));
  return submitCollective(comm, fn, makeCollDesc(fn, count, type, -1, root),
                          makeCall(CollCall::Kind::Broadcast, sendbuff, recvbuff, count, type, mixcclSum, root, stream));
}

Result reduce(const void* sendbuff, void* recvbuff, size_t count, mixcclDataType_t type,
              mixcclRedOp_t op, int root, Comm* comm, mixcclStream_t stream) {
  const char* fn = "mixcclReduce";
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkRedOp(fn, op));
  MIXCCL_CHECK(checkRank(fn, "root", root, comm->nranks));
  MIXCCL_CHECK(checkBuffer(fn, "sendbuff", sendbuff, count, 1, type, &bytes));
  if (comm->rank == root) MIXCCL_CHECK(checkBuffer(fn, "recvbuff", recvbuff, count, 1, type, &bytes));
  return submitCollective(comm, fn, makeCollDesc(fn, count, type, (int)op, root),
                          makeCall(CollCall::Kind::Reduce, sendbuff, recvbuff, count, type, op, root, stream));
}

Result allGather(const void* sendbuff, void* recvbuff, size_t count, mixcclDataType_t type,
                 Comm* comm, mixcclStream_t stream) {
  const char* fn = "mixcclAllGather";
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkBuffer(fn, "sendbuff", sendbuff, count, 1, type, &bytes));
  MIXCCL_CHECK(checkBuffer(fn, "recvbuff", recvbuff, count, comm->nranks, type, &bytes));
  return submitCollective(comm, fn, makeCollDesc(fn, count, type, -1, -1),
                          makeCall(CollCall::Kind::AllGather, sendbuff, recvbuff, count, type, mixcclSum, -1, stream));
}

Result reduceScatter(const void* sendbuff, void* recvbuff, size_t count, mixcclDataType_t type,
                     mixcclRedOp_t op, Comm* comm, mixcclStream_t stream) {
  const char* fn = "mixcclReduceScatter";
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkRedOp(fn, op));
  MIXCCL_CHECK(checkBuffer(fn, "sendbuff", sendbuff, count, comm->nranks, type, &bytes));
  MIXCCL_CHECK(checkBuffer(fn, "recvbuff", recvbuff, count, 1, type, &bytes));
  return submitCollective(comm, fn, makeCollDesc(fn, count, type, (int)op, -1),
                          makeCall(CollCall::Kind::ReduceScatter, sendbuff, recvbuff, count, type, op, -1, stream));
}

Result alltoAll(const void* sendbuff, void* recvbuff, size_t count, mixcclDataType_t type,
                Comm* comm, mixcclStream_t stream) {
  const char* fn = "mixcclAlltoAll";
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkBuffer(fn, "sendbuff", sendbuff, count, comm->nranks, type, &bytes));
  MIXCCL_CHECK(checkBuffer(fn, "recvbuff", recvbuff, count, comm->nranks, type, &bytes));
  return submitCollective(comm, fn, makeCollDesc(fn, count, type, -1, -1),
                          makeCall(CollCall::Kind::AlltoAll, sendbuff, recvbuff, count, type, mixcclSum, -1, stream));
}

Result gather(const void* sendbuff, void* recvbuff, size_t count, mixcclDataType_t type, int root,
              Comm* comm, mixcclStream_t stream) {
  const char* fn = "mixcclGather";
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkRank(fn, "root", root, comm->nranks));
  MIXCCL_CHECK(checkBuffer(fn, "sendbuff", sendbuff, count, 1, type, &bytes));
  if (comm->rank == root)
    MIXCCL_CHECK(checkBuffer(fn, "recvbuff", recvbuff, count, comm->nranks, type, &bytes));
  return submitCollective(comm, fn, makeCollDesc(fn, count, type, -1, root),
                          makeCall(CollCall::Kind::Gather, sendbuff, recvbuff, count, type, mixcclSum, root, stream));
}

Result scatter(const void* sendbuff, void* recvbuff, size_t count, mixcclDataType_t type, int root,
               Comm* comm, mixcclStream_t stream) {
  const char* fn = "mixcclScatter";
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkRank(fn, "root", root, comm->nranks));
  if (comm->rank == root)
    MIXCCL_CHECK(checkBuffer(fn, "sendbuff", sendbuff, count, comm->nranks, type, &bytes));
  MIXCCL_CHECK(checkBuffer(fn, "recvbuff", recvbuff, count, 1, type, &bytes));
  return submitCollective(comm, fn, makeCollDesc(fn, count, type, -1, root),
                          makeCall(CollCall::Kind::Scatter, sendbuff, recvbuff, count, type, mixcclSum, root, stream));
}

Result pointToPoint(const char* fn, WorkItem::Kind kind, const void* buf, size_t count,
                    mixcclDataType_t type, int peer, Comm* comm, mixcclStream_t stream) {
  size_t bytes;
  MIXCCL_CHECK(commonChecks(fn, comm, type, stream));
  MIXCCL_CHECK(checkRank(fn, "peer", peer, comm->nranks));
  MIXCCL_CHECK(checkBuffer(fn, "buffer", buf, count, 1, type, &bytes));
  if (comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY &&
      !(comm->domainMap.single() && comm->domainComm))
    return raiseError(mixcclInvalidUsage,
                      "%s: Send/Recv of %s device memory in a job with several domains is not "
                      "supported yet (collectives are; docs/adaptors.md)", fn,
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

MIXCCL_API mixcclResult_t mixcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          mixcclDataType_t datatype, mixcclRedOp_t op,
                                          mixcclComm_t comm, mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclAllReduce", comm,
               allReduce(sendbuff, recvbuff, count, datatype, op, ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                          mixcclDataType_t datatype, int root, mixcclComm_t comm,
                                          mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclBroadcast", comm,
               broadcast(sendbuff, recvbuff, count, datatype, root, ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       mixcclDataType_t datatype, mixcclRedOp_t op, int root,
                                       mixcclComm_t comm, mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclReduce", comm,
               reduce(sendbuff, recvbuff, count, datatype, op, root, ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          mixcclDataType_t datatype, mixcclComm_t comm,
                                          mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclAllGather", comm,
               allGather(sendbuff, recvbuff, sendcount, datatype, ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclReduceScatter(const void* sendbuff, void* recvbuff,
                                              size_t recvcount, mixcclDataType_t datatype,
                                              mixcclRedOp_t op, mixcclComm_t comm,
                                              mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclReduceScatter", comm,
               reduceScatter(sendbuff, recvbuff, recvcount, datatype, op, ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                         mixcclDataType_t datatype, mixcclComm_t comm,
                                         mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclAlltoAll", comm,
               alltoAll(sendbuff, recvbuff, count, datatype, ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclGather(const void* sendbuff, void* recvbuff, size_t count,
                                       mixcclDataType_t datatype, int root, mixcclComm_t comm,
                                       mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclGather", comm,
               gather(sendbuff, recvbuff, count, datatype, root, ref.get(), stream));
}

MIXCCL_API mixcclResult_t mixcclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                        mixcclDataType_t datatype, int root, mixcclComm_t comm,
                                        mixcclStream_t stream) {
  MIXCCL_ENTRY("mixcclScatter", comm,
               scatter(sendbuff, recvbuff, count, datatype, root, ref.get(), stream));
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
