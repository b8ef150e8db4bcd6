// Collectives, point-to-point and groups: straight to mixccl, which takes NCCL's arguments.
// Host buffers run with a NULL stream on mixccl's host path; on the nccl adaptor the stream is
// the caller's cudaStream_t (mixccl passes it to NCCL, or stages device memory across domains
// in stream order, docs/adaptors.md).
#include "shim.h"

using namespace nccl_shim;

namespace {

static_assert(ncclInt8 == (int)mixcclInt8 && ncclUint8 == (int)mixcclUint8 &&
                  ncclInt32 == (int)mixcclInt32 && ncclUint32 == (int)mixcclUint32 &&
                  ncclInt64 == (int)mixcclInt64 && ncclUint64 == (int)mixcclUint64 &&
                  ncclFloat16 == (int)mixcclFloat16 && ncclFloat32 == (int)mixcclFloat32 &&
                  ncclFloat64 == (int)mixcclFloat64 && ncclBfloat16 == (int)mixcclBfloat16 &&
                  ncclFloat8e4m3 == (int)mixcclFloat8e4m3 &&
                  ncclFloat8e5m2 == (int)mixcclFloat8e5m2 && ncclNumTypes == (int)mixcclNumTypes,
              "mixccl's datatypes must have NCCL's values");
// Ops made by ncclRedOpCreatePreMulSum are mixccl's (numbered from mixcclNumOps like NCCL's).
static_assert(ncclSum == (int)mixcclSum && ncclProd == (int)mixcclProd &&
                  ncclMax == (int)mixcclMax && ncclMin == (int)mixcclMin &&
                  ncclAvg == (int)mixcclAvg && ncclNumOps == (int)mixcclNumOps,
              "mixccl's reduction ops must have NCCL's values");

mixcclDataType_t type(ncclDataType_t t) { return static_cast<mixcclDataType_t>(t); }
mixcclRedOp_t op(ncclRedOp_t o) { return static_cast<mixcclRedOp_t>(o); }

}  // namespace

NCCL_SHIM_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t o, ncclComm_t comm,
                                         cudaStream_t stream) {
  return forward(mixcclAllReduce(sendbuff, recvbuff, count, type(datatype), op(o), inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclAllReduce)

NCCL_SHIM_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, int root, ncclComm_t comm,
                                         cudaStream_t stream) {
  return forward(mixcclBroadcast(sendbuff, recvbuff, count, type(datatype), root, inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclBroadcast)

// The in-place broadcast of NCCL's first API.
NCCL_SHIM_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                     ncclComm_t comm, cudaStream_t stream) {
  return forward(mixcclBroadcast(buff, buff, count, type(datatype), root, inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclBcast)

NCCL_SHIM_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclRedOp_t o, int root,
                                      ncclComm_t comm, cudaStream_t stream) {
  return forward(mixcclReduce(sendbuff, recvbuff, count, type(datatype), op(o), root, inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclReduce)

NCCL_SHIM_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         ncclDataType_t datatype, ncclComm_t comm,
                                         cudaStream_t stream) {
  return forward(mixcclAllGather(sendbuff, recvbuff, sendcount, type(datatype), inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclAllGather)

NCCL_SHIM_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff,
                                             size_t recvcount, ncclDataType_t datatype,
                                             ncclRedOp_t o, ncclComm_t comm, cudaStream_t stream) {
  return forward(mixcclReduceScatter(sendbuff, recvbuff, recvcount, type(datatype), op(o), inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclReduceScatter)

NCCL_SHIM_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, ncclComm_t comm,
                                        cudaStream_t stream) {
  return forward(mixcclAlltoAll(sendbuff, recvbuff, count, type(datatype), inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclAlltoAll)

NCCL_SHIM_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  return forward(mixcclGather(sendbuff, recvbuff, count, type(datatype), root, inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclGather)

NCCL_SHIM_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream) {
  return forward(mixcclScatter(sendbuff, recvbuff, count, type(datatype), root, inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclScatter)

NCCL_SHIM_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                    int peer, ncclComm_t comm, cudaStream_t stream) {
  return forward(mixcclSend(sendbuff, count, type(datatype), peer, inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclSend)

NCCL_SHIM_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype,
                                    int peer, ncclComm_t comm, cudaStream_t stream) {
  return forward(mixcclRecv(recvbuff, count, type(datatype), peer, inner(comm), stream));
}
NCCL_SHIM_PROFILING_ALIAS(ncclRecv)

NCCL_SHIM_API ncclResult_t ncclGroupStart() { return forward(mixcclGroupStart()); }
NCCL_SHIM_PROFILING_ALIAS(ncclGroupStart)

NCCL_SHIM_API ncclResult_t ncclGroupEnd() { return forward(mixcclGroupEnd()); }
NCCL_SHIM_PROFILING_ALIAS(ncclGroupEnd)
