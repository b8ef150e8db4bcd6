#include "base/env.h"

#include <cstdio>
#include <cstdlib>

#include "base/env_parse.h"

namespace mixccl {
namespace {

// Logging is not usable yet (it reads these params), so bad values go straight to stderr. A value
// that does not parse is never silently taken for the default: it is named in a warning.
void warnIf(const std::string& warning) {
  if (!warning.empty()) fprintf(stderr, "mixccl WARN %s\n", warning.c_str());
}

std::string readString(const char* name, const char* dflt) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string(dflt);
}

long long readInt(const char* name, long long dflt, long long min, long long max) {
  std::string warning;
  long long x = parseEnvInt(name, getenv(name), dflt, min, max, &warning);
  warnIf(warning);
  return x;
}

// A size with no fixed default: -1 when unset (or not parsable), and the communicator derives
// it from the machine (algo/tuning.h).
long long readDerivedInt(const char* name, long long min, long long max) {
  std::string warning;
  long long x = parseEnvInt(name, getenv(name), -1, min, max, &warning);
  const std::string fixed = "using -1";
  const size_t at = warning.rfind(fixed);
  if (at != std::string::npos) warning.replace(at, fixed.size(), "using the size derived from the machine");
  warnIf(warning);
  return x;
}

bool readBool(const char* name, bool dflt) {
  std::string warning;
  bool x = parseEnvBool(name, getenv(name), dflt, &warning);
  warnIf(warning);
  return x;
}

std::string readChoice(const char* name, std::initializer_list<const char*> choices,
                       const char* dflt) {
  std::string warning;
  std::string x = parseEnvChoice(name, getenv(name), choices, dflt, &warning);
  warnIf(warning);
  return x;
}

// Open-ended names (a kernel's congestion control, a plugin, a transport) are checked where they
// are used; only their case is settled here, for the names mixccl knows.
std::string readName(const char* name, std::initializer_list<const char*> known,
                     const char* dflt = "") {
  std::string v = readString(name, dflt);
  for (const char* k : known)
    if (equalsIgnoreCase(v, k)) return k;
  return v;
}

EnvParams load() {
  EnvParams p;
  p.debugLevel = readChoice("MIXCCL_DEBUG", {"NONE", "WARN", "INFO", "TRACE"}, "WARN");
  p.debugSubsys = readString("MIXCCL_DEBUG_SUBSYS", "");
  p.timeoutS = (int)readInt("MIXCCL_TIMEOUT_S", 300, 1, 1 << 24);
  p.commId = readString("MIXCCL_COMM_ID", "");
  p.commSecret = readString("MIXCCL_COMM_SECRET", "");
  p.socketIfname = readString("MIXCCL_SOCKET_IFNAME", "");
  p.socketFamily = readChoice("MIXCCL_SOCKET_FAMILY", {"AF_INET", "AF_INET6"}, "");
  p.nsocksPerPeer = (int)readInt("MIXCCL_NSOCKS_PERPEER", 0, 0, 16);  // 0: automatic
  p.socketFrameBytes = (size_t)readInt("MIXCCL_SOCKET_FRAME_BYTES", 256 << 10, 4096, 64 << 20);
  p.socketBufferBytes = readDerivedInt("MIXCCL_SOCKET_BUFFER_BYTES", 0, 1 << 30);
  p.socketCongestion =
      readName("MIXCCL_SOCKET_CONGESTION", {"default", "reno", "cubic", "bbr"}, "reno");
  p.algo = readChoice("MIXCCL_ALGO", {"auto", "ring", "rd", "rh", "hierarchical-host"}, "auto");
  p.rdThresholdBytes = (size_t)readInt("MIXCCL_RD_THRESHOLD", 64 << 10, 0, 1LL << 40);
  p.rhThresholdBytes = readDerivedInt("MIXCCL_RH_THRESHOLD", 0, 1LL << 40);
  p.chunkBytes = readDerivedInt("MIXCCL_CHUNK_BYTES", 1024, 1LL << 30);
  p.spinUs = (int)readInt("MIXCCL_SPIN_US", 100, 0, 1000000);
  p.adaptor = readName("MIXCCL_ADAPTOR", {"host", "gloo", "mpi", "nccl"});
  p.net = readName("MIXCCL_NET", {"auto", "socket", "shm", "ucx", "ofi"});
  p.ofiProvider = readString("MIXCCL_OFI_PROVIDER", "tcp;ofi_rxm");
  p.topoDumpFile = readString("MIXCCL_TOPO_DUMP_FILE", "");
  p.checkMismatch = readBool("MIXCCL_CHECK_MISMATCH", false);
  p.pluginPath = readString("MIXCCL_PLUGIN_PATH", "");
  p.domainSplit = readString("MIXCCL_DOMAIN_SPLIT", "");
  p.hierHosts = readString("MIXCCL_HIER_HOSTS", "");
  p.hierPieceBytes = (size_t)readInt("MIXCCL_HIER_PIECE_BYTES", 1 << 20, 1024, 1LL << 30);
  p.shmDisable = readBool("MIXCCL_SHM_DISABLE", false);
  p.connect = readString("MIXCCL_CONNECT", "auto");
  p.testRdmaActive = readChoice("MIXCCL_TEST_RDMA_ACTIVE", {"0", "1"}, "");
  p.shmBytes = (size_t)readInt("MIXCCL_SHM_BYTES", 0, 4096, 1LL << 30);  // 0: from the L2
  p.shmFarBytes = (size_t)readInt("MIXCCL_SHM_FAR_BYTES", 0, 4096, 1LL << 30);  // 0: derived
  p.shmCma = readBool("MIXCCL_SHM_CMA", false);  // off: slower than the ring here (docs/performance.md)
  p.shmSlotBytes = readInt("MIXCCL_SHM_SLOT_BYTES", -1, 0, 1 << 20);
  p.shmCmaThreshold = (size_t)readInt("MIXCCL_SHM_CMA_THRESHOLD", 64 << 10, 1, 1LL << 40);
  return p;
}

}  // namespace

const EnvParams& env() {
  static const EnvParams params = load();
  return params;
}

}  // namespace mixccl
