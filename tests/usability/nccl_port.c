/* A program written against NCCL's API, not mixccl's. The build renames it exactly as the README
 * says a port is done (every "nccl" -> "mixccl", "NCCL" -> "MIXCCL", sed) and compiles and runs
 * the result against mixccl.h: if a name below had no mixccl twin, the README's claim would be
 * false and this test would not compile. What does not port by the rename is listed in the
 * README ("Porting from NCCL") and deliberately absent here.
 * One process, one rank, host memory (stream NULL). */
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    ncclResult_t r_ = (call);                                                         \
    if (r_ != ncclSuccess) {                                                          \
      fprintf(stderr, "%s: %s (%s)\n", #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(void) {
  int version = 0;
  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE || NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH) != version)
    return 2;
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.commName = "nccl_port";
  ncclComm_t comm;
  CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  int n = 0, rank = -1, device = 0;
  CHECK(ncclCommCount(comm, &n));
  CHECK(ncclCommUserRank(comm, &rank));
  (void)device; /* ncclCommCuDevice is an exception (README) */
  if (n != 1 || rank != 0) return 3;

  float f[4] = {1, 2, 3, 4}, g[4];
  double d = 2;
  int i32 = 7;
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(f, g, 4, ncclFloat, ncclSum, comm, NULL));
  CHECK(ncclAllReduce(&d, &d, 1, ncclFloat64, ncclProd, comm, NULL));
  CHECK(ncclAllReduce(&i32, &i32, 1, ncclInt32, ncclMax, comm, NULL));
  CHECK(ncclGroupEnd());
  CHECK(ncclBroadcast(f, g, 4, ncclFloat32, 0, comm, NULL));
  CHECK(ncclReduce(f, g, 4, ncclFloat, ncclMin, 0, comm, NULL));
  CHECK(ncclAllGather(f, g, 4, ncclFloat, comm, NULL));
  CHECK(ncclReduceScatter(f, g, 4, ncclFloat, ncclAvg, comm, NULL));
  CHECK(ncclGroupStart());
  CHECK(ncclSend(f, 4, ncclFloat, 0, comm, NULL));
  CHECK(ncclRecv(g, 4, ncclFloat, 0, comm, NULL));
  CHECK(ncclGroupEnd());
  if (memcmp(f, g, sizeof(f)) != 0 || d != 2 || i32 != 7) return 4;
  {
    ncclDataType_t types[] = {ncclInt8, ncclChar, ncclUint8, ncclInt, ncclUint32, ncclInt64,
                              ncclUint64, ncclFloat16, ncclHalf, ncclDouble, ncclBfloat16,
                              ncclFloat8e4m3, ncclFloat8e5m2};
    if ((int)(sizeof(types) / sizeof(types[0])) > ncclNumTypes + 2) return 5;
  }
  ncclComm_t sub = NULL, none = NULL;
  CHECK(ncclCommSplit(comm, 0, 0, &sub, NULL));
  CHECK(ncclCommSplit(comm, NCCL_SPLIT_NOCOLOR, 0, &none, NULL));
  if (sub == NULL || none != NULL) return 6;
  ncclResult_t async = ncclInProgress;
  CHECK(ncclCommGetAsyncError(comm, &async));
  if (async != ncclSuccess) return 7;
  CHECK(ncclCommFinalize(sub));
  CHECK(ncclCommDestroy(sub));
  CHECK(ncclCommFinalize(comm));
  CHECK(ncclCommDestroy(comm));

  ncclComm_t comms[1];
  CHECK(ncclCommInitAll(comms, 1, NULL));
  CHECK(ncclCommAbort(comms[0]));
  ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  ncclResult_t codes[] = {ncclSystemError, ncclInternalError, ncclInvalidArgument,
                          ncclInvalidUsage, ncclRemoteError};
  (void)ops;
  (void)codes;
  printf("port test: the program ran after the rename (version %d, %d ops)\n", version,
         (int)ncclNumOps);
  return 0;
}
