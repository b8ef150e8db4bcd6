#include "core/collective_dispatch.h"

#include <memory>
#include <vector>

#include "adaptors/adaptor_loader.h"
#include "algo/domain_coll.h"
#include "algo/hierarchical.h"
#include "algo/reduce.h"
#include "core/domain_comm.h"
#include "core/staged_executor.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"

namespace mixccl {
namespace {

using Kind = CollCall::Kind;

const char* collName(Kind k) {
  switch (k) {
    case Kind::AllReduce: return "allreduce";
    case Kind::Broadcast: return "broadcast";
    case Kind::Reduce: return "reduce";
    case Kind::AllGather: return "allgather";
    case Kind::ReduceScatter: return "reducescatter";
    default: return "sendrecv";
  }
}

// Bytes of the send and receive buffers of call on a rank (0 where the rank has none).
void callBytes(const CollCall& call, int rank, int nranks, size_t* send, size_t* recv) {
  const size_t b = call.count * dataTypeSize(call.type), all = b * nranks;
  bool root = rank == call.root;
  switch (call.kind) {
    case Kind::AllReduce: *send = b; *recv = b; break;
    case Kind::Broadcast: *send = root ? b : 0; *recv = b; break;
    case Kind::Reduce: *send = b; *recv = root ? b : 0; break;
    case Kind::AllGather: *send = b; *recv = all; break;
    case Kind::ReduceScatter: *send = all; *recv = b; break;
    case Kind::AlltoAll: *send = all; *recv = all; break;
    case Kind::Gather: *send = b; *recv = root ? all : 0; break;
    case Kind::Scatter: *send = root ? all : 0; *recv = b; break;
  }
}

// One native domain: the call goes straight to the adaptor's library. Avg is passed through
// where the library has it, else reduced with Sum and divided here (host memory).
Result runNative(Comm* comm, CollContext& c, const CollCall& call) {
  const mixcclAdaptor_v1_t& t = comm->domainComm->table();
  void* nc = comm->domainComm->native();
  const bool hostMemory = t.memoryKind == MIXCCL_ADAPTOR_HOST_MEMORY;
  const int n = comm->nranks, r = comm->rank;
  const size_t es = dataTypeSize(call.type);
  const char* in = static_cast<const char*>(call.sendbuf);
  char* out = static_cast<char*>(call.recvbuf);
  if (call.kind == Kind::AlltoAll || call.kind == Kind::Gather || call.kind == Kind::Scatter) {
    if (hostMemory) return runFlat(c, call);  // no native call of that shape: mixccl's p2p
    MIXCCL_CHECK(checkNative(t, "groupStart", t.groupStart()));
    mixcclResult_t res = mixcclSuccess;
    for (int p = 0; p < n && res == mixcclSuccess; ++p) {
      const size_t cnt = call.count, blk = cnt * es;
      if (call.kind == Kind::AlltoAll) {
        res = t.send(in + p * blk, cnt, call.type, p, nc, call.stream);
        if (res == mixcclSuccess) res = t.recv(out + p * blk, cnt, call.type, p, nc, call.stream);
      } else if (call.kind == Kind::Gather) {
        if (p == 0) res = t.send(in, cnt, call.type, call.root, nc, call.stream);
        if (res == mixcclSuccess && r == call.root)
          res = t.recv(out + p * blk, cnt, call.type, p, nc, call.stream);
      } else {
        if (r == call.root) res = t.send(in + p * blk, cnt, call.type, p, nc, call.stream);
        if (res == mixcclSuccess && p == 0)
          res = t.recv(out, cnt, call.type, call.root, nc, call.stream);
      }
    }
    mixcclResult_t end = t.groupEnd();
    MIXCCL_CHECK(checkNative(t, "send/recv", res));
    return checkNative(t, "groupEnd", end);
  }
  mixcclRedOp_t op = call.op;
  bool divideHere = false;
  if (call.kind == Kind::AllReduce || call.kind == Kind::Reduce || call.kind == Kind::ReduceScatter) {
    if (!t.supports(collName(call.kind), call.type, op)) {
      if (op == mixcclAvg && hostMemory && t.supports(collName(call.kind), call.type, mixcclSum)) {
        op = mixcclSum;
        divideHere = true;
      } else if (hostMemory) {
        INFO(kLogColl, "%s adaptor has no native %s for %s/%s: mixccl's own algorithm runs it",
             t.name, collName(call.kind), dataTypeName(call.type), redOpName(call.op));
        return runFlat(c, call);
      } else {
        return raiseError(mixcclInvalidArgument, "%s adaptor: the native library cannot run %s "
                          "on %s with %s", t.name, collName(call.kind), dataTypeName(call.type),
                          redOpName(call.op));
      }
    }
  }
  switch (call.kind) {
    case Kind::AllReduce:
      MIXCCL_CHECK(checkNative(t, "AllReduce", t.allReduce(in, out, call.count, call.type, op, nc, call.stream)));
      if (divideHere) divideBy(out, call.count, call.type, n);
      return mixcclSuccess;
    case Kind::Reduce:
      MIXCCL_CHECK(checkNative(t, "Reduce", t.reduce(in, out, call.count, call.type, op, call.root, nc, call.stream)));
      if (divideHere && r == call.root) divideBy(out, call.count, call.type, n);
      return mixcclSuccess;
    case Kind::ReduceScatter:
      MIXCCL_CHECK(checkNative(t, "ReduceScatter", t.reduceScatter(in, out, call.count, call.type, op, nc, call.stream)));
      if (divideHere) divideBy(out, call.count, call.type, n);
      return mixcclSuccess;
    case Kind::Broadcast:
      return checkNative(t, "Broadcast", t.broadcast(in, out, call.count, call.type, call.root, nc, call.stream));
    case Kind::AllGather:
      return checkNative(t, "AllGather", t.allGather(in, out, call.count, call.type, nc, call.stream));
    default:
      return raiseError(mixcclInternalError, "runNative: unexpected collective");
  }
}

// Several domains, host memory: the cross-domain algorithms for AllReduce and Broadcast; the
// other collectives run mixccl's algorithms over every rank (they move each byte between
// domains once already).
Result runAcrossDomains(Comm* comm, CollContext& c, const CollCall& call, bool useNative) {
  if (call.kind != Kind::AllReduce && call.kind != Kind::Broadcast) return runFlat(c, call);
  const DomainMap& map = comm->domainMap;
  const Domain& mine = map.domains[map.domainOf[comm->rank]];
  const int index = map.indexInDomain[comm->rank];
  std::unique_ptr<DomainColl> local;
  if (useNative && comm->domainComm)
    local.reset(new NativeDomainColl(comm->domainComm->table(), comm->domainComm->native(),
                                     index, (int)mine.ranks.size()));
  else
    local.reset(new HostDomainColl(*comm->proxy, c.transfers.deadline(), mine.ranks, index,
                                   c.chunkBytes));
  HierContext h{map, comm->rank, *local, c.transfers, env().hierPieceBytes};
  if (call.kind == Kind::AllReduce)
    return hierarchicalAllReduce(h, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
  return hierarchicalBroadcast(h, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
}

// Device memory in a mixed job (see staged_executor.h): enqueue copy-out, hand-over, hold,
// copy-in on the caller's stream and return; the executor thread runs the host-memory
// algorithm (in-domain steps on mixccl's transport) when the stream reaches the job.
Result runStaged(Comm* comm, const CollCall& call) {
  const mixcclAdaptor_v1_t& t = *comm->adaptor->table;
  size_t sendBytes = 0, recvBytes = 0;
  callBytes(call, comm->rank, comm->nranks, &sendBytes, &recvBytes);
  {
    std::lock_guard<std::mutex> lock(comm->stagedMutex);
    if (!comm->staged)
      comm->staged.reset(new StagedExecutor([comm](Result r, const std::string& why) {
        comm->proxy->fail(r, "device staging: " + why);
      }));
  }
  auto job = std::make_shared<StagedJob>();
  job->table = &t;
  job->holdSeconds = comm->config.timeoutS;
  if (sendBytes) MIXCCL_CHECK(checkNative(t, "hostAlloc", t.hostAlloc(&job->hostSend, sendBytes)));
  if (recvBytes) MIXCCL_CHECK(checkNative(t, "hostAlloc", t.hostAlloc(&job->hostRecv, recvBytes)));
  MIXCCL_CHECK(checkNative(t, "eventCreate", t.eventCreate(&job->event)));
  CollCall host = call;
  host.sendbuf = job->hostSend;
  host.recvbuf = job->hostRecv;
  host.stream = nullptr;
  job->run = [comm, host]() {
    Transfers tr(*comm->proxy, Deadline::afterSeconds(comm->config.timeoutS));
    CollContext ctx{comm->rank, comm->nranks, tr, env().chunkBytes};
    Result r = runAcrossDomains(comm, ctx, host, /*useNative=*/false);
    Result w = tr.waitAll();
    return r != mixcclSuccess ? r : w;
  };
  // From here the executor owns the job (and frees its staging once the stream is past it).
  comm->staged->submit(job);
  void* s = call.stream;
  mixcclResult_t r = mixcclSuccess;
  const char* step = "memcpy device to host";
  if (sendBytes) r = t.memcpyAsync(job->hostSend, call.sendbuf, sendBytes, mixcclCopyDeviceToHost, s);
  if (r == mixcclSuccess) {
    step = "launchHostFunc";
    r = t.launchHostFunc(s, &StagedExecutor::markReady, job.get());
  }
  if (r != mixcclSuccess) {
    // Nothing of the job is on the stream: it must never run (its peers see this rank fail).
    std::lock_guard<std::mutex> lock(job->m);
    job->cancelled = job->ready = job->done = true;
    job->cv.notify_all();
    Result e = checkNative(t, step, r);
    comm->proxy->fail(e, threadLastError());
    return e;
  }
  r = t.launchHostFunc(s, &StagedExecutor::holdUntilDone, job.get());
  step = "launchHostFunc";
  if (r == mixcclSuccess && recvBytes) {
    step = "memcpy host to device";
    r = t.memcpyAsync(call.recvbuf, job->hostRecv, recvBytes, mixcclCopyHostToDevice, s);
  }
  if (r == mixcclSuccess) {
    step = "eventRecord";
    r = t.eventRecord(job->event, s);
  }
  if (r != mixcclSuccess) {
    Result e = checkNative(t, step, r);
    comm->proxy->fail(e, threadLastError());
    return e;
  }
  return mixcclSuccess;
}

}  // namespace

Result runFlat(CollContext& c, const CollCall& call) {
  switch (call.kind) {
    case Kind::AllReduce: {
      size_t bytes = call.count * dataTypeSize(call.type);
      switch (chooseAllReduceAlgo(bytes, c.nranks)) {
        case AllReduceAlgo::Ring:
          return ringAllReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
        case AllReduceAlgo::RecursiveHalving:
          return recursiveHalvingAllReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
        default:
          return recursiveDoublingAllReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
      }
    }
    case Kind::Broadcast: return chainBroadcast(c, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
    case Kind::Reduce: return chainReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op, call.root);
    case Kind::AllGather:
      if (useRecursiveDoublingAllGather(call.count * dataTypeSize(call.type) * c.nranks, c.nranks))
        return recursiveDoublingAllGather(c, call.sendbuf, call.recvbuf, call.count, call.type);
      return ringAllGather(c, call.sendbuf, call.recvbuf, call.count, call.type);
    case Kind::ReduceScatter: return ringReduceScatter(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
    case Kind::AlltoAll: return pairwiseAlltoAll(c, call.sendbuf, call.recvbuf, call.count, call.type);
    case Kind::Gather: return directGather(c, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
    case Kind::Scatter: return directScatter(c, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
  }
  return raiseError(mixcclInternalError, "runFlat: unknown collective");
}

Result runCollective(Comm* comm, CollContext& c, const CollCall& call) {
  const bool single = comm->domainMap.single();
  if (single && comm->domainComm) return runNative(comm, c, call);
  if (single) return runFlat(c, call);
  if (comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY)
    return runStaged(comm, call);
  return runAcrossDomains(comm, c, call, /*useNative=*/true);
}

}  // namespace mixccl
