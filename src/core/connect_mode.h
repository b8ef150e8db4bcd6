// When the pairs of a communicator connect (MIXCCL_CONNECT): eager connects every pair at init,
// lazy on first use (lazy_connector.h). No rank may decide alone: a rank that connects every
// pair at init waits on peers that wait for a first use, until the timeout. So each rank puts
// what it asked for in its PeerInfo, and after the exchange every rank applies the same rule to
// the same table, before any pair connects.
#pragma once

#include <string>

#include "base/result.h"
#include "core/comm.h"

namespace mixccl {

// Fills mine's connectAsked from MIXCCL_CONNECT (kConnectInvalid unless auto, eager or lazy),
// lazyAlone (the mode this rank would choose by itself) and rdmaPort.
void describeConnectRequest(const Comm* comm, PeerInfo* mine);

// The mode every rank applies, from comm->peers:
//  - a rank whose MIXCCL_CONNECT is none of auto, eager, lazy: mixcclInvalidArgument on every
//    rank (that rank's message names the value, the others' name that rank);
//  - two ranks that set MIXCCL_CONNECT to eager and lazy: mixcclInvalidUsage on every rank,
//    naming both ranks and values (ranks that leave it unset or auto follow the others);
//  - eager when a rank set it, or when MIXCCL_NET=auto and any rank's host has an active RDMA
//    port (its pairs' transports are planned at init from every rank's ports);
//  - lazy when a rank set it; with nobody setting it, lazy above 16 ranks, eager up to 16.
// why says which rule decided, naming the rank it came from when that is not this one.
Result agreeConnectMode(const Comm* comm, bool* lazy, std::string* why);

}  // namespace mixccl
