/* Shared by the peer benchmarks (MPI, Gloo): command line, size sweep and nccl-tests style table,
 * so that perf/compare parses mixccl's and the peers' outputs the same way. C, for the MPI one. */
#ifndef MIXCCL_PEER_TABLE_H_
#define MIXCCL_PEER_TABLE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PEER_SENDRECV: each rank sends to rank+1 and receives from rank-1 (sendrecv_perf's pattern;
 * busbw = algbw). The MPI peer runs it; Gloo's refuses it. */
enum peer_coll { PEER_ALLREDUCE = 0, PEER_ALLGATHER = 1, PEER_REDUCESCATTER = 2, PEER_SENDRECV = 3 };

struct peer_args {
  enum peer_coll coll; /* -C allreduce|allgather|reducescatter|sendrecv */
  size_t min_bytes, max_bytes, step_bytes, step_factor; /* -b -e -i -f */
  int iters, warmup, check;                             /* -n -w -c */
  const char* algo;                                     /* -A (Gloo only) */
  const char* store;                                    /* -S (Gloo only) */
};

/* Returns 0, or -1 after printing a message (usage on stderr). */
int peer_parse_args(int argc, char** argv, struct peer_args* a, const char* extra_usage);
const char* peer_coll_name(enum peer_coll c);

/* Float32 element counts of one size, as the mixccl perf tools compute them (nccl-tests' rules):
 * param = count argument; send/recv = buffer sizes in elements. */
void peer_counts(enum peer_coll c, size_t bytes, int nranks, size_t* param, size_t* send,
                 size_t* recv);
/* algbw and busbw (GB/s) of one measurement. */
void peer_bw(enum peer_coll c, size_t param, int nranks, double sec, double* alg, double* bus);

/* Next size of the sweep, or 0 with *done set at the end. */
size_t peer_next_size(const struct peer_args* a, size_t size, int* done);
/* The largest send or receive buffer of the whole sweep, in float32 elements (allocate once). */
size_t peer_max_elems(const struct peer_args* a, int nranks);

void peer_print_header(const char* banner, const struct peer_args* a, int nranks);
void peer_print_row(enum peer_coll c, size_t param, size_t send, size_t recv, const double us[2],
                    const double alg[2], const double bus[2], const int64_t wrong[2]);
void peer_print_footer(int errors, double avg_bus);

/* Exact test data for float32 sum: value of element i of rank r, and the expected sum. */
float peer_value(int rank, size_t i);
float peer_sum(int nranks, size_t i);

#ifdef __cplusplus
}
#endif

#endif
