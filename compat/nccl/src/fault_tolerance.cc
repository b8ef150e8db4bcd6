// Surviving a lost rank: ncclCommShrink and ncclCommRevoke on mixcclCommShrink and
// mixcclCommRevoke (docs/reliability.md, "Surviving a lost rank"). Growing a communicator
// (ncclCommGetUniqueId, ncclCommGrow) is refused in unsupported.cc.
#include "config.h"
#include "shim.h"

using namespace nccl_shim;

static_assert(NCCL_SHRINK_DEFAULT == MIXCCL_SHRINK_DEFAULT && NCCL_SHRINK_ABORT == MIXCCL_SHRINK_ABORT,
              "the shrink flags must agree");
static_assert(NCCL_REVOKE_DEFAULT == MIXCCL_REVOKE_DEFAULT, "the revoke flags must agree");

NCCL_SHIM_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                          int excludeRanksCount, ncclComm_t* newcomm,
                                          ncclConfig_t* config, int shrinkFlags) {
  const char* fn = "ncclCommShrink";
  if (newcomm == nullptr) return refuse(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  mixcclComm_t made = nullptr;
  mixcclResult_t r;
  if (config == nullptr) {
    r = mixcclCommShrink(inner(comm), excludeRanksList, excludeRanksCount, &made, nullptr,
                         shrinkFlags);
  } else {
    mixcclConfig_t m;
    if (ncclResult_t bad = translateConfig(fn, config, &m); bad != ncclSuccess) return bad;
    r = mixcclCommShrink(inner(comm), excludeRanksList, excludeRanksCount, &made, &m,
                         shrinkFlags);
  }
  *newcomm = outer(made);
  return forward(r);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommShrink)

NCCL_SHIM_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return forward(mixcclCommRevoke(inner(comm), revokeFlags));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommRevoke)
