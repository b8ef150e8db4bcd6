// Creating a communicator: rendezvous through the root, connect the mesh, start the proxy.
#include <cstring>
#include <string>

#include "bootstrap/bootstrap.h"
#include "bootstrap/interfaces.h"
#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "core/comm.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "transport/socket_mesh.h"

std::string mixcclComm::peerName(int r) const {
  if (r < 0 || r >= (int)peers.size()) return "rank " + std::to_string(r);
  const mixccl::PeerInfo& p = peers[r];
  return "rank " + std::to_string(r) + " (" +
         std::string(p.hostname, strnlen(p.hostname, sizeof(p.hostname))) + " pid " +
         std::to_string(p.pid) + ")";
}

namespace mixccl {

Result initComm(Comm** out, int nranks, const UniqueIdData& id, int rank,
                const CommConfig& config, int device) {
  setLogRank(rank);
  Deadline deadline = Deadline::afterSeconds(config.timeoutS);
  std::unique_ptr<Comm> comm(new Comm);
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = device;
  comm->config = config;
  comm->id = id;

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

  PeerInfo mine{};
  fillLocalHostInfo(&mine);
  mine.rank = rank;
  mine.listenAddr = toWire(listenAddr);
  snprintf(mine.adaptor, sizeof(mine.adaptor), "%s", config.adaptor.c_str());
  mine.device = device;
  MIXCCL_CHECK(rendezvous(id, rank, nranks, mine, deadline, &comm->peers));

  MeshParams mesh{rank, nranks, config.nsocksPerPeer, id.commHash, id.secret};
  std::vector<std::vector<Socket>> conns;
  MIXCCL_CHECK(connectMesh(listener, mesh, comm->peers, deadline, &conns));

  ProxyParams pp;
  pp.rank = rank;
  pp.nranks = nranks;
  pp.frameBytes = env().socketFrameBytes;
  pp.spinUs = env().spinUs;
  for (int r = 0; r < nranks; ++r) pp.peerNames.push_back(comm->peerName(r));
  comm->proxy.reset(new Proxy(pp, std::move(conns)));
  MIXCCL_CHECK(comm->proxy->start());
  INFO(kLogInit, "rank %d of %d ready (comm %016llx%s%s)", rank, nranks,
       (unsigned long long)id.commHash, config.commName.empty() ? "" : ", ",
       config.commName.c_str());
  *out = comm.release();
  return mixcclSuccess;
}

}  // namespace mixccl
