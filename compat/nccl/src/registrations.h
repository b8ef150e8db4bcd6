// ncclCommRegister handles. mixccl moves host memory through its own transports and device
// memory through the adaptor's library, neither of which needs buffers registered ahead, so a
// registration only records (comm, buffer, size): a handle is checked on deregistration (it
// must be live and belong to that communicator) and freed with its communicator.
#pragma once

#include "shim.h"

namespace nccl_shim {

// Forgets every registration of comm (at its destroy or abort).
void dropRegistrations(ncclComm_t comm);

}  // namespace nccl_shim
