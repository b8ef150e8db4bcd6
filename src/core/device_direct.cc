#include "core/device_direct.h"

#include <cstdint>

#include "base/error.h"
#include "adaptors/adaptor_loader.h"
#include "base/log.h"
#include "core/comm.h"

namespace mixccl {
namespace {

// The one byte each end sends: a magic in the high bits, so a peer out of step (reading some
// other handshake's bytes) is told apart from one that said "no".
constexpr uint8_t kMagic = 0xd0, kCanMoveDevice = 0x01;

std::string reasonFor(bool mine, bool theirs, const std::string& transport, const std::string& peer) {
  if (mine && theirs) return "yes (both ends' " + transport + " connections move device memory)";
  if (!mine && !theirs)
    return "no (neither end's " + transport + " connection moves device memory)";
  if (!mine) return "no (this rank's " + transport + " connection moves host memory only)";
  return "no (" + peer + "'s " + transport + " connection moves host memory only)";
}

}  // namespace

Result agreeDeviceDirect(mixcclComm* comm, const std::vector<std::unique_ptr<Connection>>& links,
                         const std::vector<std::vector<Socket>>& conns, const Deadline& deadline) {
  const int rank = comm->rank, nranks = comm->nranks;
  DeviceDirect& d = comm->deviceDirect;
  d.pair.assign(nranks, false);
  d.why.assign(nranks, "");
  // Send to every peer first, then read: one byte each way never fills a socket buffer.
  for (int p = 0; p < nranks; ++p) {
    if (p == rank || conns[p].empty()) continue;
    uint8_t b = kMagic | (links[p]->canMove(MemoryKind::Device) ? kCanMoveDevice : 0);
    MIXCCL_CHECK(sendAllBefore(conns[p][0], &b, 1, deadline, comm->peerName(p).c_str()));
  }
  int direct = 0;
  std::string line;
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    if (conns[p].empty()) {
      // Without a control connection the peer cannot be asked; staging needs no agreement.
      d.why[p] = "no (no control connection to agree over)";
      continue;
    }
    uint8_t b = 0;
    MIXCCL_CHECK(recvAllBefore(conns[p][0], &b, 1, deadline, comm->peerName(p).c_str()));
    if ((b & ~kCanMoveDevice) != kMagic)
      return raiseError(mixcclRemoteError, "rank %d: %s sent an invalid device-memory answer "
                        "(0x%02x)", rank, comm->peerName(p).c_str(), b);
    const bool mine = links[p]->canMove(MemoryKind::Device), theirs = (b & kCanMoveDevice) != 0;
    d.pair[p] = mine && theirs;
    d.why[p] = reasonFor(mine, theirs, links[p]->transportName(), comm->peerName(p));
    direct += d.pair[p] ? 1 : 0;
    line += (line.empty() ? "" : "; ") + comm->peerName(p) + ": " + d.why[p];
  }
  d.all = nranks > 1 && direct == nranks - 1;
  if (comm->adaptor && comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY && !line.empty())
    INFO(kLogInit | kLogNet, "rank %d: device memory to the transport directly: %s", rank,
         line.c_str());
  return mixcclSuccess;
}

}  // namespace mixccl
