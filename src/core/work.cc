#include "core/work.h"

#include <cstring>
#include <deque>

#include "adaptors/adaptor_loader.h"
#include "algo/domain_coll.h"
#include "base/env.h"
#include "base/error.h"
#include "core/collective_dispatch.h"
#include "core/mismatch_check.h"
#include "core/staged_transfers.h"

namespace mixccl {
namespace {

// Sends to self match receives from self in order, like any other peer.
Result matchSelfTransfers(Comm* comm, const std::vector<WorkItem*>& items) {
  std::deque<WorkItem*> sends, recvs;
  for (WorkItem* w : items) {
    if (w->peer != comm->rank) continue;
    if (w->kind == WorkItem::Kind::Send) sends.push_back(w);
    if (w->kind == WorkItem::Kind::Recv) recvs.push_back(w);
  }
  if (sends.size() != recvs.size())
    return raiseError(mixcclInvalidUsage,
                      "rank %d: %zu sends to itself but %zu receives from itself in one group "
                      "(they would never complete)", comm->rank, sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); ++i) {
    if (sends[i]->bytes != recvs[i]->bytes)
      return raiseError(mixcclInvalidUsage,
                        "rank %d: send to itself of %zu bytes matched with a receive of %zu bytes",
                        comm->rank, sends[i]->bytes, recvs[i]->bytes);
    if (sends[i]->bytes) memmove(recvs[i]->buf, sends[i]->buf, sends[i]->bytes);
  }
  return mixcclSuccess;
}

// Device memory: in one native domain the sends and receives go to the library in one group;
// in a job of several domains they are staged through host memory (staged_transfers.h).
Result nativeTransfers(Comm* comm, const std::vector<WorkItem*>& items) {
  bool any = false;
  for (WorkItem* w : items) any = any || w->kind != WorkItem::Kind::Collective;
  if (!any) return mixcclSuccess;
  if (!(comm->domainMap.single() && comm->domainComm)) return runStagedTransfers(comm, items);
  const AdaptorTable& t = comm->domainComm->table();
  void* nc = comm->domainComm->native();
  MIXCCL_CHECK(checkNative(t, "groupStart", t.groupStart()));
  mixcclResult_t r = mixcclSuccess;
  for (WorkItem* w : items) {
    if (r != mixcclSuccess || w->kind == WorkItem::Kind::Collective) continue;
    r = w->kind == WorkItem::Kind::Send ? t.send(w->buf, w->count, w->type, w->peer, nc, w->stream)
                                        : t.recv(w->buf, w->count, w->type, w->peer, nc, w->stream);
  }
  mixcclResult_t end = t.groupEnd();
  MIXCCL_CHECK(checkNative(t, "Send/Recv", r));
  return checkNative(t, "groupEnd", end);
}

Result checkNotFailed(Comm* comm) {
  if (!comm->health.failed()) return mixcclSuccess;
  std::string why;
  Result failed = comm->health.error(&why);
  return raiseError(failed, "rank %d: the communicator has failed earlier: %s", comm->rank,
                    why.c_str());
}

// One collective: on the shared-memory slots where they take it, else the chosen algorithm
// through the proxy. deadline: the group's, or null for one from now.
Result runOneCollective(Comm* comm, WorkItem* w, const Deadline* deadline) {
  const bool deviceMemory = comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY;
  // Host memory is scaled here; device memory in the staged job (runCollective).
  const bool stagedPreMul = w->isPreMul && deviceMemory;
  if (w->isPreMul && !deviceMemory)
    applyPreMulSum(w->preMul, comm->rank, comm->nranks, &w->call, &w->scaled);
  if (!stagedPreMul && slotsTake(comm, w->call)) return runOnSlots(comm, w->call);
  Transfers t(*comm->proxy, deadline ? *deadline : Deadline::afterSeconds(comm->config.timeoutS));
  t.setStamp(callStampOf(w->call));
  CollContext ctx{comm->rank, comm->nranks, t, comm->tuning.chunkBytes,
                  comm->tuning.rhThresholdBytes};
  Result r = runCollective(comm, ctx, w->call, stagedPreMul ? &w->preMul : nullptr);
  if (r == mixcclSuccess) r = t.waitAll();
  return r;
}

}  // namespace

Result executeCollective(Comm* comm, WorkItem* w) {
  if (env().checkMismatch) return executeOnComm(comm, {w});
  MIXCCL_CHECK(checkNotFailed(comm));
  ++comm->collSeq;
  return runOneCollective(comm, w, nullptr);
}

Result executeOnComm(Comm* comm, const std::vector<WorkItem*>& items) {
  MIXCCL_CHECK(checkNotFailed(comm));
  Deadline deadline = Deadline::afterSeconds(comm->config.timeoutS);
  const bool deviceMemory = comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY;
  if (deviceMemory) MIXCCL_CHECK(nativeTransfers(comm, items));
  Transfers p2p(*comm->proxy, deadline);
  for (WorkItem* w : items) {
    if (deviceMemory || w->kind == WorkItem::Kind::Collective || w->peer == comm->rank) continue;
    if (w->kind == WorkItem::Kind::Send) p2p.send(w->peer, w->buf, w->bytes);
    else p2p.recv(w->peer, w->buf, w->bytes);
  }
  Result first = mixcclSuccess;
  for (WorkItem* w : items) {
    if (w->kind != WorkItem::Kind::Collective) continue;
    if (env().checkMismatch) {
      // Staged device collectives use the proxy from their own thread: let them finish.
      if (comm->staged) comm->staged->waitIdle();
      // Every rank reaches the same verdict, so a mismatch stops the group on all of them.
      Transfers check(*comm->proxy, deadline);
      CollContext checkCtx{comm->rank, comm->nranks, check, comm->tuning.chunkBytes};
      first = checkCollectiveMatches(checkCtx, w->call, &comm->collSeq);
      if (first != mixcclSuccess) break;
    } else {
      ++comm->collSeq;
    }
    first = runOneCollective(comm, w, &deadline);
    if (first != mixcclSuccess) break;
  }
  Result selfResult = deviceMemory ? mixcclSuccess : matchSelfTransfers(comm, items);
  Result p2pResult = p2p.waitAll();
  if (first == mixcclSuccess) first = p2pResult;
  if (first == mixcclSuccess) first = selfResult;
  return first;
}

}  // namespace mixccl
