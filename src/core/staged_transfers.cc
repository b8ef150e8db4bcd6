#include "core/staged_transfers.h"

#include <cstring>
#include <memory>

#include "adaptors/adaptor_loader.h"
#include "algo/transfers.h"
#include "base/error.h"
#include "core/collective_dispatch.h"
#include "core/staged_dispatch.h"

namespace mixccl {
namespace {

// One transfer of the job, its bytes at `offset` in the staging of its direction.
struct StagedTransfer {
  bool send = false;
  int peer = -1;
  size_t offset = 0;
  size_t bytes = 0;
};

}  // namespace

Result runStagedTransfers(Comm* comm, const std::vector<WorkItem*>& items) {
  std::vector<WorkItem*> p2p;
  for (WorkItem* w : items)
    if (w->kind != WorkItem::Kind::Collective) p2p.push_back(w);
  if (p2p.empty()) return mixcclSuccess;
  void* stream = p2p.front()->stream;
  for (WorkItem* w : p2p)
    if (w->stream != stream)
      return raiseError(mixcclInvalidUsage,
                        "rank %d: Send/Recv of %s device memory in one group on two streams (%p "
                        "and %p): in a job with several domains mixccl stages a group's transfers "
                        "on one stream; use one stream per group", comm->rank,
                        comm->adaptor->name.c_str(), stream, w->stream);
  // Sends to self match receives from self in order, as on host memory (work.cc).
  std::vector<StagedTransfer> plan;
  std::vector<size_t> selfSends, selfRecvs;  // indexes into plan
  size_t sendTotal = 0, recvTotal = 0;
  for (WorkItem* w : p2p) {
    const bool send = w->kind == WorkItem::Kind::Send;
    size_t& total = send ? sendTotal : recvTotal;
    plan.push_back({send, w->peer, total, w->bytes});
    total += w->bytes;
    if (w->peer == comm->rank) (send ? selfSends : selfRecvs).push_back(plan.size() - 1);
  }
  if (selfSends.size() != selfRecvs.size())
    return raiseError(mixcclInvalidUsage,
                      "rank %d: %zu sends to itself but %zu receives from itself in one group "
                      "(they would never complete)", comm->rank, selfSends.size(), selfRecvs.size());
  for (size_t i = 0; i < selfSends.size(); ++i)
    if (plan[selfSends[i]].bytes != plan[selfRecvs[i]].bytes)
      return raiseError(mixcclInvalidUsage,
                        "rank %d: send to itself of %zu bytes matched with a receive of %zu bytes",
                        comm->rank, plan[selfSends[i]].bytes, plan[selfRecvs[i]].bytes);

  const AdaptorTable& t = *comm->adaptor->table;
  ensureExecutor(comm);
  auto job = std::make_shared<StagedJob>();
  job->table = &t;
  job->holdSeconds = comm->config.timeoutS;
  MIXCCL_CHECK(takeJobStaging(comm, job.get(), sendTotal, recvTotal));
  char* hostSend = static_cast<char*>(job->hostSend);
  char* hostRecv = static_cast<char*>(job->hostRecv);
  std::vector<StreamCopy> before, after;
  for (size_t i = 0; i < p2p.size(); ++i) {
    const StagedTransfer& x = plan[i];
    if (x.send)
      before.push_back({hostSend + x.offset, p2p[i]->buf, x.bytes, mixcclCopyDeviceToHost});
    else
      after.push_back({p2p[i]->buf, hostRecv + x.offset, x.bytes, mixcclCopyHostToDevice});
  }
  job->run = [comm, plan, selfSends, selfRecvs, hostSend, hostRecv]() {
    // Posted as the host path posts them (every transfer to another rank, empty ones too), so
    // host ranks and staged ranks match message for message.
    Transfers tr(*comm->proxy, Deadline::afterSeconds(comm->config.timeoutS));
    for (const StagedTransfer& x : plan) {
      if (x.peer == comm->rank) continue;
      if (x.send) tr.send(x.peer, hostSend + x.offset, x.bytes);
      else tr.recv(x.peer, hostRecv + x.offset, x.bytes);
    }
    for (size_t i = 0; i < selfSends.size(); ++i) {
      const StagedTransfer& s = plan[selfSends[i]];
      const StagedTransfer& r = plan[selfRecvs[i]];
      if (s.bytes) std::memcpy(hostRecv + r.offset, hostSend + s.offset, s.bytes);
    }
    return tr.waitAll();
  };
  return enqueueStagedJob(comm, stream, job, before, after);
}

}  // namespace mixccl
