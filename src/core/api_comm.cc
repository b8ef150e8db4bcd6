// The public communicator calls: ids, init, split, finalize, destroy, abort and queries.
#include <algorithm>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "adaptors/adaptor_loader.h"
#include "algo/algorithms.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "core/api_support.h"
#include "base/env.h"
#include "base/log.h"

using namespace mixccl;

namespace mixccl {
Result checkRankArg(const char* fn, int rank, int nranks);
}

namespace {

Result initRank(Comm** out, int nranks, const mixcclUniqueId& uid, int rank,
                const mixcclConfig_t* config, int device) {
  const char* fn = "mixcclCommInitRank";
  if (!out) return raiseError(mixcclInvalidArgument, "%s: comm pointer is NULL", fn);
  *out = nullptr;
  if (nranks < 1) return raiseError(mixcclInvalidArgument, "%s: nranks %d < 1", fn, nranks);
  MIXCCL_CHECK(checkRankArg(fn, rank, nranks));
  CommConfig cfg;
  MIXCCL_CHECK(resolveConfig(config, &cfg));
  UniqueIdData id;
  MIXCCL_CHECK(decodeUniqueId(uid, &id));
  return createComm(out, nranks, id, rank, cfg, device);
}

// Several roots: the rendezvous replaces the one through the id's root (comm_init.cc), in the
// background too for a non-blocking config.
Result initRankScalable(Comm** out, int nranks, int rank, int nId, const mixcclUniqueId* uids,
                        const mixcclConfig_t* config) {
  const char* fn = "mixcclCommInitRankScalable";
  if (!out) return raiseError(mixcclInvalidArgument, "%s: newcomm is NULL", fn);
  *out = nullptr;
  if (nranks < 1) return raiseError(mixcclInvalidArgument, "%s: nranks %d < 1", fn, nranks);
  MIXCCL_CHECK(checkRankArg(fn, rank, nranks));
  if (nId < 1 || nId > nranks)
    return raiseError(mixcclInvalidArgument, "%s: nId %d must be between 1 and nranks (%d)", fn,
                      nId, nranks);
  if (!uids) return raiseError(mixcclInvalidArgument, "%s: commIds is NULL", fn);
  CommConfig cfg;
  MIXCCL_CHECK(resolveConfig(config, &cfg));
  std::vector<UniqueIdData> ids(nId);
  for (int k = 0; k < nId; ++k) MIXCCL_CHECK(decodeUniqueId(uids[k], &ids[k]));
  const double timeoutS = cfg.timeoutS;
  PeerExchange throughRoots = [ids, rank, nranks, timeoutS](const PeerInfo& mine,
                                                            std::vector<PeerInfo>* all) {
    return rendezvous(ids, rank, nranks, mine, Deadline::afterSeconds(timeoutS), all);
  };
  return createComm(out, nranks, ids[0], rank, cfg, -1, throughRoots);
}

Result splitComm(Comm* parent, int color, int key, Comm** out, const mixcclConfig_t* config) {
  const char* fn = "mixcclCommSplit";
  if (!out) return raiseError(mixcclInvalidArgument, "%s: newcomm is NULL", fn);
  *out = nullptr;
  if (color < 0 && color != MIXCCL_SPLIT_NOCOLOR)
    return raiseError(mixcclInvalidArgument, "%s: color %d must be >= 0 or MIXCCL_SPLIT_NOCOLOR",
                      fn, color);
  CommConfig cfg = parent->config;
  if (config) MIXCCL_CHECK(resolveConfig(config, &cfg));
  MIXCCL_CHECK(checkCommReady(fn, parent));
  std::string why;
  if (Result failed = parent->health.error(&why))
    return raiseError(failed, "%s: the parent communicator has failed: %s", fn, why.c_str());

  const int n = parent->nranks;
  Deadline deadline = Deadline::afterSeconds(parent->config.timeoutS);
  Transfers t(*parent->proxy, deadline);
  CollContext ctx{parent->rank, n, t, parent->tuning.chunkBytes};
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * (size_t)n);
  MIXCCL_CHECK(ringAllGather(ctx, mine, all.data(), 2, mixcclInt32));
  if (color == MIXCCL_SPLIT_NOCOLOR) return mixcclSuccess;

  std::vector<std::tuple<int, int>> members;  // (key, old rank)
  for (int r = 0; r < n; ++r)
    if (all[2 * r] == color) members.emplace_back(all[2 * r + 1], r);
  std::sort(members.begin(), members.end());
  int newRank = 0;
  for (size_t i = 0; i < members.size(); ++i)
    if (std::get<1>(members[i]) == parent->rank) newRank = (int)i;
  const int leader = std::get<1>(members[0]);

