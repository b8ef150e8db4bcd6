#include "core/collective_dispatch.h"

#include <memory>
#include <vector>

#include "adaptors/adaptor_loader.h"
#include "algo/domain_coll.h"
#include "algo/hierarchical.h"
#include "algo/host_hierarchical.h"
#include "algo/native_pairwise.h"
#include "algo/reduce.h"
#include "algo/slot_collectives.h"
#include "core/domain_comm.h"
#include "core/staged_dispatch.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

// One native domain whose library has no entry for the call's collective: mixccl's own
// algorithm on host memory; on device memory, which mixccl's algorithms cannot touch,
// AlltoAll/Gather/Scatter composed from the library's send/recv, and a refusal otherwise.
Result runWithoutNativeEntry(Comm* comm, CollContext& c, const CollCall& call) {
  const AdaptorTable& t = comm->domainComm->table();
  if (t.memoryKind == MIXCCL_ADAPTOR_HOST_MEMORY) return runFlat(c, call);
  const NativeComm nc{t, comm->domainComm->native(), comm->rank, comm->nranks, call.stream,
                      comm->domainComm->scratch()};
  if (t.hasPointToPoint()) {
    switch (call.kind) {
      case CollKind::AlltoAll:
        return nativePairwiseAlltoAll(nc, call.sendbuf, call.recvbuf, call.count, call.type);
      case CollKind::Gather:
        return nativeDirectGather(nc, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
      case CollKind::Scatter:
        return nativeDirectScatter(nc, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
      default: break;
    }
  }
  const CollKindSpec& s = call.spec();
  const bool composable = s.pairwise;
  return raiseError(mixcclInvalidUsage,
                    "%s: the %s adaptor's native library has no %s%s (its table leaves %s NULL), "
                    "and mixccl's own algorithms cannot run on device memory",
                    s.apiName, t.name, s.name, composable ? " and no send/recv to compose it from" : "",
                    composable ? "them" : "it");
}

// One native domain: the call goes straight to the adaptor's library. Avg is passed through
// where the library has it, else reduced with Sum and divided here (host memory).
Result runNative(Comm* comm, CollContext& c, const CollCall& call) {
  const AdaptorTable& t = comm->domainComm->table();
  if (!t.hasNative(call.kind)) return runWithoutNativeEntry(comm, c, call);
  void* nc = comm->domainComm->native();
  const bool hostMemory = t.memoryKind == MIXCCL_ADAPTOR_HOST_MEMORY;
  const int n = comm->nranks, r = comm->rank;
  const char* in = static_cast<const char*>(call.sendbuf);
  char* out = static_cast<char*>(call.recvbuf);
  mixcclRedOp_t op = call.op;
  bool divideHere = false;
  if (call.spec().reduces) {
    if (!t.supports(call.kind, call.type, op)) {
      if (op == mixcclAvg && hostMemory && t.supports(call.kind, call.type, mixcclSum)) {
        op = mixcclSum;
        divideHere = true;
      } else if (hostMemory) {
        INFO(kLogColl, "%s adaptor has no native %s for %s/%s: mixccl's own algorithm runs it",
             t.name, call.spec().name, dataTypeName(call.type), redOpName(call.op));
        return runFlat(c, call);
      } else {
        return raiseError(mixcclInvalidArgument, "%s adaptor: the native library cannot run %s "
                          "on %s with %s", t.name, call.spec().name, dataTypeName(call.type),
                          redOpName(call.op));
      }
    }
  }
  switch (call.kind) {
    case CollKind::AllReduce:
      MIXCCL_CHECK(checkNative(t, "AllReduce", t.allReduce(in, out, call.count, call.type, op, nc, call.stream)));
      if (divideHere) divideBy(out, call.count, call.type, n);
      return mixcclSuccess;
    case CollKind::Reduce:
      MIXCCL_CHECK(checkNative(t, "Reduce", t.reduce(in, out, call.count, call.type, op, call.root, nc, call.stream)));
      if (divideHere && r == call.root) divideBy(out, call.count, call.type, n);
      return mixcclSuccess;
    case CollKind::ReduceScatter:
      MIXCCL_CHECK(checkNative(t, "ReduceScatter", t.reduceScatter(in, out, call.count, call.type, op, nc, call.stream)));
      if (divideHere) divideBy(out, call.count, call.type, n);
      return mixcclSuccess;
    case CollKind::Broadcast:
      return checkNative(t, "Broadcast", t.broadcast(in, out, call.count, call.type, call.root, nc, call.stream));
    case CollKind::AllGather:
      return checkNative(t, "AllGather", t.allGather(in, out, call.count, call.type, nc, call.stream));
    case CollKind::AlltoAll:
      return checkNative(t, "AlltoAll", t.alltoAll(in, out, call.count, call.type, nc, call.stream));
    case CollKind::Gather:
      return checkNative(t, "Gather", t.gather(in, out, call.count, call.type, call.root, nc, call.stream));
    case CollKind::Scatter:
      return checkNative(t, "Scatter", t.scatter(in, out, call.count, call.type, call.root, nc, call.stream));
    default:
      return raiseError(mixcclInternalError, "runNative: unexpected collective");
  }
}

// The slots exist (one host, every pair on shared memory), the algorithm is not forced, and
// the largest part any rank publishes fits a slot.
bool slotsTakeBytes(const Comm* comm, size_t largestPart) {
  return comm->shmSlots && env().algo == "auto" && largestPart > 0 &&
         largestPart <= comm->shmSlots->slotBytes();
}

SlotCall slotCallOf(const CollCall& call) {
  return SlotCall{call.kind, call.sendbuf, call.recvbuf, call.count, call.type, call.op, call.root};
}

// One domain whose ranks span hosts: AllReduce, Broadcast and Reduce inside each host, among
// one leader per host, inside each host (algo/host_hierarchical.h); every rank holds the same
// host map, so every rank takes the same branch.
bool hostHierarchyTakes(const Comm* comm, CollKind kind) {
  return (kind == CollKind::AllReduce || kind == CollKind::Broadcast ||
          kind == CollKind::Reduce) && useHostHierarchy(comm->hostMap);
}

Result runAcrossHosts(Comm* comm, CollContext& c, const CollCall& call) {
  const HostHierContext h{comm->hostMap, comm->rank, *comm->proxy, c.transfers.deadline(),
                          c.transfers.stamp(), c.chunkBytes, c.rhThresholdBytes};
  switch (call.kind) {
    case CollKind::AllReduce:
      return hostHierarchicalAllReduce(h, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
    case CollKind::Broadcast:
      return hostHierarchicalBroadcast(h, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
    case CollKind::Reduce:
      return hostHierarchicalReduce(h, call.sendbuf, call.recvbuf, call.count, call.type, call.op, call.root);
    default:
      return raiseError(mixcclInternalError, "runAcrossHosts: unexpected collective");
  }
}

}  // namespace

// Several domains, host memory: the cross-domain algorithms for AllReduce and Broadcast; the
// other collectives run mixccl's algorithms over every rank (they move each byte between
// domains once already).
Result runAcrossDomains(Comm* comm, CollContext& c, const CollCall& call, bool useNative) {
  if (call.kind != CollKind::AllReduce && call.kind != CollKind::Broadcast) return runFlat(c, call);
  const DomainMap& map = comm->domainMap;
  const Domain& mine = map.domains[map.domainOf[comm->rank]];
  const int index = map.indexInDomain[comm->rank];
  std::unique_ptr<DomainColl> local;
  // The library's in-domain steps where it has all three (else mixccl's over the domain's ranks).
  const AdaptorTable* t = comm->domainComm ? &comm->domainComm->table() : nullptr;
  if (useNative && t && t->reduceScatter && t->allGather && t->broadcast)
    local.reset(new NativeDomainColl(comm->domainComm->table(), comm->domainComm->native(),
                                     index, (int)mine.ranks.size()));
  else
    local.reset(new HostDomainColl(*comm->proxy, c.transfers.deadline(), mine.ranks, index,
                                   c.chunkBytes, c.transfers.stamp()));
  HierContext h{map, comm->rank, *local, c.transfers, env().hierPieceBytes};
  if (call.kind == CollKind::AllReduce)
    return hierarchicalAllReduce(h, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
  return hierarchicalBroadcast(h, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
}

Result runFlat(CollContext& c, const CollCall& call) {
  switch (call.kind) {
    case CollKind::AllReduce: {
      size_t bytes = call.count * dataTypeSize(call.type);
      switch (chooseAllReduceAlgo(bytes, c.nranks, c.rhThresholdBytes)) {
        case AllReduceAlgo::Ring:
          return ringAllReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
        case AllReduceAlgo::RecursiveHalving:
          return recursiveHalvingAllReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
        default:
          return recursiveDoublingAllReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
      }
    }
    case CollKind::Broadcast:
      if (useBinomialTree(call.count * dataTypeSize(call.type), c.nranks))
        return binomialTreeBroadcast(c, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
      return chainBroadcast(c, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
    case CollKind::Reduce:
      if (useBinomialTree(call.count * dataTypeSize(call.type), c.nranks))
        return binomialTreeReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op, call.root);
      return chainReduce(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op, call.root);
    case CollKind::AllGather:
      if (useRecursiveDoublingAllGather(call.count * dataTypeSize(call.type) * c.nranks, c.nranks, c.rhThresholdBytes))
        return recursiveDoublingAllGather(c, call.sendbuf, call.recvbuf, call.count, call.type);
      return ringAllGather(c, call.sendbuf, call.recvbuf, call.count, call.type);
    case CollKind::ReduceScatter: return ringReduceScatter(c, call.sendbuf, call.recvbuf, call.count, call.type, call.op);
    case CollKind::AlltoAll: return pairwiseAlltoAll(c, call.sendbuf, call.recvbuf, call.count, call.type);
    case CollKind::Gather: return directGather(c, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
    case CollKind::Scatter: return directScatter(c, call.sendbuf, call.recvbuf, call.count, call.type, call.root);
  }
  return raiseError(mixcclInternalError, "runFlat: unknown collective");
}

bool slotsTake(const Comm* comm, const CollCall& call) {
  return comm->shmSlots && env().algo == "auto" && routeOf(comm) == CollRoute::Flat &&
         fitsSlots(*comm->shmSlots, slotCallOf(call));
}

Result runOnSlots(Comm* comm, const CollCall& call) {
  TRACE(kLogColl, "rank %d: %s: shared-memory slots", comm->rank,
        describeCollDesc(collDescOf(call)).c_str());
  return slotCollective(*comm->shmSlots, slotCallOf(call), comm->config.timeoutS, comm->health);
}

CollRoute routeOf(const Comm* comm) {
  if (comm->domainMap.single()) return comm->domainComm ? CollRoute::Native : CollRoute::Flat;
  return comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY ? CollRoute::Staged
                                                                         : CollRoute::AcrossDomains;
}

const char* algorithmName(const Comm* comm, CollKind kind, size_t bytes) {
  CollRoute route = routeOf(comm);
  if (route == CollRoute::Native) return "native";
  // bytes: the AllReduce's buffer, the AllGather's whole output (each rank publishes 1/n).
  if (route == CollRoute::Flat &&
      slotsTakeBytes(comm, kind == CollKind::AllGather ? bytes / comm->nranks : bytes))
    return "slots";
  // runAcrossDomains (the staged path too): cross-domain AllReduce and Broadcast, else runFlat.
  if (route != CollRoute::Flat && (kind == CollKind::AllReduce || kind == CollKind::Broadcast))
    return "hierarchical";
  if (route == CollRoute::Flat && hostHierarchyTakes(comm, kind)) return "hierarchical-host";
  switch (kind) {
    case CollKind::AllReduce:
      return allReduceAlgoName(chooseAllReduceAlgo(bytes, comm->nranks, comm->tuning.rhThresholdBytes));
    case CollKind::AllGather:
      return useRecursiveDoublingAllGather(bytes, comm->nranks, comm->tuning.rhThresholdBytes) ? "rd" : "ring";
    case CollKind::Broadcast:
    case CollKind::Reduce: return useBinomialTree(bytes, comm->nranks) ? "tree" : "chain";
    case CollKind::ReduceScatter: return "ring";
    case CollKind::AlltoAll: return "pairwise";
    case CollKind::Gather:
    case CollKind::Scatter: return "direct";
  }
  return "unknown";
}

Result runCollective(Comm* comm, CollContext& c, const CollCall& call,
                     const PreMulSumOp* preMul) {
  CollRoute route = routeOf(comm);
  static const char* const kRouteNames[] = {"native", "mixccl's algorithm", "across domains",
                                            "staged across domains"};
  TRACE(kLogColl, "rank %d: %s: %s", comm->rank, describeCollDesc(collDescOf(call)).c_str(),
        kRouteNames[(int)route]);
  // A pre-multiplied sum on device memory always stages: mixccl scales in host memory.
  if (preMul) return runStaged(comm, call, preMul);
  switch (route) {
    case CollRoute::Native: return runNative(comm, c, call);
    case CollRoute::Flat:
      return hostHierarchyTakes(comm, call.kind) ? runAcrossHosts(comm, c, call) : runFlat(c, call);
    case CollRoute::Staged: return runStaged(comm, call, preMul);
    case CollRoute::AcrossDomains: break;
  }
  return runAcrossDomains(comm, c, call, /*useNative=*/true);
}

}  // namespace mixccl
