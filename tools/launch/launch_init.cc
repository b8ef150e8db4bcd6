// Communicator creation of mixccl_launch: settles the rendezvous address and calls the library.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "launch_internal.h"
#include "mixccl_launch.h"

using namespace mixccl_launch;

namespace {

// The library's own message and the code's name. The code's generic text ("remote process
// exited or there was a network error") only when there is no message: next to a precise one
// (a wrong secret, a missing rank) it would blame the wrong thing.
std::string failure(mixcclResult_t res) {
  static const char* const kNames[] = {
      "mixcclSuccess",      "mixcclUnhandledDeviceError", "mixcclSystemError",
      "mixcclInternalError", "mixcclInvalidArgument",     "mixcclInvalidUsage",
      "mixcclRemoteError",   "mixcclInProgress",          "mixcclTimeout"};
  const std::string name = res >= 0 && res < (int)(sizeof(kNames) / sizeof(kNames[0]))
                               ? kNames[res]
                               : "result " + std::to_string((int)res);
  const char* msg = mixcclGetLastError(nullptr);
  const bool none = msg == nullptr || *msg == '\0';
  return std::string(none ? mixcclGetErrorString(res) : msg) + " (" + name + ")";
}

int g_generation = 0;  // one file name per call, so repeated inits never read an old file

std::string envOr(const char* name, const char* dflt) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::string(dflt);
}

// A job identity shared by all ranks of one mpirun/srun job, or "" when there is none.
std::string jobKey(const std::string& launcher) {
  std::string key;
  if (launcher == "mpirun") {
    key = envOr("OMPI_MCA_ess_base_jobid", "");
    if (key.empty()) key = envOr("PMIX_NAMESPACE", "");
  } else if (launcher == "srun") {
    std::string job = envOr("SLURM_JOB_ID", envOr("SLURM_JOBID", "").c_str());
    std::string step = envOr("SLURM_STEP_ID", envOr("SLURM_STEPID", "").c_str());
    if (!job.empty()) key = job + "." + step;
  }
  for (char& c : key) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '.' || c == '-' || c == '_';
    if (!ok) c = '_';
  }
  return key;
}

bool allRanksOnOneHost(const mixcclLaunchInfo& info) {
  if (std::strcmp(info.launcher, "mpirun") == 0) return info.localSize == info.nranks;
  if (std::strcmp(info.launcher, "srun") == 0) {
    std::string nodes = envOr("SLURM_STEP_NUM_NODES", envOr("SLURM_NNODES", "").c_str());
    if (nodes.empty()) nodes = envOr("SLURM_JOB_NUM_NODES", "");
    return nodes == "1";
  }
  return false;
}

bool freeLoopbackPort(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a;
  std::memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  close(fd);
  if (ok) *port = ntohs(a.sin_port);
  return ok;
}

bool randomHex(char* out, size_t nbytes) {
  unsigned char buf[64];
  if (nbytes > sizeof(buf)) return false;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < nbytes) {
    ssize_t n = read(fd, buf + got, nbytes - got);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      close(fd);
      return false;
    }
    got += static_cast<size_t>(n);
  }
  close(fd);
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < nbytes; ++i) {
    out[2 * i] = kHex[buf[i] >> 4];
    out[2 * i + 1] = kHex[buf[i] & 15];
  }
  out[2 * nbytes] = '\0';
  return true;
}

// Seconds since the epoch at which this process started (from /proc), or 0 when unknown.
double processStartTime() {
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (f == nullptr) return 0;
  char buf[4096];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may contain spaces
  if (p == nullptr) return 0;
  // Fields after ')': state(3) ... starttime is field 22, i.e. the 20th after the ')'.
  unsigned long long start = 0;
  int field = 2;
  for (const char* q = p + 1; *q != '\0'; ++q) {
    if (*q == ' ') {
      ++field;
      if (field == 22) {
        start = std::strtoull(q + 1, nullptr, 10);
        break;
      }
    }
  }
  FILE* s = std::fopen("/proc/stat", "r");
  if (s == nullptr) return 0;
  char line[512];
  unsigned long long btime = 0;
  while (std::fgets(line, sizeof(line), s) != nullptr) {
    if (std::strncmp(line, "btime ", 6) == 0) btime = std::strtoull(line + 6, nullptr, 10);
  }
  std::fclose(s);
  long hz = sysconf(_SC_CLK_TCK);
  if (btime == 0 || hz <= 0) return 0;
  return static_cast<double>(btime) + static_cast<double>(start) / static_cast<double>(hz);
}

double nowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// Rank 0 publishes "host:port secret"; the others wait for it. Returns false with the error set.
bool fileRendezvous(const mixcclLaunchInfo& info, const std::string& path, std::string* commId,
                    std::string* secret) {
  if (info.rank == 0) {
    int port = 0;
    if (!freeLoopbackPort(&port)) {
      setError(std::string("mixccl_launch: cannot find a free loopback port: ") +
               std::strerror(errno));
      return false;
    }
    *commId = "127.0.0.1:" + std::to_string(port);
    char hex[33];
    const char* s = std::getenv("MIXCCL_COMM_SECRET");
    if (s != nullptr && *s != '\0') {
      *secret = s;
    } else if (randomHex(hex, 16)) {
      *secret = hex;
    } else {
      setError("mixccl_launch: cannot read /dev/urandom for a secret");
      return false;
    }
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      setError("mixccl_launch: cannot create " + tmp + ": " + std::strerror(errno));
      return false;
    }
    std::string content = *commId + " " + *secret + "\n";
    bool ok = write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
    ok = (close(fd) == 0) && ok;
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
      setError("mixccl_launch: cannot publish " + path + ": " + std::strerror(errno));
      unlink(tmp.c_str());
      return false;
    }
    return true;
  }
  int waitS = 120;
  bool present = false;
  if (!parseEnvInt("MIXCCL_LAUNCH_WAIT_S", 1, &waitS, &present)) return false;
  const double started = processStartTime();
  const double deadline = nowSeconds() + waitS;
  while (true) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && st.st_uid == getuid() && (st.st_mode & 077) == 0 &&
        (started == 0 || static_cast<double>(st.st_mtime) >= started - 60.0)) {
      FILE* f = std::fopen(path.c_str(), "r");
      if (f != nullptr) {
        char a[300] = {0}, s[100] = {0};
        int n = std::fscanf(f, "%299s %99s", a, s);
        std::fclose(f);
        if (n == 2 && validHostPort(a)) {
          *commId = a;
          *secret = s;
          return true;
        }
      }
    }
    if (nowSeconds() > deadline) {
      setError("mixccl_launch: rank " + std::to_string(info.rank) + " waited " +
               std::to_string(waitS) + " s for rank 0 to publish the rendezvous address in " +
               path + "; is rank 0 running on this host? Otherwise pass "
               "MIXCCL_COMM_ID=host:port to every rank");
      return false;
    }
    usleep(20000);
  }
}

// Sets (or restores) one environment variable.
void restoreEnv(const char* name, bool had, const std::string& old) {
  if (had) {
    setenv(name, old.c_str(), 1);
  } else {
    unsetenv(name);
  }
}

}  // namespace

extern "C" mixcclResult_t mixcclLaunchInitComm(mixcclComm_t* comm, mixcclLaunchInfo* infoOut,
                                               mixcclConfig_t* config) {
  if (comm == nullptr) {
    setError("mixccl_launch: comm is NULL");
    return mixcclInvalidArgument;
  }
  mixcclLaunchInfo info;
  if (mixcclLaunchDetect(&info) != 0) return mixcclInvalidUsage;
  const int generation = g_generation++;

  std::string commId = info.commId, secret, rendezvousFile;
  if (commId.empty() && info.nranks > 1) {
    std::string launcher = info.launcher;
    std::string key = jobKey(launcher);
    if ((launcher == "mpirun" || launcher == "srun") && allRanksOnOneHost(info) && !key.empty()) {
      std::string dir = envOr("TMPDIR", "/tmp");
      rendezvousFile = dir + "/mixccl-launch-" + std::to_string(getuid()) + "-" + launcher + "-" +
                       key + "-" + std::to_string(generation);
      if (!fileRendezvous(info, rendezvousFile, &commId, &secret)) return mixcclSystemError;
      std::snprintf(info.commId, sizeof(info.commId), "%s", commId.c_str());
    } else {
      std::string hint = launcher == "srun"
                             ? "srun --export=ALL,MIXCCL_COMM_ID=<host of rank 0>:<free port> ..."
                             : "mpirun -x MIXCCL_COMM_ID=<host of rank 0>:<free port> ...";
      setError("mixccl_launch: " + std::to_string(info.nranks) + " ranks started by " + launcher +
               " across several hosts and MIXCCL_COMM_ID is not set; pass the address where rank "
               "0 should host the rendezvous, e.g. `" + hint +
               "` (and MIXCCL_COMM_SECRET=<32 hex digits> for a strong secret)");
      return mixcclInvalidUsage;
    }
  }

  const char* oldId = std::getenv("MIXCCL_COMM_ID");
  const char* oldSecret = std::getenv("MIXCCL_COMM_SECRET");
  const bool hadId = oldId != nullptr, hadSecret = oldSecret != nullptr;
  const std::string oldIdValue = hadId ? oldId : "", oldSecretValue = hadSecret ? oldSecret : "";
  if (!commId.empty()) setenv("MIXCCL_COMM_ID", commId.c_str(), 1);
  if (!secret.empty()) setenv("MIXCCL_COMM_SECRET", secret.c_str(), 1);

  mixcclUniqueId id;
  mixcclResult_t res = mixcclGetUniqueId(&id);
  if (res != mixcclSuccess) {
    setError(std::string("mixccl_launch: mixcclGetUniqueId failed: ") + failure(res));
  } else {
    mixcclConfig_t dflt = MIXCCL_CONFIG_INITIALIZER;
    res = mixcclCommInitRankConfig(comm, info.nranks, id, info.rank,
                                   config != nullptr ? config : &dflt);
    if (res != mixcclSuccess) {
      setError("mixccl_launch: rank " + std::to_string(info.rank) + "/" +
               std::to_string(info.nranks) + " (" + info.launcher + ", rendezvous " +
               (commId.empty() ? std::string("local") : commId) +
               "): mixcclCommInitRank failed: " + failure(res));
    }
  }
  // Rank 0's init returns once every rank has joined, so nobody needs the file any more.
  if (info.rank == 0 && !rendezvousFile.empty()) unlink(rendezvousFile.c_str());
  restoreEnv("MIXCCL_COMM_ID", hadId, oldIdValue);
  restoreEnv("MIXCCL_COMM_SECRET", hadSecret, oldSecretValue);
  if (infoOut != nullptr) *infoOut = info;
  return res;
}
