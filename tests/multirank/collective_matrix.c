/* The collective matrix: every collective x every datatype x every reduction op x counts
 * {0, 1, prime, larger than a pipelining chunk, several MiB} x in-place and out-of-place, run
 * by N forked ranks over loopback through the public C API only.
 *
 * Inputs are chosen so that every partial result is exactly representable in every type (fp8
 * included), so results are compared bit for bit, and so that no two ranks contribute the same
 * data: a collective that used one rank's contribution in place of another's, or put a block at
 * another rank's place, gives a different result.
 *
 * usage: collective_matrix NRANKS [--coll a,b,...] [--quick] [--timeout S] [--adaptors a,b,...]
 *                          [--net NAME] [--expect-... (expect_choice.h)] [--corrupt]
 *                          [--expect-caught N]
 * --adaptors gives each rank its device adaptor (item r for rank r), so one job mixes domains;
 * --net sets config.netName on every rank. --expect-transport, --expect-algo, --expect-domains
 * and --expect-adaptors check through mixcclCommInspect that the library chose what the test
 * asked for (an unknown setting must not silently run the default); every rank checks them
 * before the collectives.
 * Self-tests of the checker: --corrupt flips one byte of every non-empty AllReduce result;
 * --expect-caught N then makes the run pass only if every rank caught exactly N planted faults
 * (the corrupted results with --corrupt, else the unmet --expect-* choices) and nothing else
 * failed. Without --expect-caught any failure fails the run.
 * Built with MATRIX_UNDER_MPI it runs as an MPI program under mpirun instead of forking: each
 * process is one rank (every process calls MPI_Init, which Open MPI needs when some ranks use
 * the mpi adaptor), the unique id travels by MPI_Bcast. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect_choice.h"
#include "rank_harness.h"
#include "value_codec.h"

/* Every input pattern repeats with this period in the element index (a multiple of the 11, 22
 * and 77 the patterns below use), so buffers are filled and checked by tiling one period. */
#define PERIOD 4620
/* Ranks sit at distinct phases mod 11 (at most 8 ranks run the matrix; Max/Min, Sum and the
 * phases below keep every rank's input at every element apart from every other rank's). */
#define PHASES 11
/* Blocks of the data-movement collectives are told apart by an id (a rank, or a (from, to) pair
 * of AlltoAll, < 64): up to 77 ids hold distinct values at every element. */
#define BLOCK_IDS 77

enum Coll { ALLREDUCE, REDUCE, REDUCESCATTER, ALLGATHER, BROADCAST, ALLTOALL, GATHER, SCATTER, SENDRECV, NCOLL };
static const char* collNames[NCOLL] = {"allreduce", "reduce", "reducescatter", "allgather",
                                       "broadcast", "alltoall", "gather", "scatter", "sendrecv"};
static const char* opNames[mixcclNumOps] = {"sum", "prod", "max", "min", "avg"};

typedef struct {
  int enabled[NCOLL];
  int quick;
  ChoiceExpectations expect;
  long expectCaught; /* -1: no self-test; else the planted faults every rank must catch */
} Options;

static int gCorrupt;

static int isFp8(mixcclDataType_t t) { return t == mixcclFloat8e4m3 || t == mixcclFloat8e5m2; }

/* Avg divides the sum once at the end, so for floats the sum must be a multiple of nranks (the
 * quotient is then exact). Every rank but the last gives its phase; the last tops the sum up to a
 * multiple of nranks with the first value from its own phase on that no other rank holds at this
 * element (sums stay below 128, exact in bf16). fp8 cannot hold distinct values of all ranks
 * with exact sums: there the one rank at phase 0 gives nranks or 2 nranks (average 1 or 2), the
 * others 0, so each rank's sequence is still its own. Integer Avg truncates: phases suffice. */
static double avgInput(mixcclDataType_t t, int rank, int nranks, size_t i) {
  int phase = (int)((rank + i) % PHASES);
  if (isFp8(t)) return phase == 0 ? (double)(nranks * (1 + (int)(i % 2))) : 0;
  if (!isFloatType(t) || rank < nranks - 1) return phase;
  int others = 0;
  for (int r = 0; r < nranks - 1; ++r) others += (int)((r + i) % PHASES);
  for (int v = phase;; ++v) {
    int held = 0;
    for (int r = 0; r < nranks - 1; ++r) held |= (int)((r + i) % PHASES) == v;
    if (!held && (others + v) % nranks == 0) return v;
  }
}

