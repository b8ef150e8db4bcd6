// The fault-tolerance calls: mixcclCommRevoke (stop the communicator everywhere) and
// mixcclCommShrink (a new communicator of the survivors, shrink_rendezvous.h).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/api_support.h"
#include "core/shrink_rendezvous.h"
#include "base/log.h"

using namespace mixccl;

namespace {

// The exclude list, checked and sorted.
Result checkExcludeList(const char* fn, const Comm* comm, const int* list, int n,
                        std::vector<int>* out) {
  if (n < 0) return raiseError(mixcclInvalidArgument, "%s: excludeRanksCount %d < 0", fn, n);
  if (n > 0 && !list)
    return raiseError(mixcclInvalidArgument, "%s: excludeRanks is NULL but its count is %d", fn, n);
  out->assign(list, list + n);
  std::sort(out->begin(), out->end());
  for (size_t i = 0; i < out->size(); ++i) {
    const int r = (*out)[i];
    if (r < 0 || r >= comm->nranks)
      return raiseError(mixcclInvalidArgument, "%s: excluded rank %d is out of range [0, %d)", fn,
                        r, comm->nranks);
    if (i > 0 && (*out)[i - 1] == r)
      return raiseError(mixcclInvalidArgument, "%s: rank %d is excluded twice", fn, r);
    if (r == comm->rank)
      return raiseError(mixcclInvalidUsage, "%s: this rank (%d) is in its own exclude list: "
                        "excluded ranks do not call mixcclCommShrink", fn, r);
  }
  return mixcclSuccess;
}

Result shrinkComm(Comm* parent, const int* list, int n, Comm** out, const mixcclConfig_t* config,
                  int flags) {
  const char* fn = "mixcclCommShrink";
  if (!out) return raiseError(mixcclInvalidArgument, "%s: newcomm is NULL", fn);
  *out = nullptr;
  if (flags != MIXCCL_SHRINK_DEFAULT && flags != MIXCCL_SHRINK_ABORT)
    return raiseError(mixcclInvalidArgument, "%s: flags 0x%x is neither MIXCCL_SHRINK_DEFAULT "
                      "nor MIXCCL_SHRINK_ABORT", fn, (unsigned)flags);
  std::vector<int> excluded;
  MIXCCL_CHECK(checkExcludeList(fn, parent, list, n, &excluded));
  CommConfig cfg = parent->config;
  if (config) MIXCCL_CHECK(resolveConfig(config, &cfg));
  MIXCCL_CHECK(checkCommReady(fn, parent));
  std::string why;
  if (flags == MIXCCL_SHRINK_DEFAULT) {
    if (Result failed = parent->health.error(&why))
      return raiseError(failed, "%s: the communicator has failed (%s): shrink it with "
                        "MIXCCL_SHRINK_ABORT", fn, why.c_str());
  } else {
    stopCommWork(parent, "rank " + std::to_string(parent->rank) +
                             ": mixcclCommShrink with MIXCCL_SHRINK_ABORT stopped the communicator");
  }

  Deadline deadline = Deadline::afterSeconds(parent->config.timeoutS);
  ShrinkRendezvous meeting(parent, excluded, deadline);
  UniqueIdData id{};
  int newRank = 0, newNranks = 0;
  MIXCCL_CHECK(meeting.agree(&id, &newRank, &newNranks));
  INFO(kLogInit, "rank %d: mixcclCommShrink: excluding %s, new rank %d of %d", parent->rank,
       describeRankList(excluded).c_str(), newRank, newNranks);
  // Every survivor agreed the excluded ranks are gone: remove what they left by name.
  if (parent->proxy) parent->proxy->peersGone(excluded);
  // The meeting's connections carry the peer exchange; the new communicator connects afresh.
  // It is made blocking (the meeting cannot outlive this call) and then keeps the config's mode.
  CommConfig blocking = cfg;
  blocking.blocking = 1;
  PeerExchange overMeeting = [&](const PeerInfo& mine, std::vector<PeerInfo>* all) {
    return meeting.exchange(mine, all);
  };
  MIXCCL_CHECK(createComm(out, newNranks, id, newRank, blocking, parent->device, overMeeting));
  (*out)->config.blocking = cfg.blocking;
  return mixcclSuccess;
}

}  // namespace

MIXCCL_API mixcclResult_t mixcclCommShrink(mixcclComm_t comm, const int* excludeRanks, int n,
                                           mixcclComm_t* newcomm, mixcclConfig_t* config,
                                           int flags) {
  CommRef ref(comm);
  if (!ref) {
    if (newcomm) *newcomm = nullptr;
    return badComm("mixcclCommShrink", comm);
  }
  return finishCall(ref.get(), shrinkComm(ref.get(), excludeRanks, n, newcomm, config, flags));
}

MIXCCL_API mixcclResult_t mixcclCommRevoke(mixcclComm_t comm, int flags) {
  const char* fn = "mixcclCommRevoke";
  CommRef ref(comm);
  if (!ref) return badComm(fn, comm);
  if (flags != MIXCCL_REVOKE_DEFAULT)
    return finishCall(ref.get(), raiseError(mixcclInvalidArgument, "%s: flags 0x%x must be "
                                            "MIXCCL_REVOKE_DEFAULT (0)", fn, (unsigned)flags));
  Result ready = checkCommReady(fn, ref.get());
  if (ready != mixcclSuccess) return finishCall(ref.get(), ready);
  // The native library's work stops too; mixccl's own stops as the proxy fails it and tells
  // the peers (a communicator that has already failed told them then).
  if (ref->domainComm) ref->domainComm->abort();
  {
    std::lock_guard<std::mutex> lock(ref->stagedMutex);
    if (ref->staged) ref->staged->abort();
  }
  ref->proxy->revoke();
  return mixcclSuccess;
}
