#include "algo/domain_coll.h"

#include "algo/algorithms.h"
#include "base/error.h"

namespace mixccl {

namespace {
// Runs one of mixccl's algorithms over the domain's ranks and waits for all its ops.
template <typename Fn>
Result runOnMembers(Proxy& proxy, const Deadline& deadline, const std::vector<int>& members,
                    int index, size_t chunkBytes, uint64_t stamp, Fn fn) {
  Transfers t(proxy, deadline, members);
  t.setStamp(stamp);
  CollContext c{index, (int)members.size(), t, chunkBytes};
  Result r = fn(c);
  Result w = t.waitAll();
  return r != mixcclSuccess ? r : w;
}
}  // namespace

Result HostDomainColl::reduceScatter(const void* send, void* recv, size_t recvcount,
                                     mixcclDataType_t type, mixcclRedOp_t op) {
  return runOnMembers(
      proxy_, deadline_, members_, index_, chunkBytes_, stamp_,
      [&](CollContext& c) { return ringReduceScatter(c, send, recv, recvcount, type, op); });
}

Result HostDomainColl::allGather(const void* send, void* recv, size_t sendcount,
                                 mixcclDataType_t type) {
  return runOnMembers(
      proxy_, deadline_, members_, index_, chunkBytes_, stamp_,
      [&](CollContext& c) { return ringAllGather(c, send, recv, sendcount, type); });
}

Result HostDomainColl::broadcast(const void* send, void* recv, size_t count, mixcclDataType_t type,
                                 int root) {
  return runOnMembers(
      proxy_, deadline_, members_, index_, chunkBytes_, stamp_,
      [&](CollContext& c) { return chainBroadcast(c, send, recv, count, type, root); });
}

Result NativeDomainColl::reduceScatter(const void* send, void* recv, size_t recvcount,
                                       mixcclDataType_t type, mixcclRedOp_t op) {
  return checkNative(t_, "ReduceScatter",
                     t_.reduceScatter(send, recv, recvcount, type, op, comm_, nullptr));
}

Result NativeDomainColl::allGather(const void* send, void* recv, size_t sendcount,
                                   mixcclDataType_t type) {
  return checkNative(t_, "AllGather", t_.allGather(send, recv, sendcount, type, comm_, nullptr));
}

Result NativeDomainColl::broadcast(const void* send, void* recv, size_t count,
                                   mixcclDataType_t type, int root) {
  return checkNative(t_, "Broadcast", t_.broadcast(send, recv, count, type, root, comm_, nullptr));
}

}  // namespace mixccl
