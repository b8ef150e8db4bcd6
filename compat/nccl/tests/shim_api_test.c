/* NCCL programs on mixccl's NCCL shim: compiled against the real nccl.h, linked to the shim's
 * libnccl.so.2, host buffers and NULL streams.
 *
 * usage: shim_api_test launcher   ranks from mixcclrun (MIXCCL_RANK, MIXCCL_NRANKS, and
 *                                 MIXCCL_COMM_ID so every rank's ncclGetUniqueId agrees; with
 *                                 --adaptors each rank's MIXCCL_ADAPTOR): every collective x
 *                                 datatype x op, groups, Send/Recv, Split, PreMulSum,
 *                                 registration, abort, async error
 *        shim_api_test fork N     N forked ranks; each makes communicators with an older
 *                                 (smaller) ncclConfig_t, non-blocking, and by
 *                                 ncclCommInitRankScalable, and runs the sweep on each
 *        shim_api_test async N    N forked ranks; the last dies after init and the others see
 *                                 ncclRemoteError from ncclCommGetAsyncError, with the message
 *        shim_api_test shrink N   N forked ranks; the last aborts, the others shrink without it
 *                                 (NCCL_SHRINK_ABORT) and check the new communicator; it comes
 *                                 back by ncclCommGrow with rank 0's ncclCommGetUniqueId; rank 0
 *                                 revokes the grown one under the others' AllReduce
 *        shim_api_test local      one process: ncclCommInitAll driven in one group, and every
 *                                 refusal with its code and exact ncclGetLastError message
 * Each prints "PASSED" (or the failed checks and "FAILED") and exits 0 when every check held. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <stddef.h>
#include <unistd.h>

#include "shim_checks.h"
#include "value_codec.h" /* from tests/multirank, through the port header (port/mixccl.h) */

#define COUNT 7

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 30, 0)
/* NCCL 2.30's, which the shim exports whatever header the test is built against. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config);
#endif

/* ---- the sweep: every collective x datatype x op ---- */

/* Inputs are small integers, exact in every datatype (fp8 included) for up to 8 ranks. */
static double reduceInput(int op, int r, int n, size_t i) {
  switch (op) {
    case ncclSum: return (double)((r + i) % 2);
    case ncclProd: return r == (int)(i % n) ? 2 : 1;
    case ncclMax:
    case ncclMin: return (double)((r + i) % n);
    default: return 2; /* Avg */
  }
}
static double reduceExpected(int op, int n, size_t i) {
  int ones = 0;
  switch (op) {
    case ncclSum:
      for (int r = 0; r < n; ++r) ones += (int)((r + i) % 2);
      return ones;
    case ncclProd: return 2;
    case ncclMax: return n - 1;
    case ncclMin: return 0;
    default: return 2;
  }
}
/* Block value of rank r at element i for the data-movement collectives (< 8 for up to 8 ranks). */
static double blockValue(int r, size_t i) { return (double)((r * 3 + i) % 8); }

static void fillReduce(void* buf, ncclDataType_t t, int op, int r, int n, size_t first, size_t count) {
  for (size_t i = 0; i < count; ++i) storeValue(buf, i, t, reduceInput(op, r, n, first + i));
}
static void fillBlock(void* buf, ncclDataType_t t, int r, size_t first, size_t count) {
  for (size_t i = 0; i < count; ++i) storeValue(buf, i, t, blockValue(r, first + i));
}
static int sameAsReduced(const void* buf, ncclDataType_t t, int op, int n, size_t first, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (loadValue(buf, i, t) != reduceExpected(op, n, first + i)) return 0;
  return 1;
}
static int sameAsBlock(const void* buf, ncclDataType_t t, int r, size_t first, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (loadValue(buf, i, t) != blockValue(r, first + i)) return 0;
  return 1;
}

