#include "core/env.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace mixccl {
namespace {

std::string readString(const char* name, const char* dflt) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string(dflt);
}

// Logging is not usable yet (it reads these params), so bad values go straight to stderr.
long long readInt(const char* name, long long dflt, long long min, long long max) {
  const char* v = getenv(name);
  if (!v || !*v) return dflt;
  errno = 0;
  char* end = nullptr;
  long long x = strtoll(v, &end, 0);
  if (errno != 0 || *end != '\0' || x < min || x > max) {
    fprintf(stderr, "mixccl WARN ignoring %s=%s (expected an integer in [%lld, %lld]); using %lld\n",
            name, v, min, max, dflt);
    return dflt;
  }
  return x;
}

EnvParams load() {
  EnvParams p;
  p.debugLevel = readString("MIXCCL_DEBUG", "WARN");
  p.debugSubsys = readString("MIXCCL_DEBUG_SUBSYS", "");
  p.timeoutS = (int)readInt("MIXCCL_TIMEOUT_S", 300, 1, 1 << 24);
  p.commId = readString("MIXCCL_COMM_ID", "");
  p.commSecret = readString("MIXCCL_COMM_SECRET", "");
  p.socketIfname = readString("MIXCCL_SOCKET_IFNAME", "");
  p.socketFamily = readString("MIXCCL_SOCKET_FAMILY", "");
  p.nsocksPerPeer = (int)readInt("MIXCCL_NSOCKS_PERPEER", 0, 0, 16);  // 0: automatic
  p.socketFrameBytes = (size_t)readInt("MIXCCL_SOCKET_FRAME_BYTES", 256 << 10, 4096, 64 << 20);
  p.socketBufferBytes = (int)readInt("MIXCCL_SOCKET_BUFFER_BYTES", 4 << 20, 0, 1 << 30);
  p.socketCongestion = readString("MIXCCL_SOCKET_CONGESTION", "reno");
  p.algo = readString("MIXCCL_ALGO", "auto");
  p.rdThresholdBytes = (size_t)readInt("MIXCCL_RD_THRESHOLD", 64 << 10, 0, 1LL << 40);
  p.rhThresholdBytes = (size_t)readInt("MIXCCL_RH_THRESHOLD", 4 << 20, 0, 1LL << 40);
  p.chunkBytes = (size_t)readInt("MIXCCL_CHUNK_BYTES", 256 << 10, 1024, 1LL << 30);
  p.spinUs = (int)readInt("MIXCCL_SPIN_US", 100, 0, 1000000);
  p.adaptor = readString("MIXCCL_ADAPTOR", "");
  p.net = readString("MIXCCL_NET", "");
  p.topoDumpFile = readString("MIXCCL_TOPO_DUMP_FILE", "");
  p.checkMismatch = readInt("MIXCCL_CHECK_MISMATCH", 0, 0, 1) == 1;
  p.pluginPath = readString("MIXCCL_PLUGIN_PATH", "");
  p.domainSplit = readString("MIXCCL_DOMAIN_SPLIT", "");
  p.hierPieceBytes = (size_t)readInt("MIXCCL_HIER_PIECE_BYTES", 1 << 20, 1024, 1LL << 30);
  p.shmDisable = readInt("MIXCCL_SHM_DISABLE", 0, 0, 1) == 1;
  p.shmBytes = (size_t)readInt("MIXCCL_SHM_BYTES", 1 << 20, 4096, 1LL << 30);
  p.shmCma = readInt("MIXCCL_SHM_CMA", 0, 0, 1) == 1;  // off: slower than the ring here (docs/performance.md)
  p.shmCmaThreshold = (size_t)readInt("MIXCCL_SHM_CMA_THRESHOLD", 64 << 10, 1, 1LL << 40);
  return p;
}

}  // namespace

const EnvParams& env() {
  static const EnvParams params = load();
  return params;
}

}  // namespace mixccl
