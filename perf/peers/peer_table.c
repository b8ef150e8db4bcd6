#include "peer_table.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* kNames[] = {"allreduce", "allgather", "reducescatter", "sendrecv"};

const char* peer_coll_name(enum peer_coll c) { return kNames[c]; }

static int parse_size(const char* s, size_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned long long mult = 1;
  switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1ULL << 10; ++end; break;
    case 'M': mult = 1ULL << 20; ++end; break;
    case 'G': mult = 1ULL << 30; ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return -1;
  *out = (size_t)(v * mult);
  return 0;
}

static void usage(const char* prog, const char* extra) {
  fprintf(stderr,
          "usage: %s -C allreduce|allgather|reducescatter|sendrecv [-b min] [-e max] [-f factor | -i step]\n"
          "          [-n iters] [-w warmup] [-c 0|1]%s\n"
          "Float32 (sum) collectives; prints the mixccl perf tools' table.\n",
          prog, extra ? extra : "");
}

int peer_parse_args(int argc, char** argv, struct peer_args* a, const char* extra_usage) {
  memset(a, 0, sizeof(*a));
  a->coll = PEER_ALLREDUCE;
  a->min_bytes = a->max_bytes = 32u << 20;
  a->step_bytes = 1u << 20;
  a->step_factor = 1;
  a->iters = 20;
  a->warmup = 5;
  a->check = 1;
  for (int i = 1; i < argc; ++i) {
    const char* o = argv[i];
    if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
      usage(argv[0], extra_usage);
      exit(0);
    }
    if (o[0] != '-' || o[1] == '\0' || o[2] != '\0' || i + 1 >= argc) {
      fprintf(stderr, "%s: bad argument '%s'\n", argv[0], o);
      usage(argv[0], extra_usage);
      return -1;
    }
    const char* v = argv[++i];
    int bad = 0;
    switch (o[1]) {
      case 'C':
        if (strcmp(v, "allreduce") == 0) a->coll = PEER_ALLREDUCE;
        else if (strcmp(v, "allgather") == 0) a->coll = PEER_ALLGATHER;
        else if (strcmp(v, "reducescatter") == 0) a->coll = PEER_REDUCESCATTER;
        else if (strcmp(v, "sendrecv") == 0) a->coll = PEER_SENDRECV;
        else bad = 1;
        break;
      case 'b': bad = parse_size(v, &a->min_bytes); break;
      case 'e': bad = parse_size(v, &a->max_bytes); break;
      case 'i': bad = parse_size(v, &a->step_bytes) || a->step_bytes == 0; break;
      case 'f': a->step_factor = (size_t)atol(v); bad = a->step_factor < 1; break;
      case 'n': a->iters = atoi(v); bad = a->iters < 1; break;
      case 'w': a->warmup = atoi(v); bad = a->warmup < 0; break;
      case 'c': a->check = atoi(v); bad = a->check < 0; break;
      case 'A': a->algo = v; break;
      case 'S': a->store = v; break;
      default: bad = 1;
    }
    if (bad) {
      fprintf(stderr, "%s: bad value '%s' for %s\n", argv[0], v, o);
      usage(argv[0], extra_usage);
      return -1;
    }
  }
  if (a->min_bytes > a->max_bytes) {
    fprintf(stderr, "%s: min size > max size\n", argv[0]);
    return -1;
  }
  return 0;
}

void peer_counts(enum peer_coll c, size_t bytes, int nranks, size_t* param, size_t* send,
                 size_t* recv) {
  size_t count = bytes / sizeof(float);
  if (c == PEER_ALLREDUCE || c == PEER_SENDRECV) {
    *param = *send = *recv = count;
    return;
  }
  size_t base = (count / (size_t)nranks) & ~(size_t)3; /* 16-byte chunks, as nccl-tests */
  *param = base;
  if (c == PEER_ALLGATHER) {
    *send = base;
    *recv = base * (size_t)nranks;
  } else {
    *send = base * (size_t)nranks;
    *recv = base;
  }
}

void peer_bw(enum peer_coll c, size_t param, int nranks, double sec, double* alg, double* bus) {
  double bytes =
      (double)param * sizeof(float) * (c == PEER_ALLREDUCE || c == PEER_SENDRECV ? 1 : nranks);
  *alg = sec > 0 ? bytes / 1e9 / sec : 0;
  double f = c == PEER_SENDRECV    ? 1.0
             : c == PEER_ALLREDUCE ? 2.0 * (nranks - 1) / nranks
                                   : (double)(nranks - 1) / nranks;
  *bus = *alg * f;
}

size_t peer_next_size(const struct peer_args* a, size_t size, int* done) {
  size_t next = a->step_factor > 1 ? (size ? size * a->step_factor : 1) : size + a->step_bytes;
  *done = next > a->max_bytes || next <= size;
  return *done ? 0 : next;
}

size_t peer_max_elems(const struct peer_args* a, int nranks) {
  size_t max_elems = 0;
  int done = 0;
  for (size_t s = a->min_bytes; !done; s = peer_next_size(a, s, &done)) {
    size_t p, ns, nr;
    peer_counts(a->coll, s, nranks, &p, &ns, &nr);
    if (ns > max_elems) max_elems = ns;
    if (nr > max_elems) max_elems = nr;
  }
  return max_elems;
}

static void field(char* out, double v, int width) {
  for (int d = 2; d >= 0; --d) {
    if (snprintf(out, 32, "%*.*f", width, d, v) <= width) return;
  }
  snprintf(out, 32, "%*.1e", width, v);
}

void peer_print_header(const char* banner, const struct peer_args* a, int nranks) {
  printf("# %s\n", banner);
  printf("# nThread 1 nGpus 1 nRanks %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
         "iters: %d agg iters: 1 validation: %d graph: 0\n",
         nranks, a->min_bytes, a->max_bytes, a->step_factor > 1 ? a->step_factor : a->step_bytes,
         a->step_factor > 1 ? "factor" : "bytes", a->warmup, a->iters, a->check);
  printf("#\n");
  printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place\n",
         "", "", "", "", "");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
         "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
         "busbw", "#wrong");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
         "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  fflush(stdout);
}

void peer_print_row(enum peer_coll c, size_t param, size_t send, size_t recv, const double us[2],
                    const double alg[2], const double bus[2], const int64_t wrong[2]) {
  size_t bytes = (send > recv ? send : recv) * sizeof(float);
  printf("%12zu  %12zu  %8s  %6s  %6d", bytes, param, "float",
         c == PEER_ALLGATHER || c == PEER_SENDRECV ? "none" : "sum", -1);
  for (int p = 0; p < 2; ++p) {
    char t[32], a[32], b[32];
    field(t, us[p], 7);
    field(a, alg[p], 6);
    field(b, bus[p], 6);
    printf("  %7s  %6s  %6s  %6lld", t, a, b, (long long)wrong[p]);
  }
  printf("\n");
  fflush(stdout);
}

void peer_print_footer(int errors, double avg_bus) {
  printf("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
  printf("# %-20s : %g \n", "Avg bus bandwidth", avg_bus);
  printf("#\n");
  fflush(stdout);
}

float peer_value(int rank, size_t i) { return (float)((rank + 1) * 3 + (int)(i % 61)); }

float peer_sum(int nranks, size_t i) {
  float s = 0;
  for (int r = 0; r < nranks; ++r) s += peer_value(r, i);
  return s;
}
