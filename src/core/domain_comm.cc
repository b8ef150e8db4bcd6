#include "core/domain_comm.h"

#include <cstring>

#include "adaptors/adaptor_loader.h"
#include "algo/domain_coll.h"
#include "algo/reduce.h"
#include "core/comm.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {

// The services mixccl lends the adaptor (mixccl_adaptor.h): an all-gather over the domain's
// ranks on mixccl's own transport, and mixccl's reduction kernels.
struct DomainServices {
  static mixcclResult_t allGather(void* ctx, const void* mine, void* all, size_t bytes) {
    return static_cast<DomainComm*>(ctx)->onMembers().allGather(mine, all, bytes, mixcclUint8);
  }
  static void reduceElems(void* dst, const void* a, const void* b, size_t count,
                          mixcclDataType_t type, mixcclRedOp_t op) {
    reduce(dst, a, b, count, type, op);
  }
};

DomainComm::DomainComm(const Adaptor& adaptor, std::vector<int> members, int index)
    : adaptor_(adaptor), members_(std::move(members)), index_(index) {}

DomainComm::~DomainComm() {
  if (native_ && !aborted_) {
    if (table().commDestroy(native_) != mixcclSuccess)
      WARN(kLogInit, "%s adaptor: commDestroy failed: %s", adaptor_.name.c_str(),
           table().lastError());
  }
}

const AdaptorTable& DomainComm::table() const { return *adaptor_.table; }

HostDomainColl DomainComm::onMembers() const {
  return HostDomainColl(*comm_->proxy, initDeadline_, members_, index_, comm_->tuning.chunkBytes);
}

Result DomainComm::asyncError(std::string* why) const {
  const AdaptorTable& t = table();
  if (!native_ || aborted_ || !t.commGetAsyncError) return mixcclSuccess;
  mixcclResult_t async = mixcclSuccess;
  mixcclResult_t r = t.commGetAsyncError(native_, &async);
  if (r != mixcclSuccess) async = r;  // not even the question could be asked: a failure too
  if (async != mixcclSuccess) *why = nativeFailureText(t, "work");
  return async;
}

void DomainComm::abort() {
  if (native_ && !aborted_) {
    aborted_ = true;
    table().commAbort(native_);
  }
}

Result DomainComm::init(mixcclComm* comm, int device) {
  comm_ = comm;
  initDeadline_ = Deadline::afterSeconds(comm->config.timeoutS);
  services_.ctx = this;
  services_.allGather = &DomainServices::allGather;
  services_.reduce = &DomainServices::reduceElems;
  const AdaptorTable& t = table();
  char id[MIXCCL_ADAPTOR_UNIQUE_ID_BYTES] = {};
  Result idResult = mixcclSuccess;
  if (index_ == 0 && (idResult = t.getUniqueId(id)) != mixcclSuccess)
    WARN(kLogInit, "%s adaptor: getUniqueId failed: %s", adaptor_.name.c_str(), t.lastError());
  // Every member learns whether the id exists, so a failure on rank 0 fails all of them.
  char msg[MIXCCL_ADAPTOR_UNIQUE_ID_BYTES + 1];
  msg[0] = idResult == mixcclSuccess ? 1 : 0;
  memcpy(msg + 1, id, sizeof(id));
  MIXCCL_CHECK(onMembers().broadcast(msg, msg, sizeof(msg), mixcclUint8, 0));
  if (!msg[0])
    return raiseError(mixcclSystemError, "rank %d: the %s adaptor's unique id could not be made "
                      "on domain rank 0 (rank %d)", comm->rank, adaptor_.name.c_str(), members_[0]);
  mixcclResult_t r = t.commInitRank(&native_, (int)members_.size(), msg + 1, index_, device,
                                    &services_);
  if (r != mixcclSuccess) {
    native_ = nullptr;
    return raiseError(r, "rank %d: %s adaptor: commInitRank (domain rank %d of %zu) failed: %s",
                      comm->rank, adaptor_.name.c_str(), index_, members_.size(), t.lastError());
  }
  if (t.memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY) scratch_.reset(new NativeScratch(t));
  return mixcclSuccess;
}

Result chooseAdaptor(mixcclComm* comm, int* color) {
  MIXCCL_CHECK(parseDomainSplit(env().domainSplit, comm->rank, comm->nranks, color));
  std::string name = comm->config.adaptor.empty() ? detectAdaptorName() : comm->config.adaptor;
  const Adaptor* adaptor = nullptr;
  MIXCCL_CHECK(loadAdaptor(name, &adaptor));
  comm->adaptor = adaptor;
  if (comm->device < 0 && adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY) {
    int dev = -1;
    if (adaptor->table->getDevice(&dev) == mixcclSuccess) comm->device = dev;
  }
  return mixcclSuccess;
}

Result setupDomains(mixcclComm* comm) {
  comm->domainMap = buildDomainMap(comm->peers);
  const DomainMap& map = comm->domainMap;
  const Domain& mine = map.domains[map.domainOf[comm->rank]];
  INFO(kLogInit, "rank %d: %s; this rank: %s adaptor (%s)", comm->rank,
       describeDomains(map).c_str(), comm->adaptor->name.c_str(), comm->adaptor->path.c_str());
  // Device memory in a mixed job is staged through host memory and moved by mixccl's own
  // transport (docs/adaptors.md), so only host-memory domains and pure device jobs need the
  // native communicator. An adaptor without a library (host, or a plugin that leaves it out)
  // has its domain's collectives run by mixccl, which needs host memory.
  const AdaptorTable& t = *comm->adaptor->table;
  bool device = t.memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY;
  if (!t.hasNativeLibrary() && device && map.single())
    return raiseError(mixcclInvalidUsage,
                      "rank %d: the %s adaptor has no native library (its table leaves "
                      "commInitRank NULL), so a job whose ranks all use it cannot run collectives "
                      "on its device memory; run it next to ranks of other adaptors",
                      comm->rank, comm->adaptor->name.c_str());
  if (!t.hasNativeLibrary() || (device && !map.single())) return mixcclSuccess;
  std::unique_ptr<DomainComm> dc(
      new DomainComm(*comm->adaptor, mine.ranks, map.indexInDomain[comm->rank]));
  MIXCCL_CHECK(dc->init(comm, comm->device));
  comm->domainComm = std::move(dc);
  return mixcclSuccess;
}

}  // namespace mixccl
