// Creating a communicator: rendezvous through the root, connect the mesh, start the proxy.
#include <sys/socket.h>

#include <cstring>
#include <string>

#include "bootstrap/bootstrap.h"
#include "bootstrap/interfaces.h"
#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "core/comm.h"
#include "core/comm_topology.h"
#include "adaptors/adaptor_loader.h"
#include "core/domain_comm.h"
#include "core/comm_registry.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/registry.h"
#include "transport/shm_connection.h"
#include "transport/socket_connection.h"
#include "transport/socket_mesh.h"
#ifdef MIXCCL_HAVE_OFI
#include "transport/ofi/ofi_transport.h"
#endif

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

// Chooses and connects a transport for every pair (transport/registry.h): shared memory within
// a host unless MIXCCL_SHM_DISABLE=1 or MIXCCL_NET=socket (or config.netName "socket"), then
// sockets. Logs the choice (INFO); mixcclCommInspect "transport.<peer>" reports it.
Result connectTransports(Comm* comm, const UniqueIdData& id, const MeshParams& mesh,
                         std::vector<std::vector<Socket>>* conns, const Deadline& deadline,
                         std::vector<std::unique_ptr<Connection>>* out) {
  ShmParams sp;
  sp.rank = comm->rank;
  sp.nranks = comm->nranks;
  sp.commHash = id.commHash;
  sp.ringBytes = env().shmBytes;
  sp.cma = env().shmCma;
  sp.cmaThreshold = env().shmCmaThreshold;
  const char* off = env().shmDisable ? "MIXCCL_SHM_DISABLE=1"
                    : comm->config.netExplicit && comm->config.netName == "socket"
                        ? "MIXCCL_NET=socket / config.netName" : nullptr;
  TransportRegistry registry;
  // MIXCCL_NET=ofi: libfabric carries every pair, same host included, and is the only choice:
  // if it cannot start, init fails naming the provider (never a quiet fallback to sockets).
  const bool ofiOnly = comm->config.netExplicit && comm->config.netName == "ofi";
#ifdef MIXCCL_HAVE_OFI
  if (ofiOnly) registry.add(std::unique_ptr<Transport>(new OfiTransport(env().ofiProvider)));
#endif
  if (!ofiOnly) {
    registry.add(std::unique_ptr<Transport>(new ShmTransport(sp, off == nullptr)));
    registry.add(std::unique_ptr<Transport>(new SocketTransport()));
  }
  TransportSetup setup;
  setup.rank = comm->rank;
  setup.nranks = comm->nranks;
  setup.commHash = id.commHash;
  setup.peers = &comm->peers;
  setup.conns = conns;
  setup.deadline = deadline;
  setup.frameBytes = env().socketFrameBytes;
  MIXCCL_CHECK(registry.connectAll(setup, out));
  for (int r = 0; r < comm->nranks; ++r) {
    if (r == comm->rank) continue;
    if (auto* shm = dynamic_cast<const ShmConnection*>((*out)[r].get())) {
      INFO(kLogInit | kLogNet, "rank %d: transport to %s: shm (ring %llu KiB, cross-memory attach %s)",
           comm->rank, comm->peerName(r).c_str(),
           (unsigned long long)(shm->link().out.capacity() >> 10), shm->link().cmaSend ? "on" : "off");
      continue;
    }
    if (ofiOnly) continue;  // the libfabric transport logs its provider per peer itself
    int n = connectionsTo(mesh, comm->peers, r);
    bool sameHost = comm->peers[r].hostHash == comm->peers[comm->rank].hostHash;
    INFO(kLogInit | kLogNet, "rank %d: transport to %s: %s (%d connection%s%s%s)", comm->rank,
         comm->peerName(r).c_str(), (*out)[r]->transportName(), n, n == 1 ? "" : "s",
         sameHost && off ? ", same host, " : "", sameHost && off ? off : "");
  }
  return mixcclSuccess;
}

// Rendezvous, connections, proxy: everything after the fields of comm are set.
Result connectComm(Comm* comm, const UniqueIdData& id) {
  const int rank = comm->rank, nranks = comm->nranks;
  const CommConfig& config = comm->config;
  setLogRank(rank);
  Deadline deadline = Deadline::afterSeconds(config.timeoutS);

  if ((id.flags & kIdRootAtRank0) && rank == 0) {
    SocketAddress rootAddr, bound;
    MIXCCL_CHECK(fromWire(id.root, &rootAddr));
    MIXCCL_CHECK(startRendezvousRoot(rootAddr, id.secret, &bound));
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
  MIXCCL_CHECK(rendezvous(id, rank, nranks, mine, deadline, &comm->peers));

  MeshParams mesh{rank, nranks, config.nsocksPerPeer, id.commHash, id.secret};
  std::vector<std::vector<Socket>> conns;
  MIXCCL_CHECK(connectMesh(listener, mesh, comm->peers, deadline, &conns));
  if (comm->initCancel.load())
    return raiseError(mixcclInvalidUsage, "rank %d: initialisation aborted", rank);

  std::vector<std::unique_ptr<Connection>> links;
  MIXCCL_CHECK(connectTransports(comm, id, mesh, &conns, deadline, &links));

  ProxyParams pp;
  pp.rank = rank;
  pp.nranks = nranks;
  pp.spinUs = env().spinUs;
  for (int r = 0; r < nranks; ++r) pp.peerNames.push_back(comm->peerName(r));
  std::vector<Socket> control(nranks);
  for (int r = 0; r < nranks; ++r)
    if (!conns[r].empty()) control[r] = std::move(conns[r][0]);
  std::unique_ptr<Proxy> proxy(new Proxy(pp, comm->health, std::move(control), std::move(links)));
  MIXCCL_CHECK(proxy->start());
  comm->proxy = std::move(proxy);
  MIXCCL_CHECK(exchangeTopology(comm, iface.name));
  MIXCCL_CHECK(setupDomains(comm));
  INFO(kLogInit, "rank %d of %d ready (comm %016llx%s%s)", rank, nranks,
       (unsigned long long)id.commHash, config.commName.empty() ? "" : ", ",
       config.commName.c_str());
  return mixcclSuccess;
}

}  // namespace

Result createComm(Comm** out, int nranks, const UniqueIdData& id, int rank,
                  const CommConfig& config, int device) {
  std::unique_ptr<Comm> comm(new Comm);
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = device;
  comm->config = config;
  comm->id = id;
  if (config.blocking) {
    MIXCCL_CHECK(connectComm(comm.get(), id));
    registerComm(comm.get());
    *out = comm.release();
    return mixcclSuccess;
  }
  comm->initState.store(mixcclInProgress, std::memory_order_release);
  Comm* c = comm.release();
  registerComm(c);
  // The thread needs no reference: Abort and Destroy join it before they drop the owner's.
  c->initThread = std::thread([c, id] {
    setThreadCancelFlag(&c->initCancel);
    Result r = connectComm(c, id);
    if (r != mixcclSuccess) {
      c->initError = threadLastError();
      c->setLastError(c->initError);
    }
    setThreadCancelFlag(nullptr);
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
