// The shared-memory slots of a communicator (transport/shm_slots.h): their parameters, and
// their setup for a communicator connected on first use, which has no control connection to
// every peer to agree over (an eagerly connected one sets them up over its mesh, comm_init.cc).
#pragma once

#include <string>

#include "base/clock.h"
#include "core/comm.h"
#include "transport/shm_slots.h"

namespace mixccl {

// This rank's wish: the slot size (MIXCCL_SHM_SLOT_BYTES, else from the L2 cache and the rank
// count; *sizeWhy says which) and how to wait. The ranks agree on the size afterwards.
ShmSlotsParams shmSlotsParamsFor(const Comm* comm, std::string* sizeWhy);

// For a lazily connected communicator, after the proxy has started: when every rank is on this
// rank's host, the ranks agree (the same decision on every rank, from what all of them said)
// and set up the slots with init's own collectives, ring AllGathers over the two neighbours
// init connected anyway (no connection more per rank): each rank creates its segment, then
// (1) tells everyone whether it wants slots, of which size, and whether its segment exists;
// where all agree each maps every other segment, then (2) tells everyone whether that worked;
// last every name is unlinked, also when a gather fails (a rank died: the error is returned).
// A rank that declines or could not create or map its segment turns the slots off everywhere
// (INFO, or WARN for a failure, says which rank and why); init goes on without them.
Result setupSlotsOverCollectives(Comm* comm, const Deadline& deadline);

}  // namespace mixccl
