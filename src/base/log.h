// Logging controlled by MIXCCL_DEBUG (NONE|WARN|INFO|TRACE) and MIXCCL_DEBUG_SUBSYS
// (comma list of INIT,BOOTSTRAP,NET,PROXY,COLL,ALL; a leading ^ excludes).
#pragma once

#include <cstdarg>

namespace mixccl {

enum class LogLevel { None = 0, Warn = 1, Info = 2, Trace = 3 };

enum LogSubsys : unsigned {
  kLogInit = 1u << 0,
  kLogBootstrap = 1u << 1,
  kLogNet = 1u << 2,
  kLogProxy = 1u << 3,
  kLogColl = 1u << 4,
  kLogEnv = 1u << 5,
  kLogAll = ~0u,
};

bool logEnabled(LogLevel level, unsigned subsys);
void logMessage(LogLevel level, unsigned subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// The rank shown in log lines of the calling thread (-1: none yet).
void setLogRank(int rank);

}  // namespace mixccl

#define MIXCCL_LOG(level, subsys, ...)                                                  \
  do {                                                                                  \
    if (::mixccl::logEnabled(level, subsys))                                            \
      ::mixccl::logMessage(level, subsys, __FILE__, __LINE__, __VA_ARGS__);             \
  } while (0)
#define WARN(subsys, ...) MIXCCL_LOG(::mixccl::LogLevel::Warn, subsys, __VA_ARGS__)
#define INFO(subsys, ...) MIXCCL_LOG(::mixccl::LogLevel::Info, subsys, __VA_ARGS__)
#define TRACE(subsys, ...) MIXCCL_LOG(::mixccl::LogLevel::Trace, subsys, __VA_ARGS__)