/* Input of rank for a reduction op (op >= 0), or of block id for a data-movement collective
 * (op < 0). */
static double inputValue(int op, mixcclDataType_t t, int rank, int nranks, size_t i) {
  int phase = (int)((rank + i) % PHASES);
  switch (op) {
    case mixcclSum:
      /* fp8: a window of 1s at the rank's phase, so a sum of 8 ranks stays <= 8 (exact). */
      if (isFp8(t)) return phase < 5 ? 1 : 0;
      return (double)((3 * rank + i) % PHASES);
    case mixcclProd: return phase == 0 ? 2 : phase == 1 ? 3 : 1; /* products <= 6 */
    case mixcclMax:
    case mixcclMin: {
      int v = (int)((rank * 5 + i * 3) % PHASES);
      return isSignedType(t) ? v - 5 : v;
    }
    case mixcclAvg: return avgInput(t, rank, nranks, i);
    /* Neighbouring elements are 38 ids apart, so a block shifted by one element does not look
     * like the next rank's block. */
    default: return distinctValue(t, (int)((rank + 38 * i) % BLOCK_IDS));
  }
}

static double expectedReduction(int op, mixcclDataType_t t, int nranks, size_t i) {
  double acc = inputValue(op, t, 0, nranks, i);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(op, t, r, nranks, i);
    switch (op) {
      case mixcclProd: acc *= v; break;
      case mixcclMax: acc = v > acc ? v : acc; break;
      case mixcclMin: acc = v < acc ? v : acc; break;
      default: acc += v; break;
    }
  }
  if (op == mixcclAvg) acc = isFloatType(t) ? acc / nranks : (double)((long long)acc / nranks);
  return acc;
}

/* One period of a pattern, encoded in type t. */
typedef struct {
  char* bytes;
  size_t es;
} Pattern;

/* Each pattern is built once per rank process and kept (a rank has one nranks): building them
 * for every call would cost more than the collectives. Index 0 of the op is data movement. */
static Pattern gInputPatterns[mixcclNumOps + 1][mixcclNumTypes][BLOCK_IDS];
static Pattern gExpectedPatterns[mixcclNumOps][mixcclNumTypes];

/* Input of rank (op >= 0) or of block id (op < 0, id < BLOCK_IDS). */
static Pattern inputPattern(int op, mixcclDataType_t t, int id, int nranks) {
  Pattern* p = &gInputPatterns[op + 1][t][id];
  if (!p->bytes) {
    p->bytes = malloc(PERIOD * typeSize(t));
    p->es = typeSize(t);
    for (size_t i = 0; i < PERIOD; ++i) storeValue(p->bytes, i, t, inputValue(op, t, id, nranks, i));
  }
  return *p;
}

static Pattern expectedPattern(int op, mixcclDataType_t t, int nranks) {
  Pattern* p = &gExpectedPatterns[op][t];
  if (!p->bytes) {
    p->bytes = malloc(PERIOD * typeSize(t));
    p->es = typeSize(t);
    for (size_t i = 0; i < PERIOD; ++i) storeValue(p->bytes, i, t, expectedReduction(op, t, nranks, i));
  }
  return *p;
}

/* Writes elements [start, start+count) of the tiled pattern to buf. */
static void fillTiled(void* buf, size_t start, size_t count, const Pattern* p) {
  char* out = buf;
  size_t done = 0;
  while (done < count) {
    size_t phase = (start + done) % PERIOD;
    size_t n = PERIOD - phase;
    if (n > count - done) n = count - done;
    memcpy(out + done * p->es, p->bytes + phase * p->es, n * p->es);
    done += n;
  }
}

/* Number of elements of buf that differ from elements [start, start+count) of the pattern. */
static size_t mismatchesTiled(const void* buf, size_t start, size_t count, const Pattern* p) {
  const char* in = buf;
  size_t done = 0, wrong = 0;
  while (done < count) {
    size_t phase = (start + done) % PERIOD;
    size_t n = PERIOD - phase;
    if (n > count - done) n = count - done;
    if (memcmp(in + done * p->es, p->bytes + phase * p->es, n * p->es) != 0) {
      for (size_t k = 0; k < n; ++k)
        if (memcmp(in + (done + k) * p->es, p->bytes + (phase + k) * p->es, p->es) != 0) ++wrong;
    }
    done += n;
  }
  return wrong;
}

