#include "core/comm_topology.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "algo/algorithms.h"
#include "bootstrap/interfaces.h"
#include "adaptors/adaptor_loader.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

// This host, discovered once per process: hwloc's discovery (through libudev) is not safe from
// several threads at once (ThreadSanitizer saw a race when one process inits several ranks),
// and the answer is the same for every communicator of the process.
std::shared_ptr<LocalTopology> localTopologyOnce(int rank) {
  static std::mutex mutex;
  static std::shared_ptr<LocalTopology> cached;
  std::lock_guard<std::mutex> lock(mutex);
  if (cached) return cached;
  auto local = std::make_shared<LocalTopology>();
  if (discoverLocalTopology(local.get()) != mixcclSuccess) {
    WARN(kLogInit, "rank %d: topology discovery failed (%s); continuing without it", rank,
         topologyLastError().c_str());
    return nullptr;  // try again next time, rather than remember an empty host
  }
  // Once per process, like the discovery: a host without RDMA is normal, so INFO, not WARN.
  INFO(kLogInit | kLogNet, "rank %d: RDMA: %s", rank, local->rdmaStatus.c_str());
  cached = local;
  return cached;
}

}  // namespace

bool hostHasActiveRdmaPort(int rank) {
  // A host without RDMA hardware cannot otherwise show a job where only some hosts have a port
  // (tests of core/connect_mode.h).
  if (!env().testRdmaActive.empty()) return env().testRdmaActive == "1";
  std::shared_ptr<LocalTopology> local = localTopologyOnce(rank);
  if (!local) return false;
  for (const TopoRdmaDevice& d : local->rdma)
    for (const TopoRdmaPort& p : d.ports)
      if (p.active()) return true;
  return false;
}

TopoCaches hostCaches(int rank) {
  std::shared_ptr<LocalTopology> local = localTopologyOnce(rank);
  return local ? local->caches : TopoCaches{};
}

int hostCores(int rank) {
  std::shared_ptr<LocalTopology> local = localTopologyOnce(rank);
  return local ? local->cores : 0;
}

Result exchangeTopology(Comm* comm, const std::string& socketInterface) {
  const int rank = comm->rank, nranks = comm->nranks;
  std::shared_ptr<LocalTopology> local = localTopologyOnce(rank);
  if (!local) {
    local = std::make_shared<LocalTopology>();
    local->hostname = comm->peers[rank].hostname;
    local->hostHash = comm->peers[rank].hostHash;
  }
  std::vector<std::string> candidates;
  for (const NetInterface& ni : listInterfaces(env().socketIfname, env().socketFamily))
    candidates.push_back(ni.name);
  NicChoice nic;
  // The adaptor reports the PCI bus id of the rank's device; host ranks have none.
  std::string deviceBusId;
  if (comm->adaptor && comm->device >= 0) {
    char busId[64] = {};
    if (comm->adaptor->table->getPciBusId(comm->device, busId, sizeof(busId)) == mixcclSuccess)
      deviceBusId = busId;
  }
  if (chooseNic(*local, deviceBusId, candidates, socketInterface, &nic) != mixcclSuccess) {
    nic = NicChoice{};
    nic.name = socketInterface;
  }
  INFO(kLogInit | kLogNet, "rank %d: NIC %s (%s)", rank, nic.name.c_str(), nic.reason.c_str());
  // The progress thread serves that NIC: bind it to the CPUs near it (a no-op with one NUMA
  // node). Never fatal: a failure is logged and the thread stays where it was.
  if (comm->proxy && !nic.name.empty()) {
    std::shared_ptr<LocalTopology> topo = local;
    std::string target = nic.name;
    comm->proxy->runOnProgressThread([topo, target, rank] {
      BindPlan plan;
      if (bindThreadNear(*topo, target, &plan) == mixcclSuccess)
        INFO(kLogInit | kLogProxy, "rank %d: proxy thread: %s", rank, plan.note.c_str());
      else
        INFO(kLogInit | kLogProxy, "rank %d: proxy thread not bound near %s: %s", rank,
             target.c_str(), topologyLastError().c_str());
    });
  }

  RankTopology mine;
  std::vector<uint8_t> all((size_t)nranks * kRankTopologyWireBytes);
  uint8_t wire[kRankTopologyWireBytes] = {};
  if (fillRankTopology(*local, rank, comm->adaptor ? comm->adaptor->name : "host", comm->device, deviceBusId, nic,
                       &mine) != mixcclSuccess ||
      encodeRankTopology(mine, wire, sizeof(wire)) != mixcclSuccess)
    return raiseError(mixcclInternalError, "rank %d: cannot encode its topology: %s", rank,
                      topologyLastError().c_str());

  Deadline deadline = Deadline::afterSeconds(comm->config.timeoutS);
  Transfers t(*comm->proxy, deadline);
  // Before the ranks agree on their tuning (comm_init.cc): 256-byte blocks are one chunk of
  // any size a rank may have derived, so this rank's own is safe.
  CollContext ctx{rank, nranks, t, comm->tuning.chunkBytes};
  MIXCCL_CHECK(ringAllGather(ctx, wire, all.data(), kRankTopologyWireBytes, mixcclUint8));
  comm->topology.resize(nranks);
  for (int r = 0; r < nranks; ++r) {
    RankTopology& rt = comm->topology[r];
    if (decodeRankTopology(all.data() + (size_t)r * kRankTopologyWireBytes,
                           kRankTopologyWireBytes, &rt) != mixcclSuccess ||
        rt.rank != r || rt.hostHash != comm->peers[r].hostHash)
      return raiseError(mixcclRemoteError, "rank %d: %s sent an invalid topology summary (%s)",
                        rank, comm->peerName(r).c_str(), topologyLastError().c_str());
  }
  comm->localTopology = local;

  const std::string& pattern = env().topoDumpFile;
  std::string path;
  if (!pattern.empty() && topologyDumpPath(pattern, rank, comm->topology, &path)) {
    TopologyView view{local.get(), &comm->topology, rank};
    std::vector<TopologyTransport> transports;
    for (int r = 0; r < nranks; ++r)
      if (r != rank) transports.push_back({r, comm->proxy->transportName(r), comm->transportWhy[r]});
    view.transports = &transports;
    if (writeTopologyDump(path, view) != mixcclSuccess)
      WARN(kLogInit, "rank %d: MIXCCL_TOPO_DUMP_FILE: cannot write %s: %s", rank, path.c_str(),
           topologyLastError().c_str());
    else
      INFO(kLogInit, "rank %d: wrote the job topology to %s", rank, path.c_str());
  }
  return mixcclSuccess;
}

}  // namespace mixccl
