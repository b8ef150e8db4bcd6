#include "base/error.h"

#include <cstdarg>
#include <cstdio>

#include "base/log.h"

namespace mixccl {
namespace {
thread_local std::string tlsLastError;
}

Result raiseError(Result code, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  tlsLastError = msg;
  WARN(kLogAll, "%s (%s)", msg, resultName(code));
  return code;
}

Result adoptError(Result code, const std::string& msg) {
  tlsLastError = msg;
  return code;
}

const char* resultString(Result result) {
  switch (result) {
    case mixcclSuccess: return "no error";
    case mixcclUnhandledDeviceError: return "unhandled device error";
    case mixcclSystemError: return "unhandled system error (network, memory, ...)";
    case mixcclInternalError: return "internal error - please report this issue";
    case mixcclInvalidArgument: return "invalid argument";
    case mixcclInvalidUsage: return "invalid usage";
    case mixcclRemoteError: return "remote process exited or there was a network error";
    case mixcclInProgress: return "operation in progress";
    case mixcclTimeout: return "operation timed out";
    default: return "unknown result code";
  }
}

const char* resultName(Result result) {
  switch (result) {
    case mixcclSuccess: return "mixcclSuccess";
    case mixcclUnhandledDeviceError: return "mixcclUnhandledDeviceError";
    case mixcclSystemError: return "mixcclSystemError";
    case mixcclInternalError: return "mixcclInternalError";
    case mixcclInvalidArgument: return "mixcclInvalidArgument";
    case mixcclInvalidUsage: return "mixcclInvalidUsage";
    case mixcclRemoteError: return "mixcclRemoteError";
    case mixcclInProgress: return "mixcclInProgress";
    case mixcclTimeout: return "mixcclTimeout";
    default: return "unknown result code";
  }
}

const std::string& threadLastError() { return tlsLastError; }
void clearThreadLastError() { tlsLastError.clear(); }

}  // namespace mixccl
