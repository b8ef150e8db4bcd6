/* A C program outside the project that becomes a rank through the installed mixccl_launch
 * helper (mixccl::launch or pkg-config mixccl-launch). Without a launcher it is rank 0 of 1. */
#include <mixccl_launch.h>
#include <stdio.h>

int main(void) {
  mixcclLaunchInfo info;
  mixcclComm_t comm;
  if (mixcclLaunchInitComm(&comm, &info, NULL) != mixcclSuccess) {
    fprintf(stderr, "consumer_launch: %s\n", mixcclLaunchLastError());
    return 1;
  }
  double x = info.rank + 1;
  if (mixcclAllReduce(&x, &x, 1, mixcclDouble, mixcclSum, comm, NULL) != mixcclSuccess) return 2;
  mixcclCommDestroy(comm);
  double want = info.nranks * (info.nranks + 1) / 2.0;
  printf("consumer_launch: rank %d of %d (%s), result %.0f\n", info.rank, info.nranks,
         info.launcher, x);
  return x == want ? 0 : 3;
}
