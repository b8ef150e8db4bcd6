#include "base/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/env.h"
#include "base/env_parse.h"

namespace mixccl {
namespace {

struct LogConfig {
  LogLevel level = LogLevel::Warn;
  unsigned subsys = kLogAll;
  char host[64] = {0};
};

// Names compare without regard to case; an unknown one is named in a warning (a typo must not
// silently select nothing).
unsigned parseSubsys(const std::string& spec) {
  static const struct {
    const char* name;
    unsigned mask;
  } kNames[] = {{"INIT", kLogInit}, {"BOOTSTRAP", kLogBootstrap}, {"NET", kLogNet},
                {"PROXY", kLogProxy}, {"COLL", kLogColl},           {"ENV", kLogEnv},
                {"ALL", kLogAll}};
  if (spec.empty()) return kLogAll;
  bool exclude = spec[0] == '^';
  unsigned mask = 0;
  size_t pos = exclude ? 1 : 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    std::string name = spec.substr(pos, end - pos);
    bool known = false;
    for (const auto& n : kNames) {
      if (equalsIgnoreCase(name, n.name)) {
        mask |= n.mask;
        known = true;
      }
    }
    if (!known && !name.empty())
      fprintf(stderr,
              "mixccl WARN ignoring '%s' in MIXCCL_DEBUG_SUBSYS=%s (expected names among INIT, "
              "BOOTSTRAP, NET, PROXY, COLL, ENV, ALL, in any case)\n",
              name.c_str(), spec.c_str());
    pos = end + 1;
  }
  return exclude ? ~mask : mask;
}

const LogConfig& config() {
  static const LogConfig cfg = [] {
    LogConfig c;
    std::string level = env().debugLevel;
    if (level == "NONE") c.level = LogLevel::None;
    else if (level == "INFO") c.level = LogLevel::Info;
    else if (level == "TRACE") c.level = LogLevel::Trace;
    else c.level = LogLevel::Warn;
    c.subsys = parseSubsys(env().debugSubsys);
    gethostname(c.host, sizeof(c.host) - 1);
    return c;
  }();
  return cfg;
}

thread_local int tlsRank = -1;
std::mutex logMutex;

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::Warn: return "WARN";
    case LogLevel::Info: return "INFO";
    case LogLevel::Trace: return "TRACE";
    default: return "";
  }
}

}  // namespace

void setLogRank(int rank) { tlsRank = rank; }

bool logEnabled(LogLevel level, unsigned subsys) {
  const LogConfig& c = config();
  return level <= c.level && (subsys & c.subsys) != 0;
}

void logMessage(LogLevel level, unsigned subsys, const char* file, int line, const char* fmt,
                ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  const char* base = strrchr(file, '/');
  base = base ? base + 1 : file;
  std::lock_guard<std::mutex> lock(logMutex);
  fprintf(stderr, "%s:%d:%ld [%d] mixccl %s %s:%d %s\n", config().host, (int)getpid(),
          (long)syscall(SYS_gettid), tlsRank, levelName(level), base, line, msg);
  fflush(stderr);
}

}  // namespace mixccl