  // The new communicator's leader makes its secret and hash and tells the others. A blocking
  // split needs no rendezvous root: the members exchange their peer info over the parent's
  // connections (a ring over the members, in their new order). A non-blocking one finishes on
  // another thread while the caller may use the parent, so it rendezvous through a fresh root.
  UniqueIdData id{};
  if (parent->rank == leader) {
    MIXCCL_CHECK(cfg.blocking ? createRootlessUniqueId(&id) : createRootedUniqueId(&id));
    for (size_t i = 1; i < members.size(); ++i) t.send(std::get<1>(members[i]), &id, sizeof(id));
  } else {
    t.recv(leader, &id, sizeof(id));
  }
  MIXCCL_CHECK(t.waitAll());
  if (!cfg.blocking)
    // *out is set and the result is mixcclInProgress.
    return createComm(out, (int)members.size(), id, newRank, cfg, parent->device);
  std::vector<int> parentRanks;
  for (const auto& m : members) parentRanks.push_back(std::get<1>(m));
  PeerExchange overParent = [&](const PeerInfo& mine, std::vector<PeerInfo>* all) {
    Transfers among(*parent->proxy, deadline, parentRanks);
    CollContext mc{newRank, (int)parentRanks.size(), among, parent->tuning.chunkBytes};
    all->assign(parentRanks.size(), PeerInfo{});
    return ringAllGather(mc, &mine, all->data(), sizeof(PeerInfo), mixcclUint8);
  };
  return createComm(out, (int)members.size(), id, newRank, cfg, parent->device, overParent);
}

}  // namespace

namespace mixccl {
Result checkRankArg(const char* fn, int rank, int nranks) {
  if (rank < 0 || rank >= nranks)
    return raiseError(mixcclInvalidArgument, "%s: rank %d is out of range [0, %d)", fn, rank,
                      nranks);
  return mixcclSuccess;
}
}  // namespace mixccl

MIXCCL_API mixcclResult_t mixcclGetVersion(int* version) {
  if (!version) return raiseError(mixcclInvalidArgument, "mixcclGetVersion: version is NULL");
  *version = MIXCCL_VERSION_CODE;
  return mixcclSuccess;
}

MIXCCL_API mixcclResult_t mixcclGetUniqueId(mixcclUniqueId* uniqueId) {
  if (!uniqueId) return raiseError(mixcclInvalidArgument, "mixcclGetUniqueId: uniqueId is NULL");
  UniqueIdData id;
  if (!env().commId.empty()) {
    MIXCCL_CHECK(uniqueIdFromEnv(env().commId, env().commSecret, &id));
  } else {
    MIXCCL_CHECK(createRootedUniqueId(&id));
  }
  encodeUniqueId(id, uniqueId);
  return mixcclSuccess;
}

MIXCCL_API mixcclResult_t mixcclCommInitRank(mixcclComm_t* comm, int nranks,
                                             mixcclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr, -1);
}

MIXCCL_API mixcclResult_t mixcclCommInitRankConfig(mixcclComm_t* comm, int nranks,
                                                   mixcclUniqueId commId, int rank,
                                                   mixcclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config, -1);
}

MIXCCL_API mixcclResult_t mixcclCommInitRankScalable(mixcclComm_t* newcomm, int nranks,
                                                     int myrank, int nId,
                                                     mixcclUniqueId* commIds,
                                                     mixcclConfig_t* config) {
  return initRankScalable(newcomm, nranks, myrank, nId, commIds, config);
}

MIXCCL_API mixcclResult_t mixcclCommInitAll(mixcclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "mixcclCommInitAll";
  if (!comms) return raiseError(mixcclInvalidArgument, "%s: comms is NULL", fn);
  if (ndev < 1) return raiseError(mixcclInvalidArgument, "%s: ndev %d < 1", fn, ndev);
  UniqueIdData id;
  MIXCCL_CHECK(createRootedUniqueId(&id));
  mixcclUniqueId uid;
  encodeUniqueId(id, &uid);
  std::vector<Result> results(ndev, mixcclSuccess);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] {
      results[i] = initRank(&comms[i], ndev, uid, i, nullptr, devlist ? devlist[i] : i);
      if (results[i] != mixcclSuccess) errors[i] = threadLastError();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (results[i] == mixcclSuccess) continue;
    for (int j = 0; j < ndev; ++j)
      if (comms[j]) mixcclCommAbort(comms[j]);
    return adoptError(results[i], errors[i]);
  }
  return mixcclSuccess;
}

MIXCCL_API mixcclResult_t mixcclCommSplit(mixcclComm_t comm, int color, int key,
                                          mixcclComm_t* newcomm, mixcclConfig_t* config) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommSplit", comm);
  Result r = splitComm(ref.get(), color, key, newcomm, config);
  return r == mixcclInProgress ? r : finishCall(ref.get(), r);
}

MIXCCL_API mixcclResult_t mixcclCommFinalize(mixcclComm_t comm) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommFinalize", comm);
  Result ready = checkCommReady("mixcclCommFinalize", ref.get());
  if (ready != mixcclSuccess) return finishCall(ref.get(), ready);
  // Host-memory calls complete before they return; staged device collectives (several
  // domains) may still be queued: finish them first, like ncclCommFinalize.
  {
    std::lock_guard<std::mutex> lock(ref->stagedMutex);
    if (ref->staged) ref->staged->waitIdle();
  }
  ref->finalized.store(true);
  std::string why;
  return finishCall(ref.get(), ref->health.error(&why));
}

