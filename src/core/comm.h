// The communicator: one rank's membership in a group of ranks, its connections (owned by the
// proxy) and its configuration. mixcclComm_t points to this.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algo/tuning.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/unique_id.h"
#include "base/health.h"
#include "core/buffer_registrations.h"
#include "core/config.h"
#include "core/domain_comm.h"
#include "core/lazy_connector.h"
#include "topology/domains.h"
#include "core/device_direct.h"
#include "core/staged_executor.h"
#include "core/user_ops.h"
#include "proxy/proxy.h"
#include "transport/shm_slots.h"
#include "topology/topology.h"

struct mixcclComm {
  int rank = 0;
  int nranks = 0;
  int device = -1;
  mixccl::CommConfig config;
  mixccl::UniqueIdData id{};
  std::vector<mixccl::PeerInfo> peers;
  // The first failure of anything working for this communicator (declared before the proxy,
  // which reports into it, so it outlives the proxy).
  mixccl::Health health;
  // MIXCCL_CONNECT, agreed by every rank (connect_mode.h), and why (mixcclCommInspect
  // "connect_why"). Pairs connect on first use through connector, which the
  // proxy asks for them. Declared before the proxy, so that it outlives the proxy's thread
  // (which takes accepted pairs from it until it is joined); its acceptor, which wakes the
  // proxy, is stopped first (~mixcclComm).
  bool lazyConnect = false;
  std::string connectWhy;
  std::unique_ptr<mixccl::LazyConnector> connector;
  std::unique_ptr<mixccl::Proxy> proxy;
  // Small collectives of a one-host communicator (transport/shm_slots.h); null where not every
  // pair is on shared memory or a rank turned them off.
  std::unique_ptr<mixccl::ShmSlots> shmSlots;
  // Per peer: why its transport was chosen (transport/net_choice.h), for INFO,
  // mixcclCommInspect "transport_why.<peer>" and the topology dump.
  std::vector<std::string> transportWhy;
  // Per peer: whether device buffers go to the transport without host staging
  // (device_direct.h), and why; mixcclCommInspect "device_direct.<peer>".
  mixccl::DeviceDirect deviceDirect;
  // Every rank's host, NUMA node, device, NIC and adaptor, exchanged at init (comm_topology.h).
  std::vector<mixccl::RankTopology> topology;
  std::shared_ptr<mixccl::LocalTopology> localTopology;
  // Chunk, rh threshold and same-host socket buffers (algo/tuning.h): derived from this host's
  // caches before the mesh connects, the first two then agreed over the ranks; INFO and
  // mixcclCommInspect "tuning" say what and why.
  mixccl::Tuning tuning;
  // This rank's device adaptor (loaded once per process), the domains of the communicator,
  // and this rank's native domain communicator (null for the host adaptor, docs/adaptors.md).
  const mixccl::Adaptor* adaptor = nullptr;
  mixccl::DomainMap domainMap;
  // The ranks grouped by host (algo/host_map.h: real hosts, or MIXCCL_HIER_HOSTS), for the
  // host-hierarchical collectives.
  mixccl::DomainMap hostMap;
  std::unique_ptr<mixccl::DomainComm> domainComm;
  // Device memory in a job with several domains: the thread that runs staged collectives in
  // stream order (staged_executor.h); made at the first such call.
  std::mutex stagedMutex;
  std::unique_ptr<mixccl::StagedExecutor> staged;

  // Where the survivors meet to shrink after a failure (recovery_listener.h): this rank's
  // listener, open for the communicator's life, and every rank's address.
  mixccl::Socket recoveryListener;
  std::vector<mixccl::WireAddress> recoveryAddrs;

  // Ops made by mixcclRedOpCreatePreMulSum, valid on this communicator only.
  mixccl::UserOps userOps;
  // Buffers registered with mixcclCommRegister (and the native library), freed with comm.
  mixccl::BufferRegistrations registrations;

  std::atomic<int> refs{1};  // the owner's reference plus one per API call in progress
  std::atomic<bool> finalized{false};
  uint32_t collSeq = 0;  // collectives issued so far (MIXCCL_CHECK_MISMATCH compares it)

  // Initialisation. Blocking init fills the fields above before the handle is returned.
  // Non-blocking init (config.blocking = 0) returns the handle at once with initState
  // mixcclInProgress; initThread finishes the job and stores the result (release), and
  // proxy may be used only once initState is mixcclSuccess (acquire).
  std::atomic<int> initState{mixcclSuccess};
  std::thread initThread;
  std::atomic<bool> initCancel{false};  // set by Abort/Destroy while initThread runs
  std::mutex initFdMutex;
  int initListenFd = -1;                // the transport listener while init runs
  std::mutex stopInitMutex;
  std::string initError;                // written before initState (release) on failure
  // Stops a background init (if any) and waits for its thread; safe to call twice.
  void stopInit();
  // A communicator whose init failed is destroyed with its proxy and connector running: the
  // acceptor stops before the proxy goes, the proxy's thread before the connector goes.
  ~mixcclComm() {
    if (connector) connector->stop();
  }

  void setLastError(const std::string& msg) {
    std::lock_guard<std::mutex> lock(lastErrorMutex);
    lastError = msg;
  }
  std::string getLastError() {
    std::lock_guard<std::mutex> lock(lastErrorMutex);
    return lastError;
  }
  // "rank 3 (hostname)", for messages.
  std::string peerName(int r) const;

 private:
  std::mutex lastErrorMutex;
  std::string lastError;
};

namespace mixccl {

using Comm = mixcclComm;

// Creates, connects and registers a communicator (collective over the nranks ranks of id).
// With config.blocking it returns once the communicator is ready (nothing stays registered on
// failure). Without, *out is set at once, the work continues on comm->initThread, and the
// result is mixcclInProgress (mixcclCommGetAsyncError reports the outcome).
// exchangePeers, when given, replaces the rendezvous through the id's root: it gets this rank's
// peer info and returns every rank's (a blocking mixcclCommSplit's exchange over the parent's
// connections; mixcclCommInitRankScalable's rendezvous through several roots, which a
// non-blocking init runs on its background thread: the function must own what it uses).
using PeerExchange = std::function<Result(const PeerInfo& mine, std::vector<PeerInfo>* all)>;
Result createComm(Comm** out, int nranks, const UniqueIdData& id, int rank,
                  const CommConfig& config, int device, const PeerExchange& exchangePeers = nullptr);

// mixcclSuccess if comm finished its initialisation successfully. Otherwise, like NCCL for a
// communicator used before mixcclCommGetAsyncError said mixcclSuccess: mixcclInvalidArgument
// while it is still initialising, or the error its initialisation ended with.
Result checkCommReady(const char* fn, Comm* comm);

}  // namespace mixccl
