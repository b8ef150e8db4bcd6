// Socket options for TCP connections between ranks of one host (loopback, or a local address):
// buffer sizes and congestion control chosen for a path with no network in it.
#pragma once

#include <vector>

#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"

namespace mixccl {

// Applies bufferBytes (SO_SNDBUF and SO_RCVBUF; 0 leaves the kernel's autotuning; the
// communicator's tuning, MIXCCL_SOCKET_BUFFER_BYTES or derived) and MIXCCL_SOCKET_CONGESTION
// to every connection of conns[peer] whose peer shares this rank's host, and logs what the
// kernel granted. Best effort: a refused option leaves the kernel's default, which still works
// (warned once).
void tuneSameHostConnections(int rank, const std::vector<PeerInfo>& peers, int bufferBytes,
                             std::vector<std::vector<Socket>>* conns);

}  // namespace mixccl
