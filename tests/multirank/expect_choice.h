/* Expectations about what mixccl chose for a communicator, checked through mixcclCommInspect
 * (never through log text): the transport to every peer, the algorithm of a collective of a
 * given size, the domain of every rank and every rank's adaptor. Shared by the multi-rank
 * programs (collective_matrix, multihost_check); public header only.
 *
 *   --expect-transport NAME           every peer ("shm", "socket", ...)
 *   --expect-transport-local NAME     peers on this rank's host (see ranksPerHost)
 *   --expect-transport-remote NAME    peers on other hosts
 *   --expect-transport-detail TEXT    every peer's transport_detail, or its first items before
 *                                     ", ..." (UCX: its transports, "tcp")
 *   --expect-algo COLL:BYTES:NAME     e.g. allreduce:8:rd, allgather:16777216:ring (repeatable)
 *   --expect-domains 0,1,1,1          domain index of every rank
 *   --expect-adaptors host,gloo,...   adaptor of every rank
 *   --expect-connect eager|lazy       when pairs connect (MIXCCL_CONNECT)
 *   --expect-connected-transport NAME after the run (countUnmetConnected): every connected peer
 *                                     has NAME, as many as "connected_peers" says, at least one
 *                                     (pairs connected on first use: the others have none) */
#ifndef MIXCCL_TEST_EXPECT_CHOICE_H_
#define MIXCCL_TEST_EXPECT_CHOICE_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixccl.h"

#define EXPECT_CHOICE_MAX_ALGOS 16

typedef struct {
  const char* transportLocal;   /* NULL: not checked */
  const char* transportRemote;  /* NULL: not checked */
  const char* transportDetail;  /* NULL: not checked */
  /* Ranks r and p share a host when r / ranksPerHost == p / ranksPerHost (launchers place
   * consecutive ranks on a host); 0: every rank on one host. */
  int ranksPerHost;
  const char* algos[EXPECT_CHOICE_MAX_ALGOS];
  int nalgos;
  const char* domains;
  const char* adaptors;
  const char* connect;
  const char* connectedTransport;  /* NULL: not checked */
} ChoiceExpectations;

/* "allreduce:8:rd" -> key "algo.allreduce.8" and name "rd"; 0 if malformed. */
static inline int expectAlgoParts(const char* spec, char* key, size_t keyLen, char* name,
                                  size_t nameLen) {
  const char* c1 = strchr(spec, ':');
  const char* c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c1 || !c2 || c2 == c1 + 1 || !c2[1]) return 0;
  size_t collLen = (size_t)(c1 - spec);
  if (!((collLen == 9 && !strncmp(spec, "allreduce", 9)) ||
        (collLen == 9 && !strncmp(spec, "allgather", 9)) ||
        (collLen == 9 && !strncmp(spec, "broadcast", 9)) ||
        (collLen == 6 && !strncmp(spec, "reduce", 6))))
    return 0;
  for (const char* d = c1 + 1; d < c2; ++d)
    if (*d < '0' || *d > '9') return 0;
  snprintf(key, keyLen, "algo.%.*s.%.*s", (int)collLen, spec, (int)(c2 - c1 - 1), c1 + 1);
  snprintf(name, nameLen, "%s", c2 + 1);
  return 1;
}

/* If argv[*a] is one of the options above, takes it and its value (advancing *a) and returns
 * 1; returns 0 for another argument and -1 (with a message) for a missing or malformed value. */
static inline int parseExpectOption(ChoiceExpectations* e, int argc, char** argv, int* a) {
  const char* opt = argv[*a];
  if (strncmp(opt, "--expect-", 9) != 0) return 0;
  const char* what = opt + 9;
  if (strcmp(what, "transport") && strcmp(what, "transport-local") &&
      strcmp(what, "transport-remote") && strcmp(what, "transport-detail") && strcmp(what, "algo") && strcmp(what, "domains") &&
      strcmp(what, "adaptors") && strcmp(what, "connect") && strcmp(what, "connected-transport"))
    return 0;
  if (*a + 1 >= argc || !argv[*a + 1][0]) {
    fprintf(stderr, "%s needs a value\n", opt);
    return -1;
  }
  const char* v = argv[++*a];
  if (!strcmp(what, "transport")) {
    e->transportLocal = e->transportRemote = v;
  } else if (!strcmp(what, "transport-local")) {
    e->transportLocal = v;
  } else if (!strcmp(what, "transport-remote")) {
    e->transportRemote = v;
  } else if (!strcmp(what, "transport-detail")) {
    e->transportDetail = v;
  } else if (!strcmp(what, "algo")) {
    char key[64], name[32];
    if (!expectAlgoParts(v, key, sizeof(key), name, sizeof(name)) ||
        e->nalgos == EXPECT_CHOICE_MAX_ALGOS) {
      fprintf(stderr, "--expect-algo %s: expected allreduce|allgather|broadcast|reduce:BYTES:NAME (at most %d)\n",
              v, EXPECT_CHOICE_MAX_ALGOS);
      return -1;
    }
    e->algos[e->nalgos++] = v;
  } else if (!strcmp(what, "domains")) {
    e->domains = v;
  } else if (!strcmp(what, "connected-transport")) {
    e->connectedTransport = v;
  } else if (!strcmp(what, "connect")) {
    e->connect = v;
  } else {
    e->adaptors = v;
  }
  return 1;
}

