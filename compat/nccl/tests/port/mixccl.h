/* mixccl's test programs, ported to NCCL: found before include/mixccl.h on the include path of
 * the shim's tests, it turns every mixccl name those programs use into NCCL's (the reverse of
 * the README's "Porting from NCCL"), so tests/multirank/collective_matrix.c runs unchanged over
 * the NCCL API, on the shim, compiled against the real nccl.h.
 * What NCCL lacks: mixcclCommInspect (the --expect-* options) fails; a per-rank adaptor
 * (--adaptors) cannot travel in ncclConfig_t, so ranks get theirs from MIXCCL_ADAPTOR set by
 * the launcher (mixcclrun --adaptors), and the matrix's --adaptors is refused. */
#ifndef MIXCCL_SHIM_TEST_PORT_H_
#define MIXCCL_SHIM_TEST_PORT_H_

#include <nccl.h>
#include <stddef.h>
#include <stdio.h>

#define mixcclComm_t ncclComm_t
#define mixcclUniqueId ncclUniqueId
#define mixcclResult_t ncclResult_t
#define mixcclDataType_t ncclDataType_t
#define mixcclRedOp_t ncclRedOp_t
#define mixcclStream_t cudaStream_t
#define mixcclSuccess ncclSuccess
#define mixcclInvalidArgument ncclInvalidArgument
#define mixcclInvalidUsage ncclInvalidUsage
#define mixcclInt8 ncclInt8
#define mixcclUint8 ncclUint8
#define mixcclInt32 ncclInt32
#define mixcclUint32 ncclUint32
#define mixcclInt64 ncclInt64
#define mixcclUint64 ncclUint64
#define mixcclFloat16 ncclFloat16
#define mixcclFloat32 ncclFloat32
#define mixcclFloat64 ncclFloat64
#define mixcclBfloat16 ncclBfloat16
#define mixcclFloat8e4m3 ncclFloat8e4m3
#define mixcclFloat8e5m2 ncclFloat8e5m2
#define mixcclNumTypes ncclNumTypes
#define mixcclSum ncclSum
#define mixcclProd ncclProd
#define mixcclMax ncclMax
#define mixcclMin ncclMin
#define mixcclAvg ncclAvg
#define mixcclNumOps ncclNumOps
#define mixcclGetUniqueId ncclGetUniqueId
#define mixcclCommInitRank ncclCommInitRank
#define mixcclCommDestroy ncclCommDestroy
#define mixcclGetErrorString ncclGetErrorString
#define mixcclGetLastError ncclGetLastError
#define mixcclAllReduce ncclAllReduce
#define mixcclBroadcast ncclBroadcast
#define mixcclReduce ncclReduce
#define mixcclAllGather ncclAllGather
#define mixcclReduceScatter ncclReduceScatter
#define mixcclAlltoAll ncclAlltoAll
#define mixcclGather ncclGather
#define mixcclScatter ncclScatter
#define mixcclSend ncclSend
#define mixcclRecv ncclRecv
#define mixcclGroupStart ncclGroupStart
#define mixcclGroupEnd ncclGroupEnd

/* The harness's config: NCCL's netName; the adaptor has no NCCL field. */
typedef struct {
  const char* adaptor;
  const char* netName;
} mixcclConfig_t;
#define MIXCCL_CONFIG_INITIALIZER {NULL, NULL}

static inline ncclResult_t mixcclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                                    int rank, mixcclConfig_t* c) {
  if (c->adaptor) {
    fprintf(stderr, "a per-rank adaptor cannot be passed through ncclConfig_t: run the ranks "
                    "under mixcclrun --adaptors instead\n");
    return ncclInvalidUsage;
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.netName = c->netName;
  return ncclCommInitRankConfig(comm, nranks, id, rank, &config);
}

static inline ncclResult_t mixcclCommInspect(ncclComm_t comm, const char* key, char* value,
                                             size_t size) {
  (void)comm, (void)key, (void)value, (void)size;
  fprintf(stderr, "mixcclCommInspect has no NCCL counterpart: --expect-* cannot run on the shim\n");
  return ncclInvalidUsage;
}

#endif
