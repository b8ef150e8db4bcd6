// Send/Recv of device memory in a job of several domains: the group's transfers are staged
// through pinned host memory as one job of the staged executor (staged_executor.h), in stream
// order and in call order with the staged collectives, so that every rank meets its peers'
// messages in the order the host ranks post them.
#pragma once

#include <vector>

#include "base/result.h"
#include "core/comm.h"
#include "core/work.h"

namespace mixccl {

// Enqueues the Send/Recv items of one group (collectives among items are skipped) on their
// stream and returns: sends copied to staging before the job, the transfers on mixccl's
// transport in the job, receives copied back after it. The items must share one stream.
Result runStagedTransfers(Comm* comm, const std::vector<WorkItem*>& items);

}  // namespace mixccl