typedef struct {
  mixcclComm_t comm;
  int rank, nranks;
  long checks, failures;
  long caught; /* planted corruptions found as exactly one wrong element of a good call */
} Ctx;

/* planted: the result was corrupted on purpose (--corrupt), so exactly one element must be
 * wrong: that counts as caught, anything else as a failure. */
static void report(Ctx* c, const char* coll, mixcclDataType_t t, int op, size_t count, int inplace,
                   int root, mixcclResult_t res, size_t wrong, int planted) {
  c->checks++;
  if (planted && res == mixcclSuccess && wrong == 1) {
    c->caught++;
    return;
  }
  if (!planted && res == mixcclSuccess && wrong == 0) return;
  c->failures++;
  if (c->failures <= 20)
    fprintf(stderr, "rank %d: FAIL %s type=%d op=%s count=%zu %s root=%d: %s, %zu wrong (%s)\n",
            c->rank, coll, (int)t, op >= 0 ? opNames[op] : "-", count,
            inplace ? "in-place" : "out-of-place", root, mixcclGetErrorString(res), wrong,
            res == mixcclSuccess ? "" : mixcclGetLastError(c->comm));
}

static void* alloc(size_t count, mixcclDataType_t t) {
  size_t bytes = count * typeSize(t);
  void* p = malloc(bytes ? bytes : 1);
  memset(p, 0x5a, bytes ? bytes : 1); /* garbage that no result equals */
  return p;
}

static void testAllReduce(Ctx* c, mixcclDataType_t t, int op, size_t count, int inplace) {
  Pattern in = inputPattern(op, t, c->rank, c->nranks), want = expectedPattern(op, t, c->nranks);
  void* send = alloc(count, t);
  void* recv = inplace ? send : alloc(count, t);
  fillTiled(send, 0, count, &in);
  mixcclResult_t res = mixcclAllReduce(send, recv, count, t, op, c->comm, NULL);
  if (gCorrupt && count > 0) ((unsigned char*)recv)[0] ^= 0x11;
  report(c, "allreduce", t, op, count, inplace, -1, res, mismatchesTiled(recv, 0, count, &want),
         gCorrupt && count > 0);
  if (!inplace) free(recv);
  free(send);
}

static void testReduce(Ctx* c, mixcclDataType_t t, int op, size_t count, int inplace, int root) {
  Pattern in = inputPattern(op, t, c->rank, c->nranks), want = expectedPattern(op, t, c->nranks);
  void* send = alloc(count, t);
  int isRoot = c->rank == root;
  /* Off the root the receive buffer may be NULL (out-of-place case). */
  void* recv = inplace ? send : (isRoot ? alloc(count, t) : NULL);
  fillTiled(send, 0, count, &in);
  mixcclResult_t res = mixcclReduce(send, recv, count, t, op, root, c->comm, NULL);
  size_t wrong = isRoot ? mismatchesTiled(recv, 0, count, &want) : 0;
  report(c, "reduce", t, op, count, inplace, root, res, wrong, 0);
  if (!inplace && recv) free(recv);
  free(send);
}

static void testReduceScatter(Ctx* c, mixcclDataType_t t, int op, size_t count, int inplace) {
  Pattern in = inputPattern(op, t, c->rank, c->nranks), want = expectedPattern(op, t, c->nranks);
  size_t es = typeSize(t);
  void* send = alloc(count * c->nranks, t);
  void* recv = inplace ? (char*)send + c->rank * count * es : alloc(count, t);
  fillTiled(send, 0, count * c->nranks, &in);
  mixcclResult_t res = mixcclReduceScatter(send, recv, count, t, op, c->comm, NULL);
  report(c, "reducescatter", t, op, count, inplace, -1, res,
         mismatchesTiled(recv, c->rank * count, count, &want), 0);
  if (!inplace) free(recv);
  free(send);
}

