/* perf/scale_bench's Open MPI peer: the same numbers (scale_bench_stats.h) for MPI_Init and
 * MPI_Allreduce, one line of medians from rank 0.
 *   mpirun -np <n> --oversubscribe --mca btl self,tcp scale_bench_mpi [iterations] */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scale_bench_stats.h"

int main(int argc, char** argv) {
  struct ScaleStats s;
  memset(&s, 0, sizeof(s));
  double t0 = scaleNow();
  MPI_Init(&argc, &argv);
  s.initS = scaleNow() - t0;
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  s.rank = rank;
  scaleCountFds(&s.fdsInit, &s.socketsInit);
  const int iters = argc > 1 ? atoi(argv[1]) : 50;
  float small[2] = {1, 2}, smallOut[2];
  double* lat = (double*)malloc(sizeof(double) * iters);
  for (int i = 0; i < 5; ++i) MPI_Allreduce(small, smallOut, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < iters; ++i) {
    double a = scaleNow();
    MPI_Allreduce(small, smallOut, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    lat[i] = scaleNow() - a;
  }
  s.latencyUs = scaleMedian(lat, iters) * 1e6;
  const int count = (1 << 20) / sizeof(float);
  float* big = (float*)calloc(count, sizeof(float));
  MPI_Allreduce(MPI_IN_PLACE, big, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double bw[5];
  for (int i = 0; i < 5; ++i) {
    double a = scaleNow();
    MPI_Allreduce(MPI_IN_PLACE, big, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    bw[i] = scaleNow() - a;
  }
  s.busGBs = 2.0 * (n - 1) / n * (double)count * sizeof(float) / scaleMedian(bw, 5) / 1e9;
  scaleCountFds(&s.fds, &s.sockets);
  s.rssKiB = scaleRssKiB();
  s.shmKiB = scaleShmMappedKiB();
  s.peers = -1;
  struct ScaleStats* all = rank == 0 ? (struct ScaleStats*)calloc(n, sizeof(s)) : NULL;
  MPI_Gather(&s, sizeof(s), MPI_BYTE, all, sizeof(s), MPI_BYTE, 0, MPI_COMM_WORLD);
  /* Rank 0 reads every rank's mappings (one host) while the others wait in the barrier. */
  pid_t me = getpid();
  pid_t* pids = rank == 0 ? (pid_t*)calloc(n, sizeof(pid_t)) : NULL;
  MPI_Gather(&me, sizeof(me), MPI_BYTE, pids, sizeof(me), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    scalePrintSummary(all, n, scaleShmHostKiB(pids, n), "");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