static void sweep(ncclComm_t comm, int rank, int n) {
  size_t cap = (size_t)n * COUNT * 8;
  char* a = malloc(cap);
  char* b = malloc(cap);
  for (int ti = 0; ti < ncclNumTypes; ++ti) {
    ncclDataType_t t = (ncclDataType_t)ti;
    size_t es = typeSize(t);
    for (int op = 0; op < ncclNumOps; ++op) {
      fillReduce(a, t, op, rank, n, 0, COUNT);
      SHIM_OK(ncclAllReduce(a, b, COUNT, t, (ncclRedOp_t)op, comm, NULL));
      SHIM_CHECK(sameAsReduced(b, t, op, n, 0, COUNT));
      SHIM_OK(ncclAllReduce(a, a, COUNT, t, (ncclRedOp_t)op, comm, NULL)); /* in place */
      SHIM_CHECK(sameAsReduced(a, t, op, n, 0, COUNT));
      fillReduce(a, t, op, rank, n, 0, COUNT);
      memset(b, 0, cap);
      SHIM_OK(ncclReduce(a, b, COUNT, t, (ncclRedOp_t)op, n - 1, comm, NULL));
      if (rank == n - 1) SHIM_CHECK(sameAsReduced(b, t, op, n, 0, COUNT));
      fillReduce(a, t, op, rank, n, 0, (size_t)n * COUNT);
      SHIM_OK(ncclReduceScatter(a, b, COUNT, t, (ncclRedOp_t)op, comm, NULL));
      SHIM_CHECK(sameAsReduced(b, t, op, n, (size_t)rank * COUNT, COUNT));
    }
    /* AllGather: block r of the result is rank r's. */
    fillBlock(a, t, rank, 0, COUNT);
    SHIM_OK(ncclAllGather(a, b, COUNT, t, comm, NULL));
    for (int r = 0; r < n; ++r) SHIM_CHECK(sameAsBlock(b + (size_t)r * COUNT * es, t, r, 0, COUNT));
    /* Broadcast from 0, Bcast (in place) from the last rank. */
    fillBlock(a, t, rank, 0, COUNT);
    SHIM_OK(ncclBroadcast(a, b, COUNT, t, 0, comm, NULL));
    SHIM_CHECK(sameAsBlock(b, t, 0, 0, COUNT));
    SHIM_OK(ncclBcast(a, COUNT, t, n - 1, comm, NULL));
    SHIM_CHECK(sameAsBlock(a, t, n - 1, 0, COUNT));
    /* AlltoAll: block p sent by r holds blockValue(r, p*COUNT + i); rank gets block `rank` of each. */
    fillBlock(a, t, rank, 0, (size_t)n * COUNT);
    SHIM_OK(ncclAlltoAll(a, b, COUNT, t, comm, NULL));
    for (int r = 0; r < n; ++r)
      SHIM_CHECK(sameAsBlock(b + (size_t)r * COUNT * es, t, r, (size_t)rank * COUNT, COUNT));
    /* Gather to 0, Scatter from the last rank. */
    fillBlock(a, t, rank, 0, COUNT);
    SHIM_OK(ncclGather(a, b, COUNT, t, 0, comm, NULL));
    if (rank == 0)
      for (int r = 0; r < n; ++r) SHIM_CHECK(sameAsBlock(b + (size_t)r * COUNT * es, t, r, 0, COUNT));
    fillBlock(a, t, rank, 0, (size_t)n * COUNT);
    SHIM_OK(ncclScatter(a, b, COUNT, t, n - 1, comm, NULL));
    SHIM_CHECK(sameAsBlock(b, t, n - 1, (size_t)rank * COUNT, COUNT));
    /* Send/Recv around the ring, both in one group. */
    fillBlock(a, t, rank, 0, COUNT);
    SHIM_OK(ncclGroupStart());
    SHIM_OK(ncclSend(a, COUNT, t, (rank + 1) % n, comm, NULL));
    SHIM_OK(ncclRecv(b, COUNT, t, (rank + n - 1) % n, comm, NULL));
    SHIM_OK(ncclGroupEnd());
    SHIM_CHECK(sameAsBlock(b, t, (rank + n - 1) % n, 0, COUNT));
  }
  free(a);
  free(b);
}

/* One float AllReduce on comm, which must give n. A non-blocking communicator may answer
 * ncclInProgress: then its async error is polled until the call is done. */
