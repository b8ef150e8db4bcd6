// Surviving a lost rank: ncclCommShrink, ncclCommRevoke, ncclCommGetUniqueId and ncclCommGrow
// on mixccl's calls of the same names (docs/reliability.md, "Surviving a lost rank").
#include <cstring>

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

NCCL_SHIM_API ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr)
    return refuse(ncclInvalidArgument, "ncclCommGetUniqueId: uniqueId is NULL");
  mixcclUniqueId m;
  mixcclResult_t r = mixcclCommGetUniqueId(inner(comm), &m);
  if (r != mixcclSuccess) return forward(r);
  std::memset(uniqueId, 0, sizeof *uniqueId);
  std::memcpy(uniqueId, &m, sizeof m);
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommGetUniqueId)

NCCL_SHIM_API ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId,
                                        int rank, ncclComm_t* newcomm, ncclConfig_t* config) {
  const char* fn = "ncclCommGrow";
  if (newcomm == nullptr) return refuse(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  mixcclUniqueId id;
  if (uniqueId) std::memcpy(&id, uniqueId, sizeof id);
  const mixcclUniqueId* idp = uniqueId ? &id : nullptr;
  mixcclComm_t made = nullptr;
  mixcclResult_t r;
  if (config == nullptr) {
    r = mixcclCommGrow(inner(comm), nRanks, idp, rank, &made, nullptr);
  } else {
    mixcclConfig_t m;
    if (ncclResult_t bad = translateConfig(fn, config, &m); bad != ncclSuccess) return bad;
    r = mixcclCommGrow(inner(comm), nRanks, idp, rank, &made, &m);
  }
  *newcomm = outer(made);
  return forward(r);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommGrow)
