// Unique ids and every way to make a communicator.
#include <cstring>
#include <vector>

#include "config.h"
#include "shim.h"

using namespace nccl_shim;

static_assert(sizeof(mixcclUniqueId) <= sizeof(ncclUniqueId),
              "mixccl's unique id must fit in NCCL's 128 bytes");
static_assert(sizeof(ncclComm_t) == sizeof(mixcclComm_t), "a communicator is one handle");

namespace {

mixcclUniqueId toMixccl(const ncclUniqueId& id) {
  mixcclUniqueId m;
  std::memcpy(&m, &id, sizeof m);
  return m;
}

// InitRank with an optional NCCL config: the one path of the rank-wise inits.
ncclResult_t initRank(const char* fn, ncclComm_t* comm, int nranks, const ncclUniqueId& id,
                      int rank, ncclConfig_t* config) {
  if (comm == nullptr) return refuse(ncclInvalidArgument, "%s: comm is NULL", fn);
  mixcclComm_t made = nullptr;
  mixcclResult_t r;
  if (config == nullptr) {
    r = mixcclCommInitRank(&made, nranks, toMixccl(id), rank);
  } else {
    mixcclConfig_t m;
    if (ncclResult_t bad = translateConfig(fn, config, &m); bad != ncclSuccess) return bad;
    r = mixcclCommInitRankConfig(&made, nranks, toMixccl(id), rank, &m);
  }
  *comm = outer(made);
  return forward(r);
}

}  // namespace

NCCL_SHIM_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return refuse(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  mixcclUniqueId m;
  mixcclResult_t r = mixcclGetUniqueId(&m);
  if (r != mixcclSuccess) return forward(r);
  std::memset(uniqueId, 0, sizeof *uniqueId);
  std::memcpy(uniqueId, &m, sizeof m);
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclGetUniqueId)

NCCL_SHIM_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                            int rank) {
  return initRank("ncclCommInitRank", comm, nranks, commId, rank, nullptr);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommInitRank)

NCCL_SHIM_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                  ncclUniqueId commId, int rank,
                                                  ncclConfig_t* config) {
  return initRank("ncclCommInitRankConfig", comm, nranks, commId, rank, config);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommInitRankConfig)

// The nId ids are nId rendezvous roots, as NCCL's: mixcclCommInitRankScalable splits the ranks
// into the same contiguous blocks, block k through commIds[k].
NCCL_SHIM_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                    int nId, ncclUniqueId* commIds,
                                                    ncclConfig_t* config) {
  const char* fn = "ncclCommInitRankScalable";
  if (newcomm == nullptr) return refuse(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  if (nId < 1) return refuse(ncclInvalidArgument, "%s: nId %d must be at least 1", fn, nId);
  if (commIds == nullptr) return refuse(ncclInvalidArgument, "%s: commIds is NULL", fn);
  std::vector<mixcclUniqueId> ids;
  for (int k = 0; k < nId; ++k) ids.push_back(toMixccl(commIds[k]));
  mixcclComm_t made = nullptr;
  mixcclResult_t r;
  if (config == nullptr) {
    r = mixcclCommInitRankScalable(&made, nranks, myrank, nId, ids.data(), nullptr);
  } else {
    mixcclConfig_t m;
    if (ncclResult_t bad = translateConfig(fn, config, &m); bad != ncclSuccess) return bad;
    r = mixcclCommInitRankScalable(&made, nranks, myrank, nId, ids.data(), &m);
  }
  *newcomm = outer(made);
  return forward(r);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommInitRankScalable)

NCCL_SHIM_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr) return refuse(ncclInvalidArgument, "ncclCommInitAll: comms is NULL");
  // ncclComm_t and mixcclComm_t are the same handle (static_assert above): one array serves.
  return forward(mixcclCommInitAll(reinterpret_cast<mixcclComm_t*>(comms), ndev, devlist));
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommInitAll)

NCCL_SHIM_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                         ncclConfig_t* config) {
  static_assert(NCCL_SPLIT_NOCOLOR == MIXCCL_SPLIT_NOCOLOR, "the no-color marker must agree");
  const char* fn = "ncclCommSplit";
  if (newcomm == nullptr) return refuse(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  mixcclComm_t made = nullptr;
  mixcclResult_t r;
  if (config == nullptr) {
    r = mixcclCommSplit(inner(comm), color, key, &made, nullptr);
  } else {
    mixcclConfig_t m;
    if (ncclResult_t bad = translateConfig(fn, config, &m); bad != ncclSuccess) return bad;
    r = mixcclCommSplit(inner(comm), color, key, &made, &m);
  }
  *newcomm = outer(made);
  return forward(r);
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommSplit)