static void allReduceGivesCount(ncclComm_t comm, int n) {
  float x = 1, y = 0;
  ncclResult_t r = ncclAllReduce(&x, &y, 1, ncclFloat, ncclSum, comm, NULL);
  while (r == ncclInProgress) {
    ncclResult_t state = ncclSuccess;
    SHIM_OK(ncclCommGetAsyncError(comm, &state));
    r = state;
  }
  SHIM_CHECK(r == ncclSuccess);
  SHIM_CHECK(y == (float)n);
}

/* ---- launcher mode: the sweep and the communicator calls, every rank ---- */

static void communicatorCalls(ncclComm_t comm, int rank, int n) {
  int v = 0, count = 0, me = -1, dev = -2;
  SHIM_OK(ncclGetVersion(&v));
  SHIM_CHECK(v == 23007);
  SHIM_OK(ncclCommCount(comm, &count));
  SHIM_OK(ncclCommUserRank(comm, &me));
  SHIM_OK(ncclCommCuDevice(comm, &dev));
  SHIM_CHECK(count == n && me == rank);
  /* Nested groups run at the outermost end. */
  int x[3] = {rank, 1, 2}, y[3] = {0};
  SHIM_OK(ncclGroupStart());
  SHIM_OK(ncclGroupStart());
  SHIM_OK(ncclAllReduce(x, y, 3, ncclInt, ncclSum, comm, NULL));
  SHIM_OK(ncclGroupEnd());
  SHIM_OK(ncclAllReduce(x + 1, x + 1, 2, ncclInt, ncclMax, comm, NULL));
  SHIM_OK(ncclGroupEnd());
  SHIM_CHECK(y[0] == n * (n - 1) / 2 && y[1] == n && y[2] == 2 * n && x[1] == 1 && x[2] == 2);
  /* PreMulSum: each rank scales by rank + 1 (host immediate), then by a scalar in memory. */
  float scalar = (float)(rank + 1), one = 1, sum = 0;
  ncclRedOp_t premul;
  SHIM_OK(ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat, ncclScalarHostImmediate, comm));
  SHIM_OK(ncclAllReduce(&one, &sum, 1, ncclFloat, premul, comm, NULL));
  SHIM_CHECK(sum == (float)(n * (n + 1) / 2));
  SHIM_OK(ncclRedOpDestroy(premul, comm));
  double factor = 0.5, d = 4, dsum = 0;
  SHIM_OK(ncclRedOpCreatePreMulSum(&premul, &factor, ncclDouble, ncclScalarDevice, comm));
  SHIM_OK(ncclReduce(&d, &dsum, 1, ncclDouble, premul, 0, comm, NULL));
  if (rank == 0) SHIM_CHECK(dsum == 2.0 * n);
  SHIM_OK(ncclRedOpDestroy(premul, comm));
  /* Split by parity, ordered by descending rank; NOCOLOR leaves rank 0 out of a second split. */
  ncclComm_t half = NULL, rest = (ncclComm_t)0x1;
  SHIM_OK(ncclCommSplit(comm, rank % 2, -rank, &half, NULL));
  int halfSize = (n - rank % 2 + 1) / 2, halfRank = -1;
  SHIM_OK(ncclCommCount(half, &count));
  SHIM_OK(ncclCommUserRank(half, &halfRank));
  SHIM_CHECK(count == halfSize && halfRank == halfSize - 1 - rank / 2);
  allReduceGivesCount(half, halfSize);
  SHIM_OK(ncclCommDestroy(half));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "rest";
  SHIM_OK(ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 1, 0, &rest, &config));
  if (rank == 0) {
    SHIM_CHECK(rest == NULL);
  } else {
    allReduceGivesCount(rest, n - 1);
    SHIM_OK(ncclCommDestroy(rest));
  }
  /* Registration: a handle that is checked. */
  void* handle = NULL;
  char buf[64];
  SHIM_OK(ncclCommRegister(comm, buf, sizeof buf, &handle));
  SHIM_OK(ncclCommDeregister(comm, handle));
  char expected[160];
  snprintf(expected, sizeof expected,
           "mixcclCommDeregister: %p is not a live registration handle of this communicator", handle);
  SHIM_FAILS(ncclCommDeregister(comm, handle), ncclInvalidArgument, comm, expected);
  /* A healthy communicator has no async error; an aborted one is gone. */
  ncclResult_t state = ncclInternalError;
  SHIM_OK(ncclCommGetAsyncError(comm, &state));
  SHIM_CHECK(state == ncclSuccess);
  ncclComm_t doomed = NULL;
  SHIM_OK(ncclCommSplit(comm, 0, rank, &doomed, NULL));
  allReduceGivesCount(doomed, n);
  /* Every rank is done with doomed before any aborts it (an abort cuts its connections). */
  allReduceGivesCount(comm, n);
  SHIM_OK(ncclCommAbort(doomed));
  snprintf(expected, sizeof expected,
           "mixcclCommCount: %p is not a live communicator (destroyed or aborted?)", (void*)doomed);
  SHIM_FAILS(ncclCommCount(doomed, &count), ncclInvalidUsage, NULL, expected);
}

