// The rendezvous root: a thread that collects every rank's PeerInfo and sends the full table
// back to all ranks, then exits. One root serves one communicator's init; its one thread
// serves every connection, strangers included (handshake_server.h).
#pragma once

#include <cstdint>

#include "bootstrap/auth.h"
#include "bootstrap/socket_address.h"
#include "base/result.h"

namespace mixccl {

// Listens on addr (port 0: any free port), starts the root thread, returns the bound address.
// The thread gives up after MIXCCL_TIMEOUT_S if not all ranks arrive.
Result startRendezvousRoot(const SocketAddress& addr, const Secret& secret, SocketAddress* bound);

// What the rendezvous roots of this process did with the connections they accepted, summed
// over all of them since the process started. Lets a test tell a stranger that was refused
// from one that was only cut when the rendezvous ended (which would hide a root that let it
// through). Every accepted connection ends in exactly one of the last four.
struct RootConnectionCounts {
  uint64_t accepted = 0;  // connections taken from the listener
  uint64_t admitted = 0;  // authenticated ranks that entered the table
  uint64_t refused = 0;   // failed authentication, sent a bad or conflicting hello, or came
                          // after the rendezvous failed
  uint64_t dropped = 0;   // idle: evicted to make room, out of time, or gone before their
                          // handshake (HandshakeServer)
  uint64_t cut = 0;       // still in their handshake when the rendezvous ended
};
RootConnectionCounts rootConnectionCounts();

// Root threads of this process that have not finished yet (their OpenSSL state given back
// included). Lets a test wait for a detached root to end.
int rendezvousRootsRunning();

}  // namespace mixccl