static void testAllGatherOrGather(Ctx* c, mixcclDataType_t t, size_t count, int inplace, int root) {
  int gather = root >= 0;
  size_t es = typeSize(t);
  int holds = !gather || c->rank == root;
  void* recv = holds ? alloc(count * c->nranks, t) : NULL;
  void* send = (inplace && holds) ? (char*)recv + c->rank * count * es : alloc(count, t);
  Pattern mine = inputPattern(-1, t, c->rank, c->nranks);
  fillTiled(send, 0, count, &mine);
  mixcclResult_t res = gather ? mixcclGather(send, recv, count, t, root, c->comm, NULL)
                              : mixcclAllGather(send, recv, count, t, c->comm, NULL);
  size_t wrong = 0;
  if (holds) {
    for (int r = 0; r < c->nranks; ++r) {
      Pattern theirs = inputPattern(-1, t, r, c->nranks);
      wrong += mismatchesTiled((char*)recv + r * count * es, 0, count, &theirs);
    }
  }
  report(c, gather ? "gather" : "allgather", t, -1, count, inplace, root, res, wrong, 0);
  if (!(inplace && holds)) free(send);
  free(recv);
}

static void testBroadcast(Ctx* c, mixcclDataType_t t, size_t count, int inplace, int root) {
  Pattern data = inputPattern(-1, t, root, c->nranks);
  void* recv = alloc(count, t);
  void* send = inplace ? recv : alloc(count, t);
  if (c->rank == root) fillTiled(send, 0, count, &data);
  mixcclResult_t res = mixcclBroadcast(send, recv, count, t, root, c->comm, NULL);
  report(c, "broadcast", t, -1, count, inplace, root, res, mismatchesTiled(recv, 0, count, &data),
         0);
  if (!inplace) free(send);
  free(recv);
}

/* Block sent from rank `from` to rank `to`: pattern of block id from*nranks+to. */
static void testAlltoAll(Ctx* c, mixcclDataType_t t, size_t count, int inplace) {
  size_t es = typeSize(t);
  void* send = alloc(count * c->nranks, t);
  void* recv = inplace ? send : alloc(count * c->nranks, t);
  for (int p = 0; p < c->nranks; ++p) {
    Pattern blk = inputPattern(-1, t, c->rank * c->nranks + p, c->nranks);
    fillTiled((char*)send + p * count * es, 0, count, &blk);
  }
  mixcclResult_t res = mixcclAlltoAll(send, recv, count, t, c->comm, NULL);
  size_t wrong = 0;
  for (int p = 0; p < c->nranks; ++p) {
    Pattern blk = inputPattern(-1, t, p * c->nranks + c->rank, c->nranks);
    wrong += mismatchesTiled((char*)recv + p * count * es, 0, count, &blk);
  }
  report(c, "alltoall", t, -1, count, inplace, -1, res, wrong, 0);
  if (!inplace) free(recv);
  free(send);
}

/* Scatter's blocks: ids apart from the ranks' own (what AllGather and Broadcast send). */
#define SCATTER_ID(rank) (64 + (rank))

static void testScatter(Ctx* c, mixcclDataType_t t, size_t count, int inplace, int root) {
  size_t es = typeSize(t);
  int isRoot = c->rank == root;
  void* send = isRoot ? alloc(count * c->nranks, t) : NULL;
  void* recv = (inplace && isRoot) ? (char*)send + root * count * es : alloc(count, t);
  if (isRoot) {
    for (int p = 0; p < c->nranks; ++p) {
      Pattern blk = inputPattern(-1, t, SCATTER_ID(p), c->nranks);
      fillTiled((char*)send + p * count * es, 0, count, &blk);
    }
  }
  mixcclResult_t res = mixcclScatter(send, recv, count, t, root, c->comm, NULL);
  Pattern mine = inputPattern(-1, t, SCATTER_ID(c->rank), c->nranks);
  report(c, "scatter", t, -1, count, inplace, root, res, mismatchesTiled(recv, 0, count, &mine),
         0);
  if (!(inplace && isRoot)) free(recv);
  free(send);
}