static int launcherMode(void) {
  const char* r = getenv("MIXCCL_RANK");
  const char* n = getenv("MIXCCL_NRANKS");
  if (!r || !n) {
    fprintf(stderr, "launcher mode runs under mixcclrun (MIXCCL_RANK, MIXCCL_NRANKS)\n");
    return 2;
  }
  int rank = atoi(r), nranks = atoi(n);
  gShimRank = rank;
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  SHIM_OK(ncclGetUniqueId(&id)); /* MIXCCL_COMM_ID: the same id on every rank */
  SHIM_OK(ncclCommInitRank(&comm, nranks, id, rank));
  if (gShimFailures) return 1;
  sweep(comm, rank, nranks);
  communicatorCalls(comm, rank, nranks);
  SHIM_OK(ncclCommFinalize(comm));
  SHIM_OK(ncclCommDestroy(comm));
  printf("rank %d: %s\n", rank, gShimFailures ? "FAILED" : "PASSED");
  return gShimFailures != 0;
}

/* ---- fork mode: the other ways to make a communicator ---- */

static int forkedRank(int rank, int n, const ncclUniqueId* ids) {
  gShimRank = rank;
  /* A config as NCCL 2.17's header made it: the fields up to splitShare. */
  ncclConfig_t older = NCCL_CONFIG_INITIALIZER;
  older.size = offsetof(ncclConfig_t, splitShare);
  older.version = 21703;
  older.netName = "Socket";
  older.commName = (const char*)0x1; /* beyond the older size: never read */
  ncclComm_t comm = NULL;
  SHIM_OK(ncclCommInitRankConfig(&comm, n, ids[0], rank, &older));
  if (comm) {
    sweep(comm, rank, n);
    SHIM_OK(ncclCommDestroy(comm));
  }
  /* Non-blocking: poll until the communicator is ready. */
  ncclConfig_t nb = NCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm, n, ids[1], rank, &nb);
  SHIM_CHECK(r == ncclSuccess || r == ncclInProgress);
  ncclResult_t state = ncclInProgress;
  while (comm && state == ncclInProgress) SHIM_OK(ncclCommGetAsyncError(comm, &state));
  SHIM_CHECK(state == ncclSuccess);
  if (comm) {
    allReduceGivesCount(comm, n);
    SHIM_OK(ncclCommDestroy(comm));
  }
  /* Scalable init: two roots (ids from two ncclGetUniqueId calls, the same order on all ranks;
   * at most one per rank), default config. */
  ncclUniqueId both[2] = {ids[2], ids[3]};
  SHIM_OK(ncclCommInitRankScalable(&comm, n, rank, n < 2 ? n : 2, both, NULL));
  if (comm) {
    allReduceGivesCount(comm, n);
    SHIM_OK(ncclCommDestroy(comm));
  }
  return gShimFailures != 0;
}

static int forkMode(int n, int (*rankMain)(int, int, const ncclUniqueId*)) {
  ncclUniqueId ids[4];
  for (int i = 0; i < 4; ++i) SHIM_OK(ncclGetUniqueId(&ids[i]));
  if (gShimFailures) return 1;
  fflush(stdout);
  pid_t pids[64];
  for (int r = 0; r < n; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      alarm(120);
      _exit(rankMain(r, n, ids));
    }
  }
  int failed = 0;
  for (int r = 0; r < n; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", r, status);
      failed = 1;
    }
  }
  printf("%d forked ranks: %s\n", n, failed ? "FAILED" : "PASSED");
  return failed;
}

