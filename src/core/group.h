// Group calls: between mixcclGroupStart and the outermost mixcclGroupEnd, communication calls of
// the calling thread are recorded; GroupEnd runs them, each communicator's work on its own
// thread when there are several (one process driving several ranks must progress them all).
#pragma once

#include "core/work.h"

namespace mixccl {

Result groupStart();
Result groupEnd();
// Whether the calling thread is between mixcclGroupStart and the outermost mixcclGroupEnd.
bool groupOpen();
// Runs item now, or records it when a group is open (taking a reference on its comm).
Result submitWork(WorkItem item);

}  // namespace mixccl
