#include "core/error.h"

#include <cstdarg>
#include <cstdio>

#include "core/log.h"

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
  WARN(kLogAll, "%s (%s)", msg, mixcclGetErrorString(code));
  return code;
}

Result adoptError(Result code, const std::string& msg) {
  tlsLastError = msg;
  return code;
}

const std::string& threadLastError() { return tlsLastError; }
void clearThreadLastError() { tlsLastError.clear(); }

}  // namespace mixccl