/* ---- async mode: a peer that dies shows as the communicator's asynchronous error ---- */

static int asyncRank(int rank, int n, const ncclUniqueId* ids) {
  gShimRank = rank;
  ncclComm_t comm = NULL;
  SHIM_OK(ncclCommInitRank(&comm, n, ids[0], rank));
  if (!comm) return 1;
  allReduceGivesCount(comm, n); /* every connection is up */
  if (rank == n - 1) _exit(0);  /* dies without ncclCommDestroy: no goodbye to its peers */
  ncclResult_t state = ncclSuccess;
  for (int i = 0; i < 2000 && state == ncclSuccess; ++i) {
    SHIM_OK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclSuccess) usleep(10000);
  }
  SHIM_CHECK(state == ncclRemoteError);
  /* mixccl's message names the rank that died ("... rank 2 (host pid N) failed ..." or "...
   * connection to rank 2 (...) failed: it closed the connection ..."). */
  const char* msg = ncclGetLastError(comm);
  char dead[32];
  snprintf(dead, sizeof dead, "rank %d (", n - 1);
  if (!strstr(msg, dead) || !strstr(msg, "failed")) {
    fprintf(stderr, "rank %d: ncclGetLastError: \"%s\"\n", rank, msg);
    ++gShimFailures;
  }
  /* Later calls fail at once with the same code; abort frees the communicator. */
  float x = 1;
  SHIM_CHECK(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, NULL) == ncclRemoteError);
  SHIM_OK(ncclCommAbort(comm));
  return gShimFailures != 0;
}

/* ---- shrink mode: survivors of a lost rank shrink, a replacement grows them back, then a
 * revoke ---- */

/* Shared with every forked rank (mapped before the fork): the id rank 0 makes for the grow. */
struct GrowHandover {
  volatile int ready;
  ncclUniqueId id;
  int returned; /* ranks whose AllReduce returned after the revoke (atomic builtins) */
};
static struct GrowHandover* gGrow;

static int shrinkRank(int rank, int n, const ncclUniqueId* ids) {
  gShimRank = rank;
  ncclComm_t comm = NULL, grown = NULL;
  SHIM_OK(ncclCommInitRank(&comm, n, ids[0], rank));
  if (!comm) return 1;
  allReduceGivesCount(comm, n); /* every connection is up */
  float x = 1;
  if (rank == n - 1) {
    /* Leaves without a goodbye (its peers see it fail), then comes back as the replacement. */
    SHIM_OK(ncclCommAbort(comm));
    while (!gGrow->ready) usleep(1000);
    SHIM_OK(ncclCommGrow(NULL, n, &gGrow->id, n - 1, &grown, NULL));
  } else {
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < 100000 && r == ncclSuccess; ++i)
      r = ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, NULL);
    SHIM_CHECK(r == ncclRemoteError);
    /* The survivors shrink without the lost rank (NCCL's flag), and keep their order. */
    int lost[1] = {n - 1};
    ncclComm_t survivors = NULL;
    SHIM_OK(ncclCommShrink(comm, lost, 1, &survivors, NULL, NCCL_SHRINK_ABORT));
    SHIM_OK(ncclCommDestroy(comm));
    if (!survivors) return 1;
    int count = 0, me = -1;
    SHIM_OK(ncclCommCount(survivors, &count));
    SHIM_OK(ncclCommUserRank(survivors, &me));
    SHIM_CHECK(count == n - 1 && me == rank);
    allReduceGivesCount(survivors, n - 1);
    /* Grow back to n: rank 0 makes the id, the replacement joins as rank n-1. */
    ncclUniqueId growId;
    if (rank == 0) {
      SHIM_OK(ncclCommGetUniqueId(survivors, &growId));
      gGrow->id = growId;
      gGrow->ready = 1;
    }
    SHIM_OK(ncclCommGrow(survivors, n, rank == 0 ? &growId : NULL, -1, &grown, NULL));
    SHIM_OK(ncclCommDestroy(survivors));
  }
  if (!grown) return 1;
  allReduceGivesCount(grown, n);
  /* Rank 0 revokes the grown communicator: the others' AllReduce returns, naming it. */
  if (rank == 0) {
    SHIM_OK(ncclCommRevoke(grown, NCCL_REVOKE_DEFAULT));
    /* Destroyed only once the others heard of the revoke (at most 20 s): a destroy before that
     * would be what they report (rank 0 left), not the revoke this checks. */
    for (int i = 0; i < 20000 && __atomic_load_n(&gGrow->returned, __ATOMIC_ACQUIRE) < n - 1; ++i)
      usleep(1000);
  } else {
    SHIM_CHECK(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, grown, NULL) == ncclRemoteError);
    const char* msg = ncclGetLastError(grown);
    if (!strstr(msg, "the communicator was revoked by rank 0 (")) {
      fprintf(stderr, "rank %d: ncclGetLastError: \"%s\"\n", rank, msg);
      ++gShimFailures;
    }
    __atomic_add_fetch(&gGrow->returned, 1, __ATOMIC_RELEASE);
  }
  SHIM_OK(ncclCommDestroy(grown));
  return gShimFailures != 0;
}

