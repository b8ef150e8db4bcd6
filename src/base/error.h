// Errors: each is logged once where it arises and kept as the "last error" of the thread; the
// API layer copies it to the communicator so mixcclGetLastError(comm) can return it.
#pragma once

#include <string>

#include "base/result.h"

namespace mixccl {

// Logs the message (WARN), stores it as the calling thread's last error, returns code.
Result raiseError(Result code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Stores an error already logged elsewhere (another thread) as this thread's last error.
Result adoptError(Result code, const std::string& msg);

// The text of a result code (mixcclGetErrorString).
const char* resultString(Result result);
// The name of a result code ("mixcclRemoteError"): what a log line ends with. The texts are
// NCCL's generic guesses ("remote process exited or there was a network error") and would
// contradict a precise message (a wrong secret, a missing rank) printed beside them.
const char* resultName(Result result);

// The calling thread's last error message ("" if none).
const std::string& threadLastError();
void clearThreadLastError();

}  // namespace mixccl
