/*
 * multihost_check: one rank of a multi-host job, started by a launcher (testbed.sh +
 * host_ranks.sh, mixcclrun, mpirun, ...). Uses only mixccl.h.
 *
 *   MIXCCL_COMM_ID=<host:port of rank 0> MIXCCL_COMM_SECRET=<32 hex> MIXCCL_RANK=r MIXCCL_NRANKS=n
 *   multihost_check [--quick] [--corrupt] [--expect-... (tests/multirank/expect_choice.h)]
 *
 * Runs AllReduce (every op, in and out of place), Broadcast, Reduce, AllGather, ReduceScatter,
 * AlltoAll, Gather, Scatter and grouped Send/Recv (ring and all pairs) over several sizes and
 * datatypes; every result is compared exactly with values computed here (inputs are small
 * integers that every datatype used represents exactly). Prints one summary line; exits 1 on
 * any mismatch or error. --corrupt flips one received element on rank 0 so that the test of the
 * checker itself can expect a failure. The --expect-* options assert through mixcclCommInspect
 * what the library chose (transport to peers on this host and on others, domains, adaptors);
 * ranks MIXCCL_LOCAL_SIZE at a time share a host (host_ranks.sh, mixcclrun).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "expect_choice.h"
#include "mixccl.h"

static int rank, nranks;
static long checks, failures;
static int corruptPending;
static mixcclComm_t comm;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char* typeName(mixcclDataType_t t) {
  switch (t) {
    case mixcclUint8: return "uint8";
    case mixcclInt32: return "int32";
    case mixcclInt64: return "int64";
    case mixcclFloat32: return "float32";
    case mixcclFloat64: return "float64";
    default: return "?";
  }
}

static size_t typeSize(mixcclDataType_t t) {
  switch (t) {
    case mixcclUint8: return 1;
    case mixcclInt32: case mixcclFloat32: return 4;
    default: return 8;
  }
}

static void put(void* b, mixcclDataType_t t, size_t i, double v) {
  switch (t) {
    case mixcclUint8: ((uint8_t*)b)[i] = (uint8_t)v; break;
    case mixcclInt32: ((int32_t*)b)[i] = (int32_t)v; break;
    case mixcclInt64: ((int64_t*)b)[i] = (int64_t)v; break;
    case mixcclFloat32: ((float*)b)[i] = (float)v; break;
    default: ((double*)b)[i] = v; break;
  }
}

static double get(const void* b, mixcclDataType_t t, size_t i) {
  switch (t) {
    case mixcclUint8: return ((const uint8_t*)b)[i];
    case mixcclInt32: return ((const int32_t*)b)[i];
    case mixcclInt64: return (double)((const int64_t*)b)[i];
    case mixcclFloat32: return ((const float*)b)[i];
    default: return ((const double*)b)[i];
  }
}

static void* xalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "multihost_check: out of memory\n");
    exit(1);
  }
  memset(p, 0xa5, n ? n : 1);  /* a result never equals this by accident */
  return p;
}

static void must(mixcclResult_t r, const char* what) {
  if (r == mixcclSuccess) return;
  fprintf(stderr, "multihost_check: rank %d: %s failed: %s (%s)\n", rank, what,
          mixcclGetErrorString(r), mixcclGetLastError(comm));
  if (comm) mixcclCommAbort(comm);
  exit(1);
}

/* Input of rank r at element i, and the per-op expectations over all ranks. */
static double base(int r, size_t i) { return (double)(r + 1) + (double)(i % 13); }
static double prodIn(int r, size_t i) { return 1.0 + (double)((r + i) % 2); }

static double expected(mixcclRedOp_t op, size_t i) {
  double acc = op == mixcclProd ? 1 : 0;
  for (int r = 0; r < nranks; r++) {
    double v = op == mixcclProd ? prodIn(r, i) : base(r, i);
    if (op == mixcclSum || op == mixcclAvg) acc += v;
    else if (op == mixcclProd) acc *= v;
    else if (op == mixcclMax) acc = r == 0 || v > acc ? v : acc;
    else acc = r == 0 || v < acc ? v : acc;
  }
  if (op == mixcclAvg) acc = (double)((int64_t)acc / nranks); /* integer Avg truncates */
  return acc;
}

static double inputFor(mixcclRedOp_t op, int r, size_t i) {
  return op == mixcclProd ? prodIn(r, i) : base(r, i);
}