/* A ring of sends and receives in one group (must not deadlock), plus a send to self. */
static void testSendRecv(Ctx* c, mixcclDataType_t t, size_t count) {
  int next = (c->rank + 1) % c->nranks, prev = (c->rank + c->nranks - 1) % c->nranks;
  void* send = alloc(count, t);
  void* recv = alloc(count, t);
  void* self = alloc(count, t);
  Pattern mine = inputPattern(-1, t, c->rank, c->nranks);
  Pattern theirs = inputPattern(-1, t, prev, c->nranks);
  fillTiled(send, 0, count, &mine);
  mixcclResult_t res = mixcclGroupStart();
  if (res == mixcclSuccess) res = mixcclSend(send, count, t, next, c->comm, NULL);
  if (res == mixcclSuccess) res = mixcclRecv(recv, count, t, prev, c->comm, NULL);
  if (res == mixcclSuccess) res = mixcclSend(send, count, t, c->rank, c->comm, NULL);
  if (res == mixcclSuccess) res = mixcclRecv(self, count, t, c->rank, c->comm, NULL);
  mixcclResult_t end = mixcclGroupEnd();
  if (res == mixcclSuccess) res = end;
  size_t wrong = mismatchesTiled(recv, 0, count, &theirs) + mismatchesTiled(self, 0, count, &mine);
  report(c, "sendrecv", t, -1, count, 0, -1, res, wrong, 0);
  free(send);
  free(recv);
  free(self);
}

static int rankMain(mixcclComm_t comm, int rank, int nranks, void* arg) {
  const Options* opt = arg;
  Ctx c = {comm, rank, nranks, 0, 0, 0};
  long unmet = countUnmetChoices(comm, rank, nranks, &opt->expect);
  for (int t = 0; t < mixcclNumTypes; ++t) {
    mixcclDataType_t type = (mixcclDataType_t)t;
    size_t es = typeSize(type);
    /* 0, 1, a prime, more than one 256 KiB pipelining chunk, several MiB. */
    size_t counts[5] = {0, 1, 1009, (300u << 10) / es + 7, (3u << 20) / es + 3};
    int ncounts = opt->quick ? 4 : 5;
    for (int k = 0; k < ncounts; ++k) {
      size_t count = counts[k];
      /* Per-rank counts of the gather/scatter family: big sizes are split over the ranks so
       * that total buffers stay at the same few MiB. */
      size_t perRank = k >= 3 ? count / nranks + 1 : count;
      for (int inplace = 0; inplace < 2; ++inplace) {
        int root = (int)((k + t + inplace) % nranks);
        for (int op = 0; op < mixcclNumOps; ++op) {
          if (opt->enabled[ALLREDUCE]) testAllReduce(&c, type, op, count, inplace);
          if (opt->enabled[REDUCE]) testReduce(&c, type, op, count, inplace, root);
          if (opt->enabled[REDUCESCATTER]) testReduceScatter(&c, type, op, perRank, inplace);
        }
        if (opt->enabled[ALLGATHER]) testAllGatherOrGather(&c, type, perRank, inplace, -1);
        if (opt->enabled[GATHER]) testAllGatherOrGather(&c, type, perRank, inplace, root);
        if (opt->enabled[BROADCAST]) testBroadcast(&c, type, count, inplace, root);
        if (opt->enabled[ALLTOALL]) testAlltoAll(&c, type, perRank, inplace);
        if (opt->enabled[SCATTER]) testScatter(&c, type, perRank, inplace, root);
      }
      if (opt->enabled[SENDRECV]) testSendRecv(&c, type, count);
    }
  }
  unmet += countUnmetConnected(comm, rank, nranks, &opt->expect);
  printf("rank %d: %ld checks, %ld failures, %ld unmet choices\n", rank, c.checks, c.failures,
         unmet);
  if (opt->expectCaught < 0) return c.failures || unmet ? 1 : 0;
  /* Self-test: the planted faults are the corruptions, or else the unmet choices. */
  long caught = gCorrupt ? c.caught : unmet, others = c.failures + (gCorrupt ? unmet : 0);
  printf("rank %d: caught %ld planted %s, expected %ld; %ld other failures\n", rank, caught,
         gCorrupt ? "corruptions" : "unmet choices", opt->expectCaught, others);
  return caught == opt->expectCaught && others == 0 ? 0 : 1;
}

/* The inputs tell at most 8 ranks apart (AlltoAll's 64 blocks and Scatter's 8 need ids below
 * BLOCK_IDS; reductions need distinct phases). */
#define MATRIX_MAX_RANKS 8

