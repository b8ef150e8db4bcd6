/* A check inside a rank body (a function returning int, with a variable `rank` in scope):
 * on failure it says which rank and line, and the rank returns 1. */
#ifndef MIXCCL_TEST_RANK_CHECK_H_
#define MIXCCL_TEST_RANK_CHECK_H_

#include <stdio.h>

#define RANK_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "rank %d: check failed at line %d: %s\n", rank, __LINE__, #cond); \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

#endif