/* Compares count elements; reports the first mismatch. */
static void verify(const char* what, mixcclDataType_t t, size_t count, const void* got,
                   double (*exp)(size_t, const void*), const void* ctx) {
  checks++;
  if (corruptPending && rank == 0 && count > 0) {
    put((void*)got, t, count / 2, get(got, t, count / 2) + 1);
    corruptPending = 0;
  }
  for (size_t i = 0; i < count; i++) {
    double e = exp(i, ctx), g = get(got, t, i);
    if (g != e) {
      fprintf(stderr, "multihost_check: rank %d: %s %s count %zu: element %zu is %g, expected %g\n",
              rank, what, typeName(t), count, i, g, e);
      failures++;
      return;
    }
  }
}

struct RedCtx { mixcclRedOp_t op; size_t offset; };
static double expRed(size_t i, const void* c) {
  const struct RedCtx* x = c;
  return expected(x->op, x->offset + i);
}
struct RootCtx { int root; size_t count; };
static double expBcast(size_t i, const void* c) { return base(((const struct RootCtx*)c)->root, i); }
static double expGathered(size_t i, const void* c) {
  size_t count = *(const size_t*)c;
  return base((int)(i / count), i % count);
}
static double a2a(int from, int to, size_t i) { return (double)((from * 7 + to * 3 + i) % 100 + 1); }
static double expA2a(size_t i, const void* c) {
  size_t count = *(const size_t*)c;
  return a2a((int)(i / count), rank, i % count);
}
struct P2pCtx { int from; };
static double p2pVal(int from, int to, size_t i) { return (double)((from * 5 + to * 11 + i) % 120 + 1); }
static double expP2p(size_t i, const void* c) { return p2pVal(((const struct P2pCtx*)c)->from, rank, i); }
static double expScatter(size_t i, const void* c) {
  const struct RootCtx* x = c;
  return base(x->root, (size_t)rank * x->count + i);
}

static void allReduce(mixcclDataType_t t, mixcclRedOp_t op, size_t count, int inPlace) {
  size_t bytes = count * typeSize(t);
  void* send = xalloc(bytes);
  void* recv = inPlace ? send : xalloc(bytes);
  for (size_t i = 0; i < count; i++) put(send, t, i, inputFor(op, rank, i));
  must(mixcclAllReduce(send, recv, count, t, op, comm, NULL), "AllReduce");
  static const char* names[] = {"AllReduce sum", "AllReduce prod", "AllReduce max",
                                "AllReduce min", "AllReduce avg"};
  char what[64];
  snprintf(what, sizeof(what), "%s%s", names[op], inPlace ? " in-place" : "");
  struct RedCtx ctx = {op, 0};
  verify(what, t, count, recv, expRed, &ctx);
  if (!inPlace) free(recv);
  free(send);
}

static void broadcast(mixcclDataType_t t, size_t count, int root) {
  void* buf = xalloc(count * typeSize(t));
  if (rank == root)
    for (size_t i = 0; i < count; i++) put(buf, t, i, base(root, i));
  must(mixcclBroadcast(buf, buf, count, t, root, comm, NULL), "Broadcast");
  struct RootCtx ctx = {root, count};
  verify("Broadcast", t, count, buf, expBcast, &ctx);
  free(buf);
}

static void reduceTo(mixcclDataType_t t, size_t count, int root) {
  void* send = xalloc(count * typeSize(t));
  void* recv = xalloc(count * typeSize(t));
  for (size_t i = 0; i < count; i++) put(send, t, i, base(rank, i));
  must(mixcclReduce(send, rank == root ? recv : NULL, count, t, mixcclSum, root, comm, NULL),
       "Reduce");
  struct RedCtx ctx = {mixcclSum, 0};
  if (rank == root) verify("Reduce sum", t, count, recv, expRed, &ctx);
  free(send);
  free(recv);
}

static void allGather(mixcclDataType_t t, size_t count) {
  void* send = xalloc(count * typeSize(t));
  void* recv = xalloc(count * nranks * typeSize(t));
  for (size_t i = 0; i < count; i++) put(send, t, i, base(rank, i));
  must(mixcclAllGather(send, recv, count, t, comm, NULL), "AllGather");
  verify("AllGather", t, count * nranks, recv, expGathered, &count);
  free(send);
  free(recv);
}

