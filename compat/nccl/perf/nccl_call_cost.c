/* What the shim adds to a call, counted, not timed: one rank calls ncclAllReduce N times on
 * COUNT floats. Run under callgrind, the inclusive instructions of ncclAllReduce (the shim) minus
 * those of mixcclAllReduce (the library underneath) are the shim's own cost
 * (compat/nccl/tests/check_call_cost.sh, docs/nccl-compat.md "Performance").
 *   nccl_call_cost N COUNT */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: nccl_call_cost CALLS COUNT\n");
    return 2;
  }
  int calls = atoi(argv[1]);
  size_t count = (size_t)atol(argv[2]);
  ncclUniqueId id;
  ncclComm_t comm;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
    return 1;
  float* buf = calloc(count, sizeof(float));
  for (int i = 0; i < calls; ++i)
    if (ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL) != ncclSuccess) return 1;
  ncclCommDestroy(comm);
  free(buf);
  printf("%d calls of %zu floats\n", calls, count);
  return 0;
}
