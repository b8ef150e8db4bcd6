// Connecting to a server that authenticates (the rendezvous root, a peer's transport listener),
// and connecting again when it closes the connection before the handshake.
#pragma once

#include "bootstrap/auth.h"
#include "bootstrap/socket.h"
#include "bootstrap/socket_address.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

// Connects to addr and runs the client side of the handshake (auth.h). A server flooded by
// strangers drops its idlest connections (handshake_server.h), and a real rank's may be among
// them: a connection closed or reset before the server's challenge is made again after a
// pause that grows (10 ms doubling up to 200 ms, randomised so that ranks turned away together
// do not come back together), until the deadline. what names the server in messages.
// listening: as for connectBefore (a refusal is final).
Result connectAuthenticated(const SocketAddress& addr, const Secret& secret,
                            const Deadline& deadline, const char* what, Socket* conn,
                            bool listening = false);

}  // namespace mixccl
