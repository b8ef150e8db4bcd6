// Where the survivors of a failure meet to shrink the communicator (shrink_rendezvous.h): a
// failure cuts every connection of the communicator, so each rank keeps one more listener open
// for the communicator's life, and every rank learns every rank's address at init. Nothing
// serves it until mixcclCommShrink: dials wait in its backlog meanwhile.
#pragma once

#include "bootstrap/socket_address.h"
#include "base/clock.h"
#include "base/result.h"

struct mixcclComm;

namespace mixccl {

// Opens comm's recovery listener on address (port 0: any) and gathers every rank's address into
// comm->recoveryAddrs. After the proxy started: the exchange runs over comm's own connections.
Result setupRecoveryListener(mixcclComm* comm, const SocketAddress& address,
                             const Deadline& deadline);

}  // namespace mixccl
