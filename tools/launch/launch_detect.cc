// Rank detection of mixccl_launch (no dependency on the library: the peer benchmarks use it too).
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "launch_internal.h"
#include "mixccl_launch.h"

namespace mixccl_launch {

namespace {
thread_local std::string g_lastError;
}

void setError(const std::string& msg) { g_lastError = msg; }
const std::string& lastError() { return g_lastError; }

bool parseEnvInt(const char* name, int minValue, int* out, bool* present) {
  const char* v = std::getenv(name);
  *present = v != nullptr && *v != '\0';
  if (!*present) return true;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < minValue || x > INT_MAX) {
    setError(std::string("mixccl_launch: environment variable ") + name + "='" + v +
             "' is not a valid number");
    return false;
  }
  *out = static_cast<int>(x);
  return true;
}

bool validHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size()) return false;
  for (size_t i = colon + 1; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  long port = std::strtol(s.c_str() + colon + 1, nullptr, 10);
  return port > 0 && port <= 65535;
}

}  // namespace mixccl_launch

using namespace mixccl_launch;

namespace {

struct Source {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* localRank;
  const char* localSize;
};

const Source kSources[] = {
    {"mixcclrun", "MIXCCL_RANK", "MIXCCL_NRANKS", "MIXCCL_LOCAL_RANK", "MIXCCL_LOCAL_SIZE"},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};

}  // namespace

extern "C" int mixcclLaunchDetect(mixcclLaunchInfo* info) {
  if (info == nullptr) {
    setError("mixccl_launch: info is NULL");
    return -1;
  }
  std::memset(info, 0, sizeof(*info));
  info->nranks = 1;
  info->localSize = -1;
  std::snprintf(info->launcher, sizeof(info->launcher), "none");
  for (const Source& s : kSources) {
    const char* r = std::getenv(s.rank);
    if (r == nullptr || *r == '\0') continue;
    bool present = false;
    if (!parseEnvInt(s.rank, 0, &info->rank, &present)) return -1;
    bool sizePresent = false;
    if (!parseEnvInt(s.size, 1, &info->nranks, &sizePresent)) return -1;
    if (!sizePresent) {
      setError(std::string("mixccl_launch: ") + s.rank + " is set but " + s.size +
               " is not; cannot tell the number of ranks");
      return -1;
    }
    info->localRank = info->rank;
    if (!parseEnvInt(s.localRank, 0, &info->localRank, &present)) return -1;
    // Slurm writes SLURM_NTASKS_PER_NODE as "2" or "2(x3),1": only a plain number is a size.
    const char* ls = std::getenv(s.localSize);
    if (ls != nullptr && *ls != '\0') {
      char* end = nullptr;
      long x = std::strtol(ls, &end, 10);
      if (end != ls && *end == '\0' && x > 0 && x <= INT_MAX) info->localSize = static_cast<int>(x);
    }
    std::snprintf(info->launcher, sizeof(info->launcher), "%s", s.launcher);
    break;
  }
  if (info->rank >= info->nranks) {
    setError("mixccl_launch: rank " + std::to_string(info->rank) + " is not below the size " +
             std::to_string(info->nranks) + " (" + info->launcher + ")");
    return -1;
  }

  const char* id = std::getenv("MIXCCL_COMM_ID");
  if (id != nullptr && *id != '\0') {
    if (!validHostPort(id)) {
      setError(std::string("mixccl_launch: MIXCCL_COMM_ID='") + id +
               "' is not of the form host:port");
      return -1;
    }
    std::snprintf(info->commId, sizeof(info->commId), "%s", id);
  } else if (std::strcmp(info->launcher, "torchrun") == 0) {
    const char* addr = std::getenv("MASTER_ADDR");
    int port = 0;
    bool present = false;
    if (!parseEnvInt("MASTER_PORT", 1, &port, &present)) return -1;
    if (addr == nullptr || *addr == '\0' || !present) {
      setError("mixccl_launch: torchrun environment without MASTER_ADDR/MASTER_PORT; set "
               "MIXCCL_COMM_ID=host:port");
      return -1;
    }
    if (port + 1 > 65535) {
      setError("mixccl_launch: MASTER_PORT+1 is not a valid port; set MIXCCL_COMM_ID=host:port");
      return -1;
    }
    // MASTER_PORT is held by torchrun's own store: mixccl's root listens on the next port.
    std::snprintf(info->commId, sizeof(info->commId), "%s:%d", addr, port + 1);
  }
  return 0;
}

extern "C" const char* mixcclLaunchLastError(void) { return lastError().c_str(); }