static int checkRankCount(int nranks) {
  if (nranks >= 1 && nranks <= MATRIX_MAX_RANKS) return 0;
  fprintf(stderr, "collective_matrix: %d ranks; it runs 1 to %d\n", nranks, MATRIX_MAX_RANKS);
  return 2;
}

static int parseOptions(int argc, char** argv, int first, Options* opt, int* timeout) {
  memset(opt, 0, sizeof(*opt));
  opt->expectCaught = -1;
  for (int i = 0; i < NCOLL; ++i) opt->enabled[i] = 1;
  for (int a = first; a < argc; ++a) {
    int expect = parseExpectOption(&opt->expect, argc, argv, &a);
    if (expect < 0) return 2;
    if (expect > 0) continue;
    if (!strcmp(argv[a], "--adaptors") && a + 1 < argc) {
      gHarnessAdaptors = argv[++a];
    } else if (!strcmp(argv[a], "--net") && a + 1 < argc) {
      gHarnessNet = argv[++a]; /* config.netName of every rank */
    } else if (!strcmp(argv[a], "--quick")) {
      opt->quick = 1;
    } else if (!strcmp(argv[a], "--corrupt")) {
      gCorrupt = 1;
    } else if (!strcmp(argv[a], "--expect-caught") && a + 1 < argc) {
      char* end = NULL;
      opt->expectCaught = strtol(argv[++a], &end, 10);
      if (!*argv[a] || *end || opt->expectCaught < 0) {
        fprintf(stderr, "--expect-caught %s: expected a count\n", argv[a]);
        return 2;
      }
    } else if (!strcmp(argv[a], "--timeout") && a + 1 < argc) {
      *timeout = atoi(argv[++a]);
    } else if (!strcmp(argv[a], "--coll") && a + 1 < argc) {
      const char* list = argv[++a];
      for (int i = 0; i < NCOLL; ++i) opt->enabled[i] = 0;
      for (int i = 0; i < NCOLL; ++i) {
        const char* hit = strstr(list, collNames[i]);
        size_t len = strlen(collNames[i]);
        /* whole names only: "reduce" must not match inside "allreduce" */
        while (hit && ((hit != list && hit[-1] != ',') || (hit[len] != ',' && hit[len] != 0)))
          hit = strstr(hit + 1, collNames[i]);
        if (hit) opt->enabled[i] = 1;
      }
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[a]);
      return 2;
    }
  }
  return 0;
}

#ifdef MATRIX_UNDER_MPI
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  /* mixccl may call the mpi adaptor from its own init thread: not only the main thread. */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank, nranks, timeout = 600;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Options opt;
  if (parseOptions(argc, argv, 1, &opt, &timeout) || checkRankCount(nranks)) MPI_Abort(MPI_COMM_WORLD, 2);
  alarm(timeout); /* never hang a CI job: SIGALRM ends the rank, mpirun ends the rest */
  mixcclUniqueId id;
  if (rank == 0 && mixcclGetUniqueId(&id) != mixcclSuccess) {
    fprintf(stderr, "mixcclGetUniqueId failed: %s\n", mixcclGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  double start = harnessNow();
  mixcclComm_t comm = NULL;
  mixcclResult_t res = harnessInitRank(&comm, nranks, id, rank);
  if (res != mixcclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s: %s\n", rank, mixcclGetErrorString(res),
            mixcclGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  int rc = rankMain(comm, rank, nranks, &opt);
  if (mixcclCommDestroy(comm) != mixcclSuccess && !rc) rc = 4;
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("%d ranks: %s in %.1f s\n", nranks, worst ? "FAILED" : "passed", harnessNow() - start);
  MPI_Finalize();
  return worst;
}
#else
int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s NRANKS [--coll a,b] [--quick] [--timeout S] [--adaptors a,b]\n", argv[0]);
    return 2;
  }
  int nranks = atoi(argv[1]);
  int timeout = 600;
  Options opt;
  if (parseOptions(argc, argv, 2, &opt, &timeout) || checkRankCount(nranks)) return 2;
  double start = harnessNow();
  int rc = runRanks(nranks, rankMain, &opt, timeout);
  printf("%d ranks: %s in %.1f s\n", nranks, rc ? "FAILED" : "passed", harnessNow() - start);
  return rc;
}
#endif