MIXCCL_API mixcclResult_t mixcclCommDestroy(mixcclComm_t comm) {
  if (!comm) return mixcclSuccess;  // like free(NULL) and ncclCommDestroy(NULL)
  if (!unregisterComm(comm)) return badComm("mixcclCommDestroy", comm);
  comm->stopInit();  // a non-blocking init still running is cancelled and joined
  comm->staged.reset();  // queued staged collectives finish before the goodbye
  if (comm->connector) comm->connector->stop();  // no pair is connected while leaving
  if (comm->proxy) comm->proxy->shutdownGracefully();
  releaseComm(comm);
  return mixcclSuccess;
}

MIXCCL_API mixcclResult_t mixcclCommAbort(mixcclComm_t comm) {
  if (!comm) return mixcclSuccess;
  CommRef ref(comm);
  if (!ref || !unregisterComm(comm)) return badComm("mixcclCommAbort", comm);
  ref->stopInit();  // a non-blocking init still running is cancelled and joined
  stopCommWork(ref.get(), "rank " + std::to_string(ref->rank) + ": mixcclCommAbort was called");
  releaseComm(comm);  // the owner's reference; ref keeps it alive until this returns
  return mixcclSuccess;
}

MIXCCL_API mixcclResult_t mixcclCommGetAsyncError(mixcclComm_t comm, mixcclResult_t* asyncError) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommGetAsyncError", comm);
  if (!asyncError)
    return raiseError(mixcclInvalidArgument, "mixcclCommGetAsyncError: asyncError is NULL");
  // Initialising: mixcclInProgress; init failed: its error; then the proxy's first failure.
  Result state = (Result)ref->initState.load(std::memory_order_acquire);
  std::string why;
  if (state == mixcclSuccess) {
    state = ref->health.error(&why);
    // The native library's own asynchronous error (work it accepted that failed later, e.g. a
    // peer's abort) fails the communicator like any other failure, logged once there.
    std::string native;
    Result async = state == mixcclSuccess && ref->domainComm ? ref->domainComm->asyncError(&native)
                                                             : mixcclSuccess;
    if (async != mixcclSuccess) {
      ref->health.fail(async, native);
      state = ref->health.error(&why);
    }
  } else if (state != mixcclInProgress) {
    why = ref->initError;  // written before initState
  }
  // A failure found here is reported like a failed call's: mixcclGetLastError(comm) (and the
  // thread's) then says what it was. It was logged when it happened, so not again.
  if (state != mixcclSuccess && state != mixcclInProgress && !why.empty()) {
    ref->setLastError(why);
    adoptError(state, why);
  }
  *asyncError = state;
  return mixcclSuccess;
}

MIXCCL_API const char* mixcclGetErrorString(mixcclResult_t result) { return resultString(result); }

MIXCCL_API const char* mixcclGetLastError(mixcclComm_t comm) {
  thread_local std::string copy;
  CommRef ref(comm);
  copy = ref ? ref->getLastError() : threadLastError();
  return copy.c_str();
}

MIXCCL_API mixcclResult_t mixcclCommCount(const mixcclComm_t comm, int* count) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommCount", comm);
  if (!count) return raiseError(mixcclInvalidArgument, "mixcclCommCount: count is NULL");
  *count = ref->nranks;
  return mixcclSuccess;
}

MIXCCL_API mixcclResult_t mixcclCommUserRank(const mixcclComm_t comm, int* rank) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommUserRank", comm);
  if (!rank) return raiseError(mixcclInvalidArgument, "mixcclCommUserRank: rank is NULL");
  *rank = ref->rank;
  return mixcclSuccess;
}

// The rank's adaptor table, so a program (the perf tools) allocates and copies buffers of the
// memory kind the communicator's collectives take, as nccl-tests uses cudaMalloc.
MIXCCL_API mixcclResult_t mixcclCommGetAdaptor(const mixcclComm_t comm,
                                               const mixcclAdaptor_v2_t** adaptor) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommGetAdaptor", comm);
  if (!adaptor) return raiseError(mixcclInvalidArgument, "mixcclCommGetAdaptor: adaptor is NULL");
  if (!ref->adaptor)
    return raiseError(mixcclInvalidUsage,
                      "mixcclCommGetAdaptor: the communicator has no adaptor yet");
  *adaptor = &ref->adaptor->publicTable;
  return mixcclSuccess;
}

MIXCCL_API mixcclResult_t mixcclCommDevice(const mixcclComm_t comm, int* device) {
  CommRef ref(comm);
  if (!ref) return badComm("mixcclCommDevice", comm);
  if (!device) return raiseError(mixcclInvalidArgument, "mixcclCommDevice: device is NULL");
  *device = ref->device;
  return mixcclSuccess;
}
