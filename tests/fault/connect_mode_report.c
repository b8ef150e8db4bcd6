/* One rank of a job started by mixcclrun that reports the connection mode its communicator
 * applied (mixcclCommInspect "connect" and "connect_why") after one AllReduce, or why init
 * failed. Settings that must differ between ranks are given per rank on the command line and
 * put into this process's environment before mixccl reads it:
 *
 *   connect_mode_report [--connect R=V]... [--rdma R]...
 *
 * --connect R=V  MIXCCL_CONNECT of rank R (unset: removed; any other value is set as given)
 * --rdma R       rank R's host has an active RDMA port (MIXCCL_TEST_RDMA_ACTIVE=1), every
 *                other rank's has none (=0) once one --rdma is given
 *
 * Prints "rank R: connect MODE (WHY)" and exits 0, or "rank R: CommInitRank failed: ERROR (MESSAGE)"
 * and exits 1 (tests/fault/CMakeLists.txt matches every rank's line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixccl.h"

int main(int argc, char** argv) {
  const char* r = getenv("MIXCCL_RANK");
  const char* n = getenv("MIXCCL_NRANKS");
  if (!r || !n || !getenv("MIXCCL_COMM_ID")) {
    fprintf(stderr, "connect_mode_report: run it under mixcclrun\n");
    return 2;
  }
  int rank = atoi(r), nranks = atoi(n), anyRdma = 0, rdmaHere = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--connect") && i + 1 < argc) {
      const char* v = strchr(argv[++i], '=');
      if (!v) return 2;
      if (atoi(argv[i]) != rank) continue;
      if (!strcmp(v + 1, "unset")) unsetenv("MIXCCL_CONNECT");
      else setenv("MIXCCL_CONNECT", v + 1, 1);
    } else if (!strcmp(argv[i], "--rdma") && i + 1 < argc) {
      anyRdma = 1;
      rdmaHere |= atoi(argv[++i]) == rank;
    } else {
      fprintf(stderr, "usage: connect_mode_report [--connect R=V]... [--rdma R]...\n");
      return 2;
    }
  }
  if (anyRdma) setenv("MIXCCL_TEST_RDMA_ACTIVE", rdmaHere ? "1" : "0", 1);

  mixcclUniqueId id;
  mixcclComm_t comm = NULL;
  mixcclResult_t res = mixcclGetUniqueId(&id);
  if (res == mixcclSuccess) res = mixcclCommInitRank(&comm, nranks, id, rank);
  if (res != mixcclSuccess) {
    printf("rank %d: CommInitRank failed: %s (%s)\n", rank, mixcclGetErrorString(res),
           mixcclGetLastError(NULL));
    return 1;
  }
  /* The communicator works in the mode it chose: every rank's value summed. */
  int value = rank + 1;
  res = mixcclAllReduce(&value, &value, 1, mixcclInt32, mixcclSum, comm, NULL);
  char mode[16] = "", why[512] = "";
  if (res == mixcclSuccess) res = mixcclCommInspect(comm, "connect", mode, sizeof(mode));
  if (res == mixcclSuccess) res = mixcclCommInspect(comm, "connect_why", why, sizeof(why));
  int ok = res == mixcclSuccess && value == nranks * (nranks + 1) / 2;
  if (ok) printf("rank %d: connect %s (%s)\n", rank, mode, why);
  else printf("rank %d: FAILED after init: %s (%s), sum %d\n", rank, mixcclGetErrorString(res),
              mixcclGetLastError(comm), value);
  mixcclCommDestroy(comm);
  return ok ? 0 : 1;
}