static void reduceScatter(mixcclDataType_t t, mixcclRedOp_t op, size_t count) {
  void* send = xalloc(count * nranks * typeSize(t));
  void* recv = xalloc(count * typeSize(t));
  for (size_t i = 0; i < count * nranks; i++) put(send, t, i, inputFor(op, rank, i));
  must(mixcclReduceScatter(send, recv, count, t, op, comm, NULL), "ReduceScatter");
  struct RedCtx ctx = {op, (size_t)rank * count};
  verify(op == mixcclSum ? "ReduceScatter sum" : "ReduceScatter max", t, count, recv, expRed, &ctx);
  free(send);
  free(recv);
}

static void alltoall(mixcclDataType_t t, size_t count) {
  void* send = xalloc(count * nranks * typeSize(t));
  void* recv = xalloc(count * nranks * typeSize(t));
  for (int p = 0; p < nranks; p++)
    for (size_t i = 0; i < count; i++) put(send, t, p * count + i, a2a(rank, p, i));
  must(mixcclAlltoAll(send, recv, count, t, comm, NULL), "AlltoAll");
  verify("AlltoAll", t, count * nranks, recv, expA2a, &count);
  free(send);
  free(recv);
}

static void gatherScatter(mixcclDataType_t t, size_t count, int root) {
  void* send = xalloc(count * typeSize(t));
  void* all = xalloc(count * nranks * typeSize(t));
  for (size_t i = 0; i < count; i++) put(send, t, i, base(rank, i));
  must(mixcclGather(send, all, count, t, root, comm, NULL), "Gather");
  if (rank == root) verify("Gather", t, count * nranks, all, expGathered, &count);
  if (rank == root)
    for (size_t i = 0; i < count * nranks; i++) put(all, t, i, base(root, i));
  void* part = xalloc(count * typeSize(t));
  must(mixcclScatter(all, part, count, t, root, comm, NULL), "Scatter");
  struct RootCtx ctx = {root, count};
  verify("Scatter", t, count, part, expScatter, &ctx);
  free(send);
  free(all);
  free(part);
}

/* One message to the next rank, one from the previous, posted together. */
static void sendRecvRing(mixcclDataType_t t, size_t count) {
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  void* send = xalloc(count * typeSize(t));
  void* recv = xalloc(count * typeSize(t));
  for (size_t i = 0; i < count; i++) put(send, t, i, p2pVal(rank, next, i));
  must(mixcclGroupStart(), "GroupStart");
  must(mixcclSend(send, count, t, next, comm, NULL), "Send");
  must(mixcclRecv(recv, count, t, prev, comm, NULL), "Recv");
  must(mixcclGroupEnd(), "GroupEnd (ring)");
  struct P2pCtx ctx = {prev};
  verify("Send/Recv ring", t, count, recv, expP2p, &ctx);
  free(send);
  free(recv);
}

/* A distinct message to and from every other rank, all in one group. */
static void sendRecvAllPairs(mixcclDataType_t t, size_t count) {
  size_t bytes = count * typeSize(t);
  char* send = xalloc(bytes * nranks);
  char* recv = xalloc(bytes * nranks);
  for (int p = 0; p < nranks; p++)
    for (size_t i = 0; i < count; i++) put(send + p * bytes, t, i, p2pVal(rank, p, i));
  must(mixcclGroupStart(), "GroupStart");
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    must(mixcclSend(send + p * bytes, count, t, p, comm, NULL), "Send");
    must(mixcclRecv(recv + p * bytes, count, t, p, comm, NULL), "Recv");
  }
  must(mixcclGroupEnd(), "GroupEnd (all pairs)");
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    struct P2pCtx ctx = {p};
    verify("Send/Recv all pairs", t, count, recv + p * bytes, expP2p, &ctx);
  }
  free(send);
  free(recv);
}

static int envInt(const char* a, const char* b) {
  const char* v = getenv(a);
  if (!v || !*v) v = b ? getenv(b) : NULL;
  return v && *v ? atoi(v) : -1;
}