/* Compares the value of key with want; prints and returns 1 when they differ (or the query
 * fails), 0 when they agree. */
/* wholeOnly 0: got may go on after want with ", ..." (a detail's first items). */
static inline int expectInspectedAs(mixcclComm_t comm, int rank, const char* key, const char* want,
                                    int wholeOnly) {
  char got[512];
  mixcclResult_t res = mixcclCommInspect(comm, key, got, sizeof(got));
  if (res != mixcclSuccess) {
    fprintf(stderr, "rank %d: UNMET %s: expected %s, the query failed: %s (%s)\n", rank, key,
            want, mixcclGetErrorString(res), mixcclGetLastError(comm));
    return 1;
  }
  size_t n = strlen(want);
  int head = !wholeOnly && strncmp(got, want, n) == 0 && strncmp(got + n, ", ", 2) == 0;
  if (strcmp(got, want) != 0 && !head) {
    fprintf(stderr, "rank %d: UNMET %s is %s, expected %s\n", rank, key, got, want);
    return 1;
  }
  return 0;
}

static inline int expectInspected(mixcclComm_t comm, int rank, const char* key, const char* want) {
  return expectInspectedAs(comm, rank, key, want, 1);
}

/* Number of expectations that the communicator does not meet (each printed). */
static inline int countUnmetChoices(mixcclComm_t comm, int rank, int nranks,
                                    const ChoiceExpectations* e) {
  int unmet = 0;
  int perHost = e->ranksPerHost > 0 ? e->ranksPerHost : nranks;
  char key[64];
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    const char* want = p / perHost == rank / perHost ? e->transportLocal : e->transportRemote;
    if (!want) continue;
    snprintf(key, sizeof(key), "transport.%d", p);
    unmet += expectInspected(comm, rank, key, want);
  }
  for (int p = 0; p < nranks && e->transportDetail; ++p) {
    if (p == rank) continue;
    snprintf(key, sizeof(key), "transport_detail.%d", p);
    unmet += expectInspectedAs(comm, rank, key, e->transportDetail, 0);
  }
  for (int i = 0; i < e->nalgos; ++i) {
    char name[32];
    expectAlgoParts(e->algos[i], key, sizeof(key), name, sizeof(name));
    unmet += expectInspected(comm, rank, key, name);
  }
  if (e->domains) unmet += expectInspected(comm, rank, "domains", e->domains);
  if (e->connect) unmet += expectInspected(comm, rank, "connect", e->connect);
  if (e->adaptors) {
    for (int p = 0; p < nranks; ++p) {
      char want[64] = "";
      const char* list = e->adaptors;
      for (int i = 0; list && i <= p; ++i) { /* item p of the comma list */
        const char* end = strchr(list, ',');
        size_t n = end ? (size_t)(end - list) : strlen(list);
        if (i == p) snprintf(want, sizeof(want), "%.*s", (int)n, list);
        list = end ? end + 1 : NULL;
      }
      snprintf(key, sizeof(key), "adaptor.%d", p);
      unmet += expectInspected(comm, rank, key, want[0] ? want : "(none listed)");
    }
  }
  return unmet;
}

/* --expect-connected-transport, once the run has connected what it used. */
static inline int countUnmetConnected(mixcclComm_t comm, int rank, int nranks,
                                      const ChoiceExpectations* e) {
  if (!e->connectedTransport) return 0;
  int unmet = 0, connected = 0;
  char key[64], got[64];
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    snprintf(key, sizeof(key), "transport.%d", p);
    if (mixcclCommInspect(comm, key, got, sizeof(got)) != mixcclSuccess) return 1;
    if (!got[0]) continue;
    ++connected;
    unmet += expectInspected(comm, rank, key, e->connectedTransport);
  }
  char count[16];
  snprintf(count, sizeof(count), "%d", connected);
  unmet += expectInspected(comm, rank, "connected_peers", count);
  if (nranks > 1 && connected == 0) {
    fprintf(stderr, "rank %d: UNMET no peer connected after the run\n", rank);
    ++unmet;
  }
  return unmet;
}

#endif
