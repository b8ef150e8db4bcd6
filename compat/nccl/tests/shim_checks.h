/* Checks shared by the shim's C test programs: a failed check names the rank and line and makes
 * the rank fail; an error check compares the result code and ncclGetLastError's exact text. */
#ifndef MIXCCL_SHIM_CHECKS_H_
#define MIXCCL_SHIM_CHECKS_H_

#include <nccl.h>
#include <stdio.h>
#include <string.h>

static int gShimFailures;
static int gShimRank = -1;

#define SHIM_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "rank %d: check failed at line %d: %s\n", gShimRank, __LINE__, #cond); \
      ++gShimFailures;                                                                     \
    }                                                                                      \
  } while (0)

#define SHIM_OK(call)                                                                        \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      fprintf(stderr, "rank %d: line %d: %s returned %d: %s\n", gShimRank, __LINE__, #call, \
              (int)r_, ncclGetLastError(NULL));                                              \
      ++gShimFailures;                                                                       \
    }                                                                                        \
  } while (0)

/* call must return want, and ncclGetLastError(comm) must then read exactly message. */
#define SHIM_FAILS(call, want, comm, message)                                                  \
  do {                                                                                         \
    ncclResult_t r_ = (call);                                                                  \
    const char* m_ = ncclGetLastError(comm);                                                   \
    if (r_ != (want) || strcmp(m_, (message)) != 0) {                                          \
      fprintf(stderr, "rank %d: line %d: %s\n  returned %d, want %d\n  message \"%s\"\n  want    \"%s\"\n", \
              gShimRank, __LINE__, #call, (int)r_, (int)(want), m_, (message));                \
      ++gShimFailures;                                                                         \
    }                                                                                          \
  } while (0)

#endif