int main(int argc, char** argv) {
  int quick = 0;
  ChoiceExpectations expect;
  memset(&expect, 0, sizeof(expect));
  for (int i = 1; i < argc; i++) {
    int e = parseExpectOption(&expect, argc, argv, &i);
    if (e < 0) return 2;
    if (e > 0) continue;
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--corrupt")) corruptPending = 1;
    else {
      fprintf(stderr, "usage: multihost_check [--quick] [--corrupt] [--expect-transport-local NAME] "
              "[--expect-transport-remote NAME] [--expect-domains LIST] [--expect-adaptors LIST] "
              "[--expect-algo COLL:BYTES:NAME]\n");
      return 2;
    }
  }
  expect.ranksPerHost = envInt("MIXCCL_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (expect.transportLocal != expect.transportRemote && expect.ranksPerHost < 1) {
    fprintf(stderr, "multihost_check: --expect-transport-local/-remote need MIXCCL_LOCAL_SIZE\n");
    return 2;
  }
  rank = envInt("MIXCCL_RANK", "OMPI_COMM_WORLD_RANK");
  nranks = envInt("MIXCCL_NRANKS", "OMPI_COMM_WORLD_SIZE");
  if (rank < 0 || nranks < 1 || rank >= nranks || !getenv("MIXCCL_COMM_ID")) {
    fprintf(stderr, "multihost_check: set MIXCCL_RANK, MIXCCL_NRANKS and MIXCCL_COMM_ID\n");
    return 2;
  }
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  const char* tbHost = getenv("MIXCCL_TESTBED_HOST");

  double t0 = now();
  mixcclUniqueId id;
  must(mixcclGetUniqueId(&id), "GetUniqueId");
  must(mixcclCommInitRank(&comm, nranks, id, rank), "CommInitRank");
  double tInit = now() - t0;
  failures += countUnmetChoices(comm, rank, nranks, &expect);

  const mixcclDataType_t allTypes[] = {mixcclUint8, mixcclInt32, mixcclInt64, mixcclFloat32,
                                       mixcclFloat64};
  const mixcclRedOp_t ops[] = {mixcclSum, mixcclProd, mixcclMax, mixcclMin};
  const size_t fullSizes[] = {1, 1000, 65537};
  const size_t quickSizes[] = {1, 4099};
  const size_t* sizes = quick ? quickSizes : fullSizes;
  int nsizes = quick ? 2 : 3;

  for (int s = 0; s < nsizes; s++) {
    size_t n = sizes[s];
    for (int ti = 0; ti < 5; ti++)
      for (int oi = 0; oi < 4; oi++) {
        if (ops[oi] == mixcclProd && nranks > 7 && allTypes[ti] == mixcclUint8) continue;
        allReduce(allTypes[ti], ops[oi], n, 0);
      }
    allReduce(mixcclInt32, mixcclAvg, n, 0);
    allReduce(mixcclFloat32, mixcclSum, n, 1);
    allReduce(mixcclInt64, mixcclMax, n, 1);
  }
  /* Large enough for the ring and several chunks. */
  allReduce(mixcclFloat32, mixcclSum, quick ? 100003 : 400009, 0);
  allReduce(mixcclInt64, mixcclSum, quick ? 50001 : 200003, 1);

  int roots[3] = {0, nranks - 1, nranks / 2};
  for (int s = 0; s < nsizes; s++)
    for (int r = 0; r < 3; r++) {
      broadcast(mixcclUint8, sizes[s], roots[r]);
      broadcast(mixcclFloat64, sizes[s], roots[r]);
    }
  broadcast(mixcclInt32, quick ? 70001 : 300007, nranks - 1);
  reduceTo(mixcclInt32, 1000, nranks - 1);
  reduceTo(mixcclFloat32, quick ? 4099 : 65537, 0);

  const size_t perRank[] = {1, 777, quick ? 8191 : 30011};
  for (int s = 0; s < 3; s++) {
    allGather(mixcclUint8, perRank[s]);
    allGather(mixcclFloat64, perRank[s]);
    reduceScatter(mixcclInt32, mixcclSum, perRank[s]);
    reduceScatter(mixcclFloat32, mixcclMax, perRank[s]);
    alltoall(mixcclInt32, perRank[s]);
    alltoall(mixcclUint8, perRank[s]);
    gatherScatter(mixcclInt64, perRank[s], 1 % nranks);
    if (nranks > 1) {
      sendRecvRing(mixcclFloat32, perRank[s]);
      sendRecvAllPairs(mixcclInt64, perRank[s]);
    }
  }

  double total = now() - t0;
  must(mixcclCommDestroy(comm), "CommDestroy");
  printf("multihost_check: rank %d/%d (%s, testbed host %s, pid %d): %ld checks, %ld failed; "
         "init %.2fs, total %.2fs\n",
         rank, nranks, host, tbHost ? tbHost : "-", (int)getpid(), checks, failures, tInit, total);
  return failures ? 1 : 0;
}
