// The rendezvous root: a thread that collects every rank's PeerInfo and sends the full table
// back to all ranks, then exits. One root serves one communicator's init.
#pragma once

#include "bootstrap/auth.h"
#include "bootstrap/socket_address.h"
#include "core/result.h"

namespace mixccl {

// Listens on addr (port 0: any free port), starts the root thread, returns the bound address.
// The thread gives up after MIXCCL_TIMEOUT_S if not all ranks arrive.
Result startRendezvousRoot(const SocketAddress& addr, const Secret& secret, SocketAddress* bound);

}  // namespace mixccl
