// What every rank of a communicator must ask for alike, checked from the peer table right after
// the exchange at init (bootstrap/peer_info.h), before any pair connects. With connections on
// first use two ranks may never meet to compare their settings, and a rank that set something
// else would otherwise only show up as a refused connection or a timeout in a later call; here
// every rank fails init at once with the same message naming the ranks that differ.
#pragma once

#include "base/result.h"
#include "core/comm.h"

namespace mixccl {

// Fills this rank's entries of the record it sends (mine) from comm's configuration.
void describeAgreedSettings(const Comm* comm, PeerInfo* mine);

// Checks comm->peers: the same transport name (MIXCCL_NET / config.netName) on every rank, and
// the same MIXCCL_HIER_HOSTS (algo/host_map.h). mixcclInvalidUsage when not.
Result checkAgreedSettings(const Comm* comm);

}  // namespace mixccl
