/* MPI peer benchmark for perf/compare: MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block
 * and MPI_Sendrecv (to rank+1, from rank-1: sendrecv_perf's pattern; in place:
 * MPI_Sendrecv_replace, timed but not checked, as nccl-tests and sendrecv_perf do)
 * on float32 (sum), timed like the mixccl perf tools (sync, barrier, n timed iterations, average
 * of the ranks' times) and printed in the same table. In-place uses MPI_IN_PLACE.
 *
 *   mpirun -np 2 --mca btl tcp,self --mca pml ob1 mpi_coll_perf -C allreduce -b 1M -e 64M -f 2 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer_table.h"

static int g_rank, g_n;

static void run(enum peer_coll c, int in_place, float* send, float* recv, size_t param) {
  int cnt = (int)param;
  switch (c) {
    case PEER_ALLREDUCE:
      MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case PEER_ALLGATHER:
      MPI_Allgather(in_place ? MPI_IN_PLACE : send, cnt, MPI_FLOAT, recv, cnt, MPI_FLOAT,
                    MPI_COMM_WORLD);
      break;
    case PEER_REDUCESCATTER:
      /* in place: the input is the receive buffer (n*param elements), result at its start */
      MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, cnt, MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
      break;
    case PEER_SENDRECV:
      if (in_place)
        MPI_Sendrecv_replace(recv, cnt, MPI_FLOAT, (g_rank + 1) % g_n, 0, (g_rank - 1 + g_n) % g_n,
                             0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      else
        MPI_Sendrecv(send, cnt, MPI_FLOAT, (g_rank + 1) % g_n, 0, recv, cnt, MPI_FLOAT,
                     (g_rank - 1 + g_n) % g_n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      break;
  }
}

/* Fills the input, runs once and counts wrong elements over all ranks. */
static long long check(enum peer_coll c, int in_place, float* send, float* recv, size_t param,
                       size_t nsend, size_t nrecv) {
  if (c == PEER_SENDRECV && in_place) return 0;
  float* in = in_place ? recv : send;
  for (size_t i = 0; i < nrecv; ++i) recv[i] = -1.0f;
  if (c == PEER_ALLGATHER) {
    float* dst = in_place ? recv + (size_t)g_rank * param : send;
    for (size_t i = 0; i < param; ++i) dst[i] = peer_value(g_rank, (size_t)g_rank * param + i);
  } else {
    for (size_t i = 0; i < nsend; ++i) in[i] = peer_value(g_rank, i);
  }
  run(c, in_place, send, recv, param);
  long long wrong = 0;
  size_t n_out = c == PEER_ALLGATHER ? param * (size_t)g_n : param;
  for (size_t i = 0; i < n_out; ++i) {
    float want;
    if (c == PEER_ALLGATHER) want = peer_value((int)(i / (param ? param : 1)), i);
    else if (c == PEER_SENDRECV) want = peer_value((g_rank - 1 + g_n) % g_n, i);
    else if (c == PEER_ALLREDUCE) want = peer_sum(g_n, i);
    else want = peer_sum(g_n, (size_t)g_rank * param + i);
    if (recv[i] != want) ++wrong;
  }
  long long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  struct peer_args a;
  if (peer_parse_args(argc, argv, &a, NULL) != 0) {
    MPI_Finalize();
    return 2;
  }
  size_t max_elems = peer_max_elems(&a, g_n);
  float* send = (float*)calloc(max_elems + 16, sizeof(float));
  float* recv = (float*)calloc(max_elems + 16, sizeof(float));
  if (g_rank == 0) {
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(lib, &len);
    char* nl = strchr(lib, '\n');
    if (nl) *nl = '\0';
    char banner[512];
    snprintf(banner, sizeof(banner), "mpi-coll-perf %s: %s", peer_coll_name(a.coll), lib);
    peer_print_header(banner, &a, g_n);
  }
  int errors = 0;
  double bw_sum = 0;
  int bw_count = 0;
  int done = 0;
  for (size_t s = a.min_bytes; !done; s = peer_next_size(&a, s, &done)) {
    size_t param, ns, nr;
    peer_counts(a.coll, s, g_n, &param, &ns, &nr);
    double us[2], alg[2], bus[2];
    int64_t wrong[2] = {0, 0};
    memset(send, 0, (ns + 1) * sizeof(float));
    memset(recv, 0, (nr > ns ? nr : ns) * sizeof(float) + sizeof(float));
    for (int ip = 0; ip < 2; ++ip) {
      for (int w = 0; w < a.warmup; ++w) run(a.coll, ip, send, recv, param);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int it = 0; it < a.iters; ++it) run(a.coll, ip, send, recv, param);
      double sec = (MPI_Wtime() - t0) / a.iters, avg = 0;
      MPI_Allreduce(&sec, &avg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      avg /= g_n;
      us[ip] = avg * 1e6;
      peer_bw(a.coll, param, g_n, avg, &alg[ip], &bus[ip]);
      if (a.check) wrong[ip] = check(a.coll, ip, send, recv, param, ns, nr);
      if (wrong[ip]) ++errors;
      bw_sum += bus[ip];
      ++bw_count;
    }
    if (g_rank == 0) peer_print_row(a.coll, param, ns, nr, us, alg, bus, wrong);
  }
  if (g_rank == 0) peer_print_footer(errors, bw_count ? bw_sum / bw_count : 0);
  free(send);
  free(recv);
  MPI_Finalize();
  return errors ? 1 : 0;
}
