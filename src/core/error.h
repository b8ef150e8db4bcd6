// Errors: each is logged once where it arises and kept as the "last error" of the thread; the
// API layer copies it to the communicator so mixcclGetLastError(comm) can return it.
#pragma once

#include <string>

#include "core/result.h"

namespace mixccl {

// Logs the message (WARN), stores it as the calling thread's last error, returns code.
Result raiseError(Result code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Stores an error already logged elsewhere (another thread) as this thread's last error.
Result adoptError(Result code, const std::string& msg);

// The calling thread's last error message ("" if none).
const std::string& threadLastError();
void clearThreadLastError();

}  // namespace mixccl
