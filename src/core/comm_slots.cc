#include "core/comm_slots.h"

#include <cstring>

#include "algo/algorithms.h"
#include "algo/transfers.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "core/comm_topology.h"
#include "transport/net_choice.h"
#include "transport/shm_sizing.h"

namespace mixccl {

ShmSlotsParams shmSlotsParamsFor(const Comm* comm, std::string* sizeWhy) {
  ShmSlotsParams sp;
  sp.rank = comm->rank;
  sp.nranks = comm->nranks;
  sp.commHash = comm->id.commHash;
  *sizeWhy = "MIXCCL_SHM_SLOT_BYTES";
  if (env().shmSlotBytes >= 0) {
    sp.slotBytes = (size_t)env().shmSlotBytes;
  } else {
    const TopoCaches caches = hostCaches(comm->rank);
    sp.slotBytes = shmSlotBytesFor(caches.l2.bytes, caches.l2.cores, comm->nranks, sizeWhy);
  }
  sp.spinUs = env().spinUs;
  sp.yieldWhileSpinning = comm->nranks > onlineCpuCount();
  return sp;
}

namespace {

constexpr uint32_t kLazySlotsMagic = 0x4c4c5353;  // "SSLL"

// What each rank tells the others before anyone maps a segment.
struct SlotsOffer {
  uint32_t magic;
  uint32_t want;     // 1: slots wanted (a net choice that allows shm, no MIXCCL_SHM_DISABLE)
  uint32_t created;  // 1: this rank's segment exists
  uint32_t reserved;
  uint64_t slotBytes;
};
struct SlotsMapped {
  uint32_t magic;
  uint32_t ok;
};

template <typename T>
Result gather(Comm* comm, const Deadline& deadline, const T& mine, std::vector<T>* all) {
  all->assign(comm->nranks, T{});
  Transfers t(*comm->proxy, deadline);
  CollContext ctx{comm->rank, comm->nranks, t, comm->tuning.chunkBytes};
  return ringAllGather(ctx, &mine, all->data(), sizeof(T), mixcclUint8);
}

// Why the slots stay off, from every rank's offer ("" when they go on); the same on every rank.
std::string declined(const Comm* comm, const std::vector<SlotsOffer>& offers) {
  for (int r = 0; r < comm->nranks; ++r) {
    const SlotsOffer& o = offers[r];
    if (o.magic != kLazySlotsMagic) return comm->peerName(r) + " sent an invalid slots offer";
    if (!o.want) return comm->peerName(r) + " does not use them (MIXCCL_SHM_SLOT_BYTES=0, "
                        "MIXCCL_SHM_DISABLE=1 or a MIXCCL_NET without shm there)";
    if (o.slotBytes != offers[0].slotBytes)
      return comm->peerName(r) + " asks for " + std::to_string(o.slotBytes) + "-byte slots, " +
             comm->peerName(0) + " for " + std::to_string(offers[0].slotBytes);
    if (!o.created) return comm->peerName(r) + " could not create its segment (see its log)";
  }
  return "";
}

}  // namespace

Result setupSlotsOverCollectives(Comm* comm, const Deadline& deadline) {
  const int rank = comm->rank, nranks = comm->nranks;
  if (nranks < 2) return mixcclSuccess;
  for (const PeerInfo& p : comm->peers)
    if (p.hostHash != comm->peers[rank].hostHash) {
      INFO(kLogInit, "rank %d: small collectives without shared-memory slots (ranks on several "
           "hosts)", rank);
      return mixcclSuccess;
    }
  std::string sizeWhy;
  ShmSlotsParams sp = shmSlotsParamsFor(comm, &sizeWhy);
  const bool shmPlanned = planPair(comm->config.netName, comm->config.netSource, true, false,
                                   false, false).net == "shm";
  SlotsOffer offer{kLazySlotsMagic, 0, 0, 0, sp.slotBytes};
  offer.want = sp.slotBytes > 0 && shmPlanned && !env().shmDisable;
  std::vector<std::string> names;
  for (int r = 0; r < nranks; ++r) names.push_back(comm->peerName(r));
  std::unique_ptr<ShmSlots> slots;
  if (offer.want) {
    if (ShmSlots::create(sp, names, &slots) == mixcclSuccess)
      offer.created = 1;
    else
      WARN(kLogInit, "rank %d: cannot create its shared-memory slots: %s", rank,
           threadLastError().c_str());
  }
  std::vector<SlotsOffer> offers;
  Result r = gather(comm, deadline, offer, &offers);
  std::string why = r == mixcclSuccess ? declined(comm, offers) : "";
  if (r == mixcclSuccess && why.empty()) {
    SlotsMapped mine{kLazySlotsMagic, 1};
    if (slots->mapPeers() != mixcclSuccess) {
      WARN(kLogInit, "rank %d: cannot map the shared-memory slots: %s", rank,
           threadLastError().c_str());
      mine.ok = 0;
    }
    std::vector<SlotsMapped> mapped;
    r = gather(comm, deadline, mine, &mapped);
    for (int q = 0; r == mixcclSuccess && q < nranks && why.empty(); ++q)
      if (mapped[q].magic != kLazySlotsMagic || mapped[q].ok != 1)
        why = comm->peerName(q) + " could not map the others' segments (see its log)";
  }
  // Every name goes before init returns, whatever happened: the mappings stay.
  ShmSlots::unlinkAll(sp.commHash, nranks);
  if (r != mixcclSuccess) return r;
  if (!why.empty()) {
    INFO(kLogInit, "rank %d: small collectives without shared-memory slots (%s)", rank,
         why.c_str());
    return mixcclSuccess;
  }
  comm->shmSlots = std::move(slots);
  INFO(kLogInit, "rank %d: small collectives on shared-memory slots (%zu-byte slots, %s; agreed "
       "over init's ring%s)", rank, sp.slotBytes, sizeWhy.c_str(),
       sp.yieldWhileSpinning ? "; more ranks than CPUs: polling yields the CPU" : "");
  return mixcclSuccess;
}

}  // namespace mixccl
