// Growing a communicator: mixcclCommGetUniqueId (an id whose rendezvous root runs in the calling
// rank's process) and mixcclCommGrow (the ranks of comm keep their numbers, new ranks join with
// the id). The new communicator is made through that root like any other, so a joining rank
// authenticates with the id's fresh secret, as every rank does at init.
#include <cstring>
#include <string>
#include <vector>

#include "algo/algorithms.h"
#include "core/api_support.h"
#include "base/log.h"

using namespace mixccl;

namespace {

// What each existing rank brings to the grow: the new size, and the id if it holds it.
struct GrowOffer {
  int32_t nranks;
  int32_t hasId;
  mixcclUniqueId id;
};

Result growExisting(Comm* parent, int nranks, const mixcclUniqueId* uid, int rank, Comm** out,
                    const mixcclConfig_t* config) {
  const char* fn = "mixcclCommGrow";
  if (rank != -1)
    return raiseError(mixcclInvalidArgument, "%s: rank %d must be -1 on a rank of comm (it keeps "
                      "its rank %d)", fn, rank, parent->rank);
  if (nranks <= parent->nranks)
    return raiseError(mixcclInvalidArgument, "%s: nranks %d must exceed comm's %d ranks", fn,
                      nranks, parent->nranks);
  CommConfig cfg = parent->config;
  if (config) MIXCCL_CHECK(resolveConfig(config, &cfg));
  MIXCCL_CHECK(checkCommReady(fn, parent));
  std::string why;
  if (Result failed = parent->health.error(&why))
    return raiseError(failed, "%s: the communicator has failed: %s", fn, why.c_str());

  // The rank that made the id hands it to the others over comm, and all check they agree.
  GrowOffer mine{};
  mine.nranks = nranks;
  mine.hasId = uid != nullptr;
  if (uid) mine.id = *uid;
  std::vector<GrowOffer> all(parent->nranks);
  {
    Deadline deadline = Deadline::afterSeconds(parent->config.timeoutS);
    Transfers t(*parent->proxy, deadline);
    CollContext ctx{parent->rank, parent->nranks, t, parent->tuning.chunkBytes};
    MIXCCL_CHECK(ringAllGather(ctx, &mine, all.data(), sizeof(GrowOffer), mixcclUint8));
  }
  int holder = -1;
  for (int r = 0; r < parent->nranks; ++r) {
    if (all[r].nranks != nranks)
      return raiseError(mixcclInvalidUsage, "%s: rank %d grows to %d ranks but rank %d to %d", fn,
                        r, all[r].nranks, parent->rank, nranks);
    if (!all[r].hasId) continue;
    if (holder >= 0 && memcmp(&all[r].id, &all[holder].id, sizeof(mixcclUniqueId)) != 0)
      return raiseError(mixcclInvalidUsage, "%s: ranks %d and %d passed different unique ids", fn,
                        holder, r);
    if (holder < 0) holder = r;
  }
  if (holder < 0)
    return raiseError(mixcclInvalidUsage, "%s: no rank of comm passed the unique id (the rank "
                      "that called mixcclCommGetUniqueId passes it, the others NULL)", fn);
  UniqueIdData id;
  MIXCCL_CHECK(decodeUniqueId(all[holder].id, &id));
  INFO(kLogInit, "rank %d: mixcclCommGrow: %d ranks to %d (id from rank %d)", parent->rank,
       parent->nranks, nranks, holder);
  // Blocking like mixcclCommShrink; the new communicator then keeps the config's mode.
  CommConfig blocking = cfg;
  blocking.blocking = 1;
  MIXCCL_CHECK(createComm(out, nranks, id, parent->rank, blocking, parent->device));
  (*out)->config.blocking = cfg.blocking;
  return mixcclSuccess;
}

Result growJoining(int nranks, const mixcclUniqueId* uid, int rank, Comm** out,
                   const mixcclConfig_t* config) {
  const char* fn = "mixcclCommGrow";
  if (!uid)
    return raiseError(mixcclInvalidArgument, "%s: a joining rank (comm NULL) needs the unique id",
                      fn);
  if (nranks < 2) return raiseError(mixcclInvalidArgument, "%s: nranks %d < 2", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return raiseError(mixcclInvalidArgument, "%s: rank %d is out of range [0, %d)", fn, rank,
                      nranks);
  CommConfig cfg;
  MIXCCL_CHECK(resolveConfig(config, &cfg));
  UniqueIdData id;
  MIXCCL_CHECK(decodeUniqueId(*uid, &id));
  cfg.blocking = 1;
  Result r = createComm(out, nranks, id, rank, cfg, -1);
  if (r == mixcclSuccess && config && config->blocking != MIXCCL_CONFIG_UNDEF_INT)
    (*out)->config.blocking = config->blocking;
  return r;
}

}  // namespace

MIXCCL_API mixcclResult_t mixcclCommGetUniqueId(mixcclComm_t comm, mixcclUniqueId* uniqueId) {
  const char* fn = "mixcclCommGetUniqueId";
  CommRef ref(comm);
  if (!ref) return badComm(fn, comm);
  if (!uniqueId)
    return finishCall(ref.get(), raiseError(mixcclInvalidArgument, "%s: uniqueId is NULL", fn));
  Result ready = checkCommReady(fn, ref.get());
  if (ready != mixcclSuccess) return finishCall(ref.get(), ready);
  UniqueIdData id;
  Result r = createRootedUniqueId(&id);
  if (r == mixcclSuccess) encodeUniqueId(id, uniqueId);
  return finishCall(ref.get(), r);
}

MIXCCL_API mixcclResult_t mixcclCommGrow(mixcclComm_t comm, int nranks,
                                         const mixcclUniqueId* uniqueId, int rank,
                                         mixcclComm_t* newcomm, mixcclConfig_t* config) {
  const char* fn = "mixcclCommGrow";
  if (!newcomm) return raiseError(mixcclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = nullptr;
  if (!comm) return growJoining(nranks, uniqueId, rank, newcomm, config);
  CommRef ref(comm);
  if (!ref) return badComm(fn, comm);
  return finishCall(ref.get(), growExisting(ref.get(), nranks, uniqueId, rank, newcomm, config));
}
