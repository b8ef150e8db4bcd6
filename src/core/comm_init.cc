// Creating a communicator: rendezvous through the root, connect the mesh, start the proxy.
#include <sys/socket.h>

#include <cstring>
#include <string>

#include "bootstrap/auth.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/interfaces.h"
#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "core/comm.h"
#include "core/comm_topology.h"
#include "adaptors/adaptor_loader.h"
#include "algo/host_map.h"
#include "algo/tuning.h"
#include "core/domain_comm.h"
#include "core/comm_registry.h"
#include "core/comm_slots.h"
#include "core/connect_mode.h"
#include "core/lazy_connector.h"
#include "core/peer_agreement.h"
#include "core/recovery_listener.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/net_choice.h"
#include "transport/net_transports.h"
#include "transport/registry.h"
#include "transport/shm_connection.h"
#include "transport/shm_sizing.h"
#include "transport/socket_connection.h"
#include "transport/socket_mesh.h"

std::string mixcclComm::peerName(int r) const { return mixccl::describePeer(peers, r); }

void mixcclComm::stopInit() {
  std::lock_guard<std::mutex> once(stopInitMutex);
  if (!initThread.joinable()) return;
  if (initState.load(std::memory_order_acquire) == mixcclInProgress) {
    initCancel.store(true, std::memory_order_release);
    // The transport's acceptor thread does not see initCancel: wake it by shutting down the
    // listener it polls (accept then fails at once).
    std::lock_guard<std::mutex> lock(initFdMutex);
    if (initListenFd >= 0) ::shutdown(initListenFd, SHUT_RDWR);
  }
  initThread.join();
}

namespace mixccl {
namespace {

// Publishes the transport listener to stopInit() while it is open.
class ListenerRegistration {
 public:
  ListenerRegistration(Comm* comm, int fd) : comm_(comm) {
    std::lock_guard<std::mutex> lock(comm_->initFdMutex);
    comm_->initListenFd = fd;
    if (comm_->initCancel.load()) ::shutdown(fd, SHUT_RDWR);
  }
  ~ListenerRegistration() {
    std::lock_guard<std::mutex> lock(comm_->initFdMutex);
    comm_->initListenFd = -1;
  }

