#include "perf_memory_budget.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace mixperf {
namespace {

// A number from a file (one value), or 0 when absent or "max" (no limit).
size_t readNumber(const char* path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return 0;
  try {
    return static_cast<size_t>(std::stoull(s));
  } catch (...) {
    return 0;
  }
}

size_t memAvailable() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

// The cgroup limit left to this process's group; 0 when there is none. cgroup v1 reports "no
// limit" as a huge number, which the min() below ignores.
size_t cgroupLeft() {
  size_t limit = readNumber("/sys/fs/cgroup/memory.max");
  size_t used = readNumber("/sys/fs/cgroup/memory.current");
  if (limit == 0) {
    limit = readNumber("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    used = readNumber("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  }
  if (limit == 0) return 0;
  return limit > used ? limit - used : 1;
}

std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return b;
}

// -e as the user likely wrote it: 16G, 512M, 1000.
std::string sizeArg(size_t b) {
  const char* units = "KMGT";
  int u = -1;
  while (u < 3 && b != 0 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + (u >= 0 ? std::string(1, units[u]) : std::string());
}

}  // namespace

size_t availableHostMemory() {
  size_t avail = memAvailable();
  size_t cg = cgroupLeft();
  if (cg != 0 && (avail == 0 || cg < avail)) avail = cg;
  return avail;
}

std::string memoryShortfall(size_t maxBytes, size_t bufferBytes, int buffers,
                            int ranksOnHost, size_t available) {
  const double perRank = static_cast<double>(bufferBytes) * buffers;
  const double all = perRank * (ranksOnHost > 0 ? ranksOnHost : 1);
  if (available == 0 || all <= static_cast<double>(available)) return "";
  std::ostringstream m;
  m << "-e " << sizeArg(maxBytes) << " needs " << gib(perRank) << " of host memory per rank ("
    << buffers << " buffers of " << gib(static_cast<double>(bufferBytes)) << "); "
    << (ranksOnHost > 0 ? ranksOnHost : 1) << " rank(s) on this host need " << gib(all)
    << " but " << gib(static_cast<double>(available)) << " is available; lower -e (maxbytes)";
  return m.str();
}

}  // namespace mixperf