/* ---- local mode: InitAll and the refusals ---- */

static void initAllInOneGroup(void) {
  enum { N = 3 };
  ncclComm_t comms[N];
  SHIM_OK(ncclCommInitAll(comms, N, NULL));
  long in[N][4], out[N][4];
  SHIM_OK(ncclGroupStart());
  for (int r = 0; r < N; ++r) {
    for (int i = 0; i < 4; ++i) in[r][i] = r * 10 + i;
    SHIM_OK(ncclAllReduce(in[r], out[r], 4, ncclInt64, ncclSum, comms[r], NULL));
  }
  SHIM_OK(ncclGroupEnd());
  for (int r = 0; r < N; ++r)
    for (int i = 0; i < 4; ++i) SHIM_CHECK(out[r][i] == 30 + 3 * i);
  for (int r = 0; r < N; ++r) SHIM_OK(ncclCommDestroy(comms[r]));
}

static void refusals(void) {
  ncclComm_t comm = NULL;
  SHIM_OK(ncclCommInitAll(&comm, 1, NULL));
  float x[4] = {1, 2, 3, 4}, y[4];
  char expected[256];
  /* mixccl's own checks, its messages. */
  SHIM_FAILS(ncclAllReduce(x, y, 4, (ncclDataType_t)99, ncclSum, comm, NULL), ncclInvalidArgument,
             comm, "mixcclAllReduce: invalid datatype 99");
  SHIM_FAILS(ncclAllReduce(x, y, 4, ncclFloat, (ncclRedOp_t)42, comm, NULL), ncclInvalidArgument,
             comm, "mixcclAllReduce: invalid reduction op 42");
  SHIM_FAILS(ncclAllReduce(NULL, y, 4, ncclFloat, ncclSum, comm, NULL), ncclInvalidArgument, comm,
             "mixcclAllReduce: sendbuff is NULL");
  SHIM_FAILS(ncclBcast(x, 4, ncclFloat, 5, comm, NULL), ncclInvalidArgument, comm,
             "mixcclBroadcast: root 5 is out of range [0, 1)");
  SHIM_FAILS(ncclAllReduce(x, y, 4, ncclFloat, ncclSum, comm, (cudaStream_t)0x1),
             ncclInvalidArgument, comm,
             "mixcclAllReduce: the host adaptor takes a NULL stream (got 0x1): buffers are host memory");
  SHIM_FAILS(ncclAllReduce(x, y, 4, ncclFloat, ncclSum, NULL, NULL), ncclInvalidArgument, NULL,
             "mixcclAllReduce: comm is NULL");
  SHIM_FAILS(ncclSend(x, 4, ncclFloat, 3, comm, NULL), ncclInvalidArgument, comm,
             "mixcclSend: peer 3 is out of range [0, 1)");
  /* The shim's own: configs. */
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclComm_t c2 = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  SHIM_FAILS(ncclCommInitRankConfig(&c2, 1, id, 0, &config), ncclInvalidArgument, NULL,
             "ncclCommInitRankConfig: config magic 0x0 is not NCCL_CONFIG_INITIALIZER's 0xcafebeef");
  ncclConfig_t tiny = NCCL_CONFIG_INITIALIZER;
  tiny.size = 8;
  snprintf(expected, sizeof expected,
           "ncclCommInitRankConfig: config size 8 is below the smallest ncclConfig_t (%zu bytes): "
           "initialise it with NCCL_CONFIG_INITIALIZER", offsetof(ncclConfig_t, blocking) + sizeof(int));
  SHIM_FAILS(ncclCommInitRankConfig(&c2, 1, id, 0, &tiny), ncclInvalidArgument, NULL, expected);
  ncclConfig_t ib = NCCL_CONFIG_INITIALIZER;
  ib.netName = "IB";
  SHIM_FAILS(ncclCommSplit(comm, 0, 0, &c2, &ib), ncclInvalidArgument, NULL,
             "ncclCommSplit: config netName \"IB\" is not a mixccl transport (Socket or shm)");
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 7;
  SHIM_FAILS(ncclCommInitRankConfig(&c2, 1, id, 0, &blocking), ncclInvalidArgument, NULL,
             "ncclCommInitRankConfig: config blocking 7 is not 0 or 1");
  SHIM_FAILS(ncclCommInitRankScalable(&c2, 1, 0, 0, &id, NULL), ncclInvalidArgument, NULL,
             "ncclCommInitRankScalable: nId 0 must be at least 1");
  /* Every id reaches mixcclCommInitRankScalable (nId roots, not only the first id's). */
  ncclUniqueId twice[2] = {id, id};
  SHIM_FAILS(ncclCommInitRankScalable(&c2, 1, 0, 2, twice, NULL), ncclInvalidArgument, NULL,
             "mixcclCommInitRankScalable: nId 2 must be between 1 and nranks (1)");
  /* Shrink, revoke and grow are mixccl's: their argument checks. */
  SHIM_FAILS(ncclCommGrow(comm, 2, &id, 1, &c2, NULL), ncclInvalidArgument, comm,
             "mixcclCommGrow: rank 1 must be -1 on a rank of comm (it keeps its rank 0)");
  SHIM_FAILS(ncclCommShrink(comm, NULL, 0, &c2, NULL, 7), ncclInvalidArgument, comm,
             "mixcclCommShrink: flags 0x7 is neither MIXCCL_SHRINK_DEFAULT nor "
             "MIXCCL_SHRINK_ABORT");
  SHIM_FAILS(ncclCommRevoke(comm, 1), ncclInvalidArgument, comm,
             "mixcclCommRevoke: flags 0x1 must be MIXCCL_REVOKE_DEFAULT (0)");
  /* What mixccl cannot honour. */
  SHIM_FAILS(ncclGroupSimulateEnd(NULL), ncclInvalidUsage, NULL,
             "ncclGroupSimulateEnd: not supported by mixccl's NCCL shim: simulating a group with "
             "NCCL's performance model (docs/nccl-compat.md)");
  ncclWindow_t win;
  SHIM_FAILS(ncclCommWindowRegister(comm, x, sizeof x, &win, 0), ncclInvalidUsage, comm,
             "ncclCommWindowRegister: not supported by mixccl's NCCL shim: symmetric memory "
             "windows (docs/nccl-compat.md)");
  /* The newest message wins: a mixccl failure after a shim refusal. */
  SHIM_FAILS(ncclAllReduce(x, y, 4, (ncclDataType_t)77, ncclSum, comm, NULL), ncclInvalidArgument,
             comm, "mixcclAllReduce: invalid datatype 77");
  /* Memory and registration. */
  void* p = NULL;
  SHIM_FAILS(ncclMemAlloc(&p, 0), ncclInvalidArgument, NULL, "ncclMemAlloc: size is 0");
  SHIM_OK(ncclMemAlloc(&p, 1 << 16));
  if (access("/dev/nvidiactl", F_OK) != 0) { /* no GPU: host memory, usable by the host path */
    memcpy(p, x, sizeof x);
    SHIM_OK(ncclAllReduce(p, p, 4, ncclFloat, ncclSum, comm, NULL));
    SHIM_CHECK(((float*)p)[3] == 4);
    SHIM_OK(ncclMemFree(p));
    snprintf(expected, sizeof expected, "ncclMemFree: %p was not allocated by ncclMemAlloc", p);
    SHIM_FAILS(ncclMemFree(p), ncclInvalidArgument, NULL, expected);
  } else {
    SHIM_OK(ncclMemFree(p));
  }
  SHIM_FAILS(ncclCommRegister(comm, x, sizeof x, NULL), ncclInvalidArgument, NULL,
             "mixcclCommRegister: handle is NULL");
  void* h = NULL;
  SHIM_FAILS(ncclCommRegister(comm, NULL, 8, &h), ncclInvalidArgument, NULL,
             "mixcclCommRegister: buff is NULL with size 8");
  ncclComm_t other = NULL;
  SHIM_OK(ncclCommInitAll(&other, 1, NULL));
  SHIM_OK(ncclCommRegister(other, x, sizeof x, &h));
  /* Another communicator's handle is refused, and stays valid on its own communicator. */
  snprintf(expected, sizeof expected,
           "mixcclCommDeregister: %p is not a live registration handle of this communicator", h);
  SHIM_FAILS(ncclCommDeregister(comm, h), ncclInvalidArgument, NULL, expected);
  SHIM_OK(ncclCommDeregister(other, h));
  SHIM_OK(ncclCommRegister(other, x, sizeof x, &h));
  SHIM_OK(ncclCommDestroy(other)); /* frees its registrations */
  SHIM_FAILS(ncclCommDeregister(comm, h), ncclInvalidArgument, NULL, expected);
  /* PreMulSum refusals, mixccl's messages. */
  ncclRedOp_t op;
  float s = 2;
  SHIM_OK(ncclRedOpCreatePreMulSum(&op, &s, ncclFloat, ncclScalarHostImmediate, comm));
  double d = 1;
  SHIM_FAILS(ncclAllReduce(&d, &d, 1, ncclDouble, op, comm, NULL), ncclInvalidArgument, comm,
             "mixcclAllReduce: op 5 was created for datatype float, the call is on double");
  SHIM_OK(ncclAllReduce(x, y, 4, ncclFloat, op, comm, NULL));
  SHIM_CHECK(y[0] == 2 && y[3] == 8);
  SHIM_OK(ncclRedOpDestroy(op, comm));
  /* Result strings: mixccl's, for NCCL's codes. */
  SHIM_CHECK(strcmp(ncclGetErrorString(ncclInvalidUsage), "invalid usage") == 0);
  SHIM_CHECK(strcmp(ncclGetErrorString((ncclResult_t)99), "unknown result code") == 0);
  SHIM_OK(ncclCommDestroy(comm));
  SHIM_OK(ncclCommDestroy(NULL));
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "launcher") == 0) return launcherMode();
  if (argc >= 3 && strcmp(argv[1], "fork") == 0) {
    int n = atoi(argv[2]);
    if (n < 1 || n > 64) return 2;
    return forkMode(n, forkedRank);
  }
  if (argc >= 3 && strcmp(argv[1], "async") == 0) {
    int n = atoi(argv[2]);
    if (n < 2 || n > 64) return 2;
    return forkMode(n, asyncRank);
  }
  if (argc >= 3 && strcmp(argv[1], "shrink") == 0) {
    int n = atoi(argv[2]);
    if (n < 3 || n > 64) return 2;
    gGrow = mmap(NULL, sizeof *gGrow, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (gGrow == MAP_FAILED) return 2;
    return forkMode(n, shrinkRank);
  }
  if (argc >= 2 && strcmp(argv[1], "local") == 0) {
    gShimRank = 0;
    initAllInOneGroup();
    refusals();
    printf("local: %s\n", gShimFailures ? "FAILED" : "PASSED");
    return gShimFailures != 0;
  }
  fprintf(stderr, "usage: %s launcher | fork NRANKS | async NRANKS | shrink NRANKS | local\n",
          argv[0]);
  return 2;
}