 private:
  Comm* comm_;
};

// The shared-memory rings' parameters (INFO says their size and why).
ShmParams shmParamsFor(const Comm* comm) {
  ShmParams sp;
  sp.rank = comm->rank;
  sp.nranks = comm->nranks;
  sp.commHash = comm->id.commHash;
  sp.ringBytes = env().shmBytes;
  std::string why = "MIXCCL_SHM_BYTES";
  if (sp.ringBytes == 0) {
    // This rank's own chunk (the agreement over the ranks comes later and only lowers it):
    // the ring's floor of 4 chunks.
    const TopoCaches caches = hostCaches(comm->rank);
    sp.ringBytes = shmRingBytesFor(caches.l2.bytes, caches.l2.cores, comm->tuning.chunkBytes, &why);
  }
  sp.farRingBytes = env().shmFarBytes;
  const std::string far = sp.farRingBytes
      ? std::to_string(sp.farRingBytes) + " bytes (MIXCCL_SHM_FAR_BYTES)"
      : "that x distance / (ranks / 2), at least " + std::to_string(kShmFarRingMinBytes) + " bytes";
  INFO(kLogInit, "rank %d: shared-memory rings of %zu bytes to ring neighbours (%s), to other "
       "peers %s", comm->rank, sp.ringBytes, why.c_str(), far.c_str());
  sp.cma = env().shmCma;
  sp.cmaThreshold = env().shmCmaThreshold;
  return sp;
}

// Chooses and connects a transport for every pair (transport/net_choice.h says which name
// chooses what; transport/registry.h how the registry walks its list). The ranks first agree
// on the name over the control connections; the registry then holds shm (auto and shm only),
// the network transports the plan names, and sockets last. One INFO line per communicator
// lists every peer's transport and why; mixcclCommInspect "transport.<peer>" and
// "transport_why.<peer>" report them. Last, each pair agrees whether device memory may go to
// its transport directly (core/device_direct.h), while the control connections are still free.
Result connectTransports(Comm* comm, const UniqueIdData& id, const MeshParams& mesh,
                         std::vector<std::vector<Socket>>* conns, const Deadline& deadline,
                         std::vector<std::unique_ptr<Connection>>* out) {
  const int rank = comm->rank, nranks = comm->nranks;
  NetRequest request;
  request.name = comm->config.netName;
  request.source = comm->config.netSource;
  request.rdma = request.name == "auto" && hostHasActiveRdmaPort(rank);
  std::vector<PairChoice> plan;
  MIXCCL_CHECK(agreeOnNet(rank, id.commHash, comm->peers, *conns, deadline, request, &plan));

  TransportRegistry registry;
  if (request.name == "auto" || request.name == "shm")
    registry.add(std::unique_ptr<Transport>(new ShmTransport(shmParamsFor(comm), !env().shmDisable)));
  for (const std::string& net : networkTransportNames()) {
    std::vector<bool> serve(nranks, false);
    bool any = false;
    for (int r = 0; r < nranks; ++r) any |= serve[r] = plan[r].net == net;
    if (!any) continue;
    std::unique_ptr<Transport> t;
    MIXCCL_CHECK(makeNetworkTransport(net, rank, serve, &t));
    registry.add(std::move(t));
  }
  registry.add(std::unique_ptr<Transport>(new SocketTransport()));

  TransportSetup setup;
  setup.rank = rank;
  setup.nranks = nranks;
  setup.commHash = id.commHash;
  setup.peers = &comm->peers;
  setup.conns = conns;
  setup.deadline = deadline;
  setup.frameBytes = env().socketFrameBytes;
  MIXCCL_CHECK(registry.connectAll(setup, out));

  comm->transportWhy.assign(nranks, "");
  std::string line;
  for (int r = 0; r < nranks; ++r) {
    if (r == rank) continue;
    const Connection& c = *(*out)[r];
    std::string why = plan[r].why;
    // Only shm negotiates per pair: a pair planned for it that got sockets was declined.
    if (plan[r].net != c.transportName())
      why += env().shmDisable ? "; MIXCCL_SHM_DISABLE=1 here" : "; MIXCCL_SHM_DISABLE=1 on the peer";
    comm->transportWhy[r] = why;
    line += (line.empty() ? "" : "; ") + comm->peerName(r) + ": " + c.transportName() + " (" + c.detail() +
            ") [" + why + "]";
  }
  if (!line.empty()) INFO(kLogInit | kLogNet, "rank %d: transports: %s", rank, line.c_str());
  return agreeDeviceDirect(comm, *out, *conns, deadline);
}

// The ranks grouped by host, from the peer table (every rank holds the same) or
// MIXCCL_HIER_HOSTS's labels, for the host-hierarchical collectives (algo/host_hierarchical.h).
Result setupHostMap(Comm* comm) {
  std::vector<uint64_t> keys;
  for (const PeerInfo& p : comm->peers) keys.push_back(p.hostHash);
  MIXCCL_CHECK(parseHostSplit(env().hierHosts, comm->nranks, &keys));
  comm->hostMap = groupRanksByHost(keys);
  INFO(kLogInit | kLogColl, "rank %d: %s%s", comm->rank, describeHosts(comm->hostMap).c_str(),
       env().hierHosts.empty() ? "" : " (MIXCCL_HIER_HOSTS)");
  return mixcclSuccess;
}

// The shared-memory slots of small collectives (transport/shm_slots.h), while the control
// connections are still free: only where every pair runs over shared memory, which every rank
// then knows alike (one host, nobody's MIXCCL_SHM_DISABLE, a net choice that allows shm).
Result setupSlots(Comm* comm, const std::vector<std::unique_ptr<Connection>>& links,
                  const std::vector<std::vector<Socket>>& conns, const Deadline& deadline) {
  if (comm->nranks < 2) return mixcclSuccess;
  for (int r = 0; r < comm->nranks; ++r)
    if (r != comm->rank && (!links[r] || std::string(links[r]->transportName()) != "shm"))
      return mixcclSuccess;
  std::string sizeWhy;
  const ShmSlotsParams sp = shmSlotsParamsFor(comm, &sizeWhy);
  std::vector<std::string> names;
  for (int r = 0; r < comm->nranks; ++r) names.push_back(comm->peerName(r));
  std::string why;
  MIXCCL_CHECK(ShmSlots::setup(sp, conns, names, deadline, &comm->shmSlots, &why));
  if (comm->shmSlots) {
    why += ", " + sizeWhy;
    if (sp.yieldWhileSpinning) why += "; more ranks than CPUs: polling yields the CPU";
  }
  INFO(kLogInit, "rank %d: small collectives %s (%s)", comm->rank,
       comm->shmSlots ? "on shared-memory slots" : "without shared-memory slots", why.c_str());
  return mixcclSuccess;
}

// Rendezvous, connections, proxy: everything after the fields of comm are set.
Result connectComm(Comm* comm, const UniqueIdData& givenId, const PeerExchange& exchangePeers) {
  const int rank = comm->rank, nranks = comm->nranks;
  const CommConfig& config = comm->config;
  setLogRank(rank);
  Deadline deadline = Deadline::afterSeconds(config.timeoutS);

  UniqueIdData id = givenId;
  if (id.flags & kIdRootAtRank0) {
    SocketAddress rootAddr, bound;
    MIXCCL_CHECK(fromWire(id.root, &rootAddr));
    // Port 0 lets the root pick one, which only rank 0 learns: the other ranks would knock on
    // port 0 until the timeout. One rank alone can use the port it got.
    if (rootAddr.port() == 0 && nranks > 1)
      return raiseError(mixcclInvalidArgument,
                        "MIXCCL_COMM_ID=%s has port 0: the other ranks cannot learn the port the "
                        "root would pick; give a free port, the same on every rank (one rank "
                        "alone may use port 0)", rootAddr.toString().c_str());
    if (rank == 0) {
      MIXCCL_CHECK(startRendezvousRoot(rootAddr, id.secret, &bound));
      if (rootAddr.port() == 0) id.root = toWire(bound);
    }
  }
  NetInterface iface;
  MIXCCL_CHECK(selectInterface(&iface));
  Socket listener;
  SocketAddress listenAddr;
  MIXCCL_CHECK(listenOn(iface.address, &listener, &listenAddr));
  ListenerRegistration registration(comm, listener.fd());

  PeerInfo mine{};
  fillLocalHostInfo(&mine);
  mine.rank = rank;
  mine.listenAddr = toWire(listenAddr);
  int domainColor = 0;
  MIXCCL_CHECK(chooseAdaptor(comm, &domainColor));
  snprintf(mine.adaptor, sizeof(mine.adaptor), "%s", comm->adaptor->name.c_str());
  mine.domainColor = domainColor;
  mine.device = comm->device;
  describeAgreedSettings(comm, &mine);
  describeConnectRequest(comm, &mine);
  if (exchangePeers) {
    MIXCCL_CHECK(exchangePeers(mine, &comm->peers));
    for (int r = 0; r < nranks; ++r)
      if ((int)comm->peers.size() != nranks || comm->peers[r].rank != r)
        return raiseError(mixcclInternalError, "rank %d: the peer exchange gave a wrong table "
                          "(entry %d)", rank, r);
  } else {
    MIXCCL_CHECK(rendezvous(id, rank, nranks, mine, deadline, &comm->peers));
  }
  MIXCCL_CHECK(checkAgreedSettings(comm));

  // This host's sizes (algo/tuning.h), before the mesh: its socket buffers are set as it connects.
  int localRanks = 0;
  for (const PeerInfo& p : comm->peers) localRanks += p.hostHash == comm->peers[rank].hostHash;
  comm->tuning = deriveTuning(tuningInputsFrom(hostCaches(rank), hostCores(rank), localRanks),
                              envTuningOverrides());
  MeshParams mesh{rank, nranks, config.nsocksPerPeer, id.commHash, id.secret};
  mesh.socketBufferBytes = comm->tuning.socketBufferBytes;
  MIXCCL_CHECK(agreeConnectMode(comm, &comm->lazyConnect, &comm->connectWhy));
  INFO(kLogInit | kLogNet, "rank %d: connections %s (%s)", rank,
       comm->lazyConnect ? "on first use" : "to every peer at init", comm->connectWhy.c_str());
  std::vector<std::vector<Socket>> conns(nranks);
  std::vector<std::unique_ptr<Connection>> links(nranks);
  if (!comm->lazyConnect) {
    MIXCCL_CHECK(connectMesh(listener, mesh, comm->peers, deadline, &conns));
    if (comm->initCancel.load())
      return raiseError(mixcclInvalidUsage, "rank %d: initialisation aborted", rank);
    MIXCCL_CHECK(connectTransports(comm, id, mesh, &conns, deadline, &links));
    MIXCCL_CHECK(setupSlots(comm, links, conns, deadline));
  } else {
    // Nothing is connected yet: whatever needs a pair connects it (lazy_connector.h). Without
    // control connections to agree over, device memory is staged (socket and shared memory
    // move host memory only anyway); the shared-memory slots are agreed later, over init's
    // collectives (setupSlotsOverCollectives).
    comm->transportWhy.assign(nranks, "");
    comm->deviceDirect.pair.assign(nranks, false);
    comm->deviceDirect.why.assign(nranks, "no (connected on first use: device memory is "
                                          "staged through host memory)");
    comm->deviceDirect.all = false;
  }

  ProxyParams pp;
  pp.rank = rank;
  pp.nranks = nranks;
  pp.spinUs = env().spinUs;
  pp.yieldWhileSpinning = localRanks > onlineCpuCount();
  pp.timeoutS = config.timeoutS;
  for (int r = 0; r < nranks; ++r) pp.peerNames.push_back(comm->peerName(r));
  std::vector<Socket> control(nranks);
  for (int r = 0; r < nranks; ++r)
    if (!conns[r].empty()) control[r] = std::move(conns[r][0]);
  std::unique_ptr<Proxy> proxy(new Proxy(pp, comm->health, std::move(control), std::move(links)));
  if (comm->lazyConnect) {
    LazyParams lp;
    lp.mesh = mesh;
    lp.peers = comm->peers;
    lp.names = pp.peerNames;
    lp.netName = config.netName;
    lp.netSource = config.netSource;
    lp.wantShm = !env().shmDisable;
    lp.shm = shmParamsFor(comm);
    lp.frameBytes = env().socketFrameBytes;
    lp.timeoutS = config.timeoutS;
    comm->connector.reset(new LazyConnector(lp, std::move(listener)));
    proxy->setPairSource(comm->connector.get());
  }
  MIXCCL_CHECK(proxy->start());
  comm->proxy = std::move(proxy);
  if (comm->connector) {
    Proxy* p = comm->proxy.get();
    MIXCCL_CHECK(comm->connector->start([p] { p->wake(); }));
  }
  MIXCCL_CHECK(setupRecoveryListener(comm, iface.address, deadline));
  MIXCCL_CHECK(exchangeTopology(comm, iface.name));
  {
    // Every rank must run the same algorithm with the same chunk: agree on them.
    Transfers t(*comm->proxy, deadline);
    CollContext ctx{rank, nranks, t, comm->tuning.chunkBytes};
    MIXCCL_CHECK(agreeTuning(ctx, &comm->tuning));
    INFO(kLogInit | kLogColl, "rank %d: tuning: %s", rank, comm->tuning.describe().c_str());
  }
  if (comm->lazyConnect) MIXCCL_CHECK(setupSlotsOverCollectives(comm, deadline));
  MIXCCL_CHECK(setupDomains(comm));
  MIXCCL_CHECK(setupHostMap(comm));
  INFO(kLogInit, "rank %d of %d ready (comm %016llx%s%s)", rank, nranks,
       (unsigned long long)id.commHash, config.commName.empty() ? "" : ", ",
       config.commName.c_str());
  return mixcclSuccess;
}

}  // namespace

Result createComm(Comm** out, int nranks, const UniqueIdData& id, int rank,
                  const CommConfig& config, int device, const PeerExchange& exchangePeers) {
  std::unique_ptr<Comm> comm(new Comm);
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = device;
  comm->config = config;
  comm->id = id;
  if (config.blocking) {
    MIXCCL_CHECK(connectComm(comm.get(), id, exchangePeers));
    registerComm(comm.get());
    *out = comm.release();
    return mixcclSuccess;
  }
  comm->initState.store(mixcclInProgress, std::memory_order_release);
  Comm* c = comm.release();
  registerComm(c);
  // The thread needs no reference: Abort and Destroy join it before they drop the owner's.
  c->initThread = std::thread([c, id, exchangePeers] {
    setThreadCancelFlag(&c->initCancel);
    Result r = connectComm(c, id, exchangePeers);
    if (r != mixcclSuccess) {
      c->initError = threadLastError();
      c->setLastError(c->initError);
    }
    setThreadCancelFlag(nullptr);
    // Before the state is published (the owner may then join and fork): as the acceptor's.
    releaseThreadCrypto();
    c->initState.store(r, std::memory_order_release);
  });
  *out = c;
  return mixcclInProgress;
}

Result checkCommReady(const char* fn, Comm* comm) {
  Result state = (Result)comm->initState.load(std::memory_order_acquire);
  if (state == mixcclSuccess) return mixcclSuccess;
  if (state == mixcclInProgress)
    return raiseError(mixcclInvalidArgument,
                      "%s: the communicator is still initialising (non-blocking init): poll "
                      "mixcclCommGetAsyncError until it returns mixcclSuccess first", fn);
  return raiseError(state, "%s: the communicator's initialisation failed: %s", fn,
                    comm->initError.c_str());
}

}  // namespace mixccl
