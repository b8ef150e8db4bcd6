// mixccl's one host runtime: ordinary memory, and streams, events and host functions whose
// work is done by the time a call returns. It is the runtime of the built-in host adaptor and
// of every host-memory plugin that leaves its device runtime out (mixccl_adaptor.h).
#pragma once

#include "adaptors/adaptor_table.h"

namespace mixccl {

// Sets every runtime entry of t that is NULL to the host runtime's; true if any was NULL.
bool fillHostRuntime(AdaptorTable* t);

// The calling thread's message of the host runtime's latest call ("" when it succeeded).
const char* hostRuntimeLastError();

}  // namespace mixccl
