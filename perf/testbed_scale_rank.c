/* perf/testbed_scale_rank: one rank of a job started by a launcher (tests/testbed/host_ranks.sh
 * inside testbed.sh, mixcclrun), for the many-host run of docs/scale.md. Times
 * mixcclCommInitRank, counts its descriptors and sockets after init and after the collectives,
 * times 8-byte AllReduces (median) and 1 MiB AllReduces (median, as bus bandwidth), and asks
 * mixcclCommInspect which algorithm each size ran. Prints one line; perf/testbed_scale_bench.sh
 * takes the medians over the ranks.
 *   MIXCCL_RANK=r MIXCCL_NRANKS=n MIXCCL_COMM_ID=... testbed_scale_rank [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixccl.h"
#include "scale_bench_stats.h"

static int rank = -1;

#define CHECK(call)                                                                      \
  do {                                                                                   \
    mixcclResult_t r_ = (call);                                                          \
    if (r_ != mixcclSuccess) {                                                           \
      fprintf(stderr, "rank %d: %s failed: %s\n", rank, #call, mixcclGetLastError(NULL)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static int envInt(const char* name) {
  const char* v = getenv(name);
  if (!v) {
    fprintf(stderr, "testbed_scale_rank: %s is not set (start it with a launcher)\n", name);
    exit(2);
  }
  return atoi(v);
}

int main(int argc, char** argv) {
  rank = envInt("MIXCCL_RANK");
  const int n = envInt("MIXCCL_NRANKS");
  const int iters = argc > 1 ? atoi(argv[1]) : 50;
  mixcclUniqueId id;
  CHECK(mixcclGetUniqueId(&id));
  mixcclComm_t comm;
  double t0 = scaleNow();
  CHECK(mixcclCommInitRank(&comm, n, id, rank));
  const double initS = scaleNow() - t0;
  int fdsInit = 0, socketsInit = 0;
  scaleCountFds(&fdsInit, &socketsInit);

  float small[2] = {1, 2}, smallOut[2];
  double* lat = (double*)malloc(sizeof(double) * iters);
  for (int i = 0; i < 5; ++i)
    CHECK(mixcclAllReduce(small, smallOut, 2, mixcclFloat, mixcclSum, comm, NULL));
  for (int i = 0; i < iters; ++i) {
    double a = scaleNow();
    CHECK(mixcclAllReduce(small, smallOut, 2, mixcclFloat, mixcclSum, comm, NULL));
    lat[i] = scaleNow() - a;
  }
  if (smallOut[0] != (float)n || smallOut[1] != (float)(2 * n)) {
    fprintf(stderr, "rank %d: AllReduce gave %g %g, expected %d %d\n", rank, smallOut[0],
            smallOut[1], n, 2 * n);
    return 1;
  }
  const size_t count = (1 << 20) / sizeof(float);
  float* big = (float*)malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) big[i] = 1;
  float* bigOut = (float*)malloc(count * sizeof(float));
  CHECK(mixcclAllReduce(big, bigOut, count, mixcclFloat, mixcclSum, comm, NULL));
  const int bigIters = 5;
  double bw[5];
  for (int i = 0; i < bigIters; ++i) {
    double a = scaleNow();
    CHECK(mixcclAllReduce(big, bigOut, count, mixcclFloat, mixcclSum, comm, NULL));
    bw[i] = scaleNow() - a;
  }
  if (bigOut[0] != (float)n || bigOut[count - 1] != (float)n) {
    fprintf(stderr, "rank %d: 1 MiB AllReduce gave %g, expected %d\n", rank, bigOut[0], n);
    return 1;
  }
  const double bigS = scaleMedian(bw, bigIters);
  int fds = 0, sockets = 0;
  scaleCountFds(&fds, &sockets);
  const long rssKiB = scaleRssKiB(), shmKiB = scaleShmMappedKiB();
  (void)scalePrintSummary;  /* the single-host bench's summary; this one prints per rank */
  (void)scaleShmHostKiB;
  char peers[32] = "?", algoSmall[64] = "?", algoBig[64] = "?";
  mixcclCommInspect(comm, "connected_peers", peers, sizeof(peers));
  mixcclCommInspect(comm, "algo.allreduce.8", algoSmall, sizeof(algoSmall));
  mixcclCommInspect(comm, "algo.allreduce.1048576", algoBig, sizeof(algoBig));
  /* Every rank has measured before any leaves. */
  CHECK(mixcclAllReduce(small, smallOut, 2, mixcclFloat, mixcclSum, comm, NULL));
  printf("testbed_scale_rank: rank %d of %d init_s %.4f fds_init %d sockets_init %d fds %d "
         "sockets %d peers %s rss_kib %ld shm_kib %ld lat8_us %.1f allreduce1m_ms %.3f busbw_gbs %.4f algo8 %s "
         "algo1m %s\n",
         rank, n, initS, fdsInit, socketsInit, fds, sockets, peers, rssKiB, shmKiB,
         scaleMedian(lat, iters) * 1e6, bigS * 1e3,
         2.0 * (n - 1) / n * (double)(count * sizeof(float)) / bigS / 1e9, algoSmall, algoBig);
  CHECK(mixcclCommDestroy(comm));
  return 0;
}
