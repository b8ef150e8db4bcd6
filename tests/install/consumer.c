/* A program outside the project that only knows the installed header and library. */
#include <mixccl.h>
#include <stdio.h>

int main(void) {
  int version = 0;
  if (mixcclGetVersion(&version) != mixcclSuccess || version != MIXCCL_VERSION_CODE) return 1;
  mixcclComm_t comm;
  mixcclComm_t comms[1];
  if (mixcclCommInitAll(comms, 1, NULL) != mixcclSuccess) return 2;
  comm = comms[0];
  double x = 21;
  if (mixcclAllReduce(&x, &x, 1, mixcclDouble, mixcclSum, comm, NULL) != mixcclSuccess) return 3;
  mixcclCommDestroy(comm);
  printf("consumer: version %d, result %.0f\n", version, x);
  return x == 21 ? 0 : 4;
}
