// The host-side team queries of NCCL's device API. They return values, not results, so they are
// answered from what mixccl has: no rank's memory is load/store accessible from another through
// mixccl, so each LSA team is the rank alone, and the rail team (the same LSA rank in every
// LSA team) is then the whole communicator, like the world team. A bad communicator gives an
// empty team (and -1 ranks) with the error recorded for ncclGetLastError.
#include "shim.h"

using namespace nccl_shim;

namespace {

bool rankOf(const char* fn, ncclComm_t comm, int* rank, int* nranks) {
  if (mixcclCommUserRank(inner(comm), rank) == mixcclSuccess &&
      mixcclCommCount(inner(comm), nranks) == mixcclSuccess)
    return true;
  refuseQuietly("%s: %s", fn, mixcclGetLastError(nullptr));
  return false;
}

ncclTeam_t team(int nRanks, int rank, int stride) {
  ncclTeam_t t;
  t.nRanks = nRanks;
  t.rank = rank;
  t.stride = stride;
  return t;
}

}  // namespace

NCCL_SHIM_API ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  int rank, n;
  return rankOf("ncclTeamWorld", comm, &rank, &n) ? team(n, rank, 1) : team(0, 0, 0);
}
NCCL_SHIM_PROFILING_ALIAS_TYPED(ncclTeam_t, ncclTeamWorld, (ncclComm_t))

NCCL_SHIM_API ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  int rank, n;
  return rankOf("ncclTeamLsa", comm, &rank, &n) ? team(1, 0, 1) : team(0, 0, 0);
}
NCCL_SHIM_PROFILING_ALIAS_TYPED(ncclTeam_t, ncclTeamLsa, (ncclComm_t))

NCCL_SHIM_API ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  int rank, n;
  return rankOf("ncclTeamRail", comm, &rank, &n) ? team(n, rank, 1) : team(0, 0, 0);
}
NCCL_SHIM_PROFILING_ALIAS_TYPED(ncclTeam_t, ncclTeamRail, (ncclComm_t))

// A team's rank r is the world rank at r's distance (in strides) from this rank's place.
NCCL_SHIM_API int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t t, int r) {
  int rank, n;
  if (!rankOf("ncclTeamRankToWorld", comm, &rank, &n)) return -1;
  return rank + (r - t.rank) * t.stride;
}
NCCL_SHIM_PROFILING_ALIAS_TYPED(int, ncclTeamRankToWorld, (ncclComm_t, ncclTeam_t, int))

// This rank is LSA rank 0 of its one-rank LSA team.
NCCL_SHIM_API int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t t, int r) {
  int rank, n;
  if (!rankOf("ncclTeamRankToLsa", comm, &rank, &n)) return -1;
  return (r - t.rank) * t.stride;
}
NCCL_SHIM_PROFILING_ALIAS_TYPED(int, ncclTeamRankToLsa, (ncclComm_t, ncclTeam_t, int))
