// Device memory straight to the transport (GPUDirect-style), decided per pair at init: a pair
// is direct when the connections on BOTH ends can move device memory (Connection::canMove),
// which each end tells the other over the pair's control connection before the proxy starts,
// so both ranks of a pair decide alike. A staged collective (collective_dispatch.cc) hands
// device buffers to the transport, skipping the host staging copies, only when every pair of
// its rank is direct and the collective only moves bytes (no host-side reduction or copy);
// otherwise it stages as before. mixcclCommInspect "device_direct.<peer>" reports the verdict.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "bootstrap/socket.h"
#include "transport/transport.h"

struct mixcclComm;

namespace mixccl {

struct DeviceDirect {
  std::vector<bool> pair;         // per peer: both ends move device memory
  std::vector<std::string> why;   // per peer: "yes" or "no (...)" with the reason
  bool all = false;               // every peer's pair is direct (and there is one)
};

// Exchanges this rank's per-pair capability with every peer over conns[p][0] and fills
// comm->deviceDirect; one INFO line when this rank's memory is device memory.
Result agreeDeviceDirect(mixcclComm* comm, const std::vector<std::unique_ptr<Connection>>& links,
                         const std::vector<std::vector<Socket>>& conns, const Deadline& deadline);

}  // namespace mixccl
