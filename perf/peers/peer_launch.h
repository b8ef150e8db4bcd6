// Start-up shared by the C++ peers that meet through a directory (Gloo's FileStore, the roofs'
// pages): the rendezvous directory (-S DIR, else GLOO_STORE_DIR) and this process's rank and
// rank count from mixccl_launch's detection (mixcclrun, mpirun, srun, torchrun).
#ifndef MIXCCL_PEER_LAUNCH_H_
#define MIXCCL_PEER_LAUNCH_H_

#include <cstdio>
#include <cstdlib>

#include "mixccl_launch.h"
#include "peer_table.h"

// Returns 0, or 2 (the peers' usage-error status) after printing "prog: what is missing"
// (fewer than minRanks ranks included).
inline int peer_launch(const char* prog, const peer_args& a, const char** storeDir,
                       mixcclLaunchInfo* info, int minRanks = 1) {
  *storeDir = a.store ? a.store : std::getenv("GLOO_STORE_DIR");
  if (*storeDir == nullptr) {
    std::fprintf(stderr, "%s: give the rendezvous directory with -S DIR (or GLOO_STORE_DIR)\n",
                 prog);
    return 2;
  }
  if (mixcclLaunchDetect(info) != 0) {
    std::fprintf(stderr, "%s: %s\n", prog, mixcclLaunchLastError());
    return 2;
  }
  if (info->nranks < minRanks) {
    std::fprintf(stderr, "%s: needs at least %d ranks\n", prog, minRanks);
    return 2;
  }
  return 0;
}

#endif  // MIXCCL_PEER_LAUNCH_H_
