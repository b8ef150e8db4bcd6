// mixcclrun: start N ranks of a mixccl program on this host.
//
//   mixcclrun -np N [--adaptors LIST] [--host-list h1,h2,...] [-x VAR=VAL]... [options] PROGRAM
//             [ARGS...]
//
// Each rank gets MIXCCL_COMM_ID=127.0.0.1:<free port>, a random MIXCCL_COMM_SECRET,
// MIXCCL_RANK, MIXCCL_NRANKS, MIXCCL_LOCAL_RANK and MIXCCL_LOCAL_SIZE, and with --adaptors its
// own MIXCCL_ADAPTOR (a heterogeneous job on one host without a wrapper script). Every line a rank writes
// is prefixed with "[rank] " (stdout to stdout, stderr to stderr). SIGINT, SIGTERM, SIGHUP, SIGQUIT,
// SIGUSR1 and SIGUSR2 are forwarded to all ranks. When a rank exits with a non-zero status or is
// killed by a signal, the others get SIGTERM, then SIGKILL after a grace period, and mixcclrun
// exits non-zero naming the rank that failed. See docs/launching.md.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mixcclrun_options.h"

using namespace mixcclrun;

namespace {

// ---------------------------------------------------------------------------------------------
// --host-list: every entry must name this host.

bool sameAddr(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, 16) == 0;
  }
  return false;
}

bool isLoopback(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  }
  if (a->sa_family == AF_INET6) {
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  }
  return false;
}

bool hostIsLocal(const std::string& host) {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) == 0) {
    std::string n = name;
    if (host == n || host == n.substr(0, n.find('.'))) return true;
  }
  if (host == "localhost") return true;
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  ifaddrs* ifs = nullptr;
  getifaddrs(&ifs);
  bool local = false;
  for (addrinfo* r = res; r != nullptr && !local; r = r->ai_next) {
    if (isLoopback(r->ai_addr)) local = true;
    for (ifaddrs* f = ifs; f != nullptr && !local; f = f->ifa_next) {
      if (f->ifa_addr != nullptr && sameAddr(f->ifa_addr, r->ai_addr)) local = true;
    }
  }
  if (ifs != nullptr) freeifaddrs(ifs);
  freeaddrinfo(res);
  return local;
}

// ---------------------------------------------------------------------------------------------

int pickLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a;
  std::memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    die(std::string("cannot bind a loopback port: ") + std::strerror(errno));
  }
  close(fd);
  return ntohs(a.sin_port);
}

std::string randomSecret() {
  unsigned char b[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, b, sizeof(b)) != static_cast<ssize_t>(sizeof(b))) {
    die("cannot read /dev/urandom");
  }
  close(fd);
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += kHex[c >> 4];
    s += kHex[c & 15];
  }
  return s;
}

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

int g_sigPipe[2] = {-1, -1};

void onSignal(int sig) {
  int saved = errno;
  unsigned char s = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_sigPipe[1], &s, 1);
  (void)ignored;
  errno = saved;
}

const int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // our output is gone (EPIPE...): drop
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

struct Stream {
  int fd = -1;      // read end, -1 once closed
  int outFd = 1;    // where the lines go
  std::string partial;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  Stream out, err;
};

void emit(Stream& s, int rank, bool prefix, const char* data, size_t n, bool flushPartial) {
  s.partial.append(data, n);
  std::string tag = prefix ? "[" + std::to_string(rank) + "] " : "";
  size_t start = 0;
  std::string chunk;
  while (true) {
    size_t nl = s.partial.find('\n', start);
    if (nl == std::string::npos) break;
    chunk += tag;
    chunk.append(s.partial, start, nl - start + 1);
    start = nl + 1;
  }
  s.partial.erase(0, start);
  if (flushPartial && !s.partial.empty()) {
    chunk += tag + s.partial + "\n";
    s.partial.clear();
  }
  if (!chunk.empty()) writeAll(s.outFd, chunk.data(), chunk.size());
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "ended with status " + std::to_string(status);
}

bool failed(int status) {
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseArgs(argc, argv);
  for (const std::string& entry : opt.hosts) {
    std::string host = entry.substr(0, entry.find(':'));
    if (!hostIsLocal(host)) {
      die("host '" + host + "' in --host-list is not this host; mixcclrun starts every rank "
          "locally (use mpirun, srun or torchrun for several hosts, see docs/launching.md)");
    }
  }

  std::vector<std::pair<std::string, std::string>> env;
  const char* userId = std::getenv("MIXCCL_COMM_ID");
  const char* userSecret = std::getenv("MIXCCL_COMM_SECRET");
  bool idFromX = false, secretFromX = false;
  for (auto& kv : opt.exports) {
    idFromX |= kv.first == "MIXCCL_COMM_ID";
    secretFromX |= kv.first == "MIXCCL_COMM_SECRET";
  }
  if (!idFromX && (userId == nullptr || *userId == '\0')) {
    env.emplace_back("MIXCCL_COMM_ID", "127.0.0.1:" + std::to_string(pickLoopbackPort()));
  }
  if (!secretFromX && (userSecret == nullptr || *userSecret == '\0')) {
    env.emplace_back("MIXCCL_COMM_SECRET", randomSecret());
  }
  for (auto& kv : opt.exports) env.push_back(kv);

  if (pipe2(g_sigPipe, O_CLOEXEC | O_NONBLOCK) != 0) die("pipe2 failed");
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : kForwarded) sigaction(s, &sa, nullptr);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const pid_t self = getpid();
  std::vector<Rank> ranks(opt.np);
  // --bind-to (mixcclrun_binding.h): the cores are read once, before any rank starts.
  std::vector<cpu_set_t> rankCpus;
  if (opt.bind != BindMode::None) {
    std::string why;
    std::vector<cpu_set_t> cores = allowedCores(&why);
    if (cores.empty()) {
      if (opt.bind == BindMode::Core) die("--bind-to core: " + why);
    } else {
      std::vector<int> plan = planBinding(opt.bind, opt.np, static_cast<int>(cores.size()), &why);
      if (!why.empty()) die(why);
      for (int c : plan) rankCpus.push_back(cores[c]);
    }
  }
  for (int r = 0; r < opt.np; ++r) {
    int outp[2], errp[2];
    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) die("pipe2 failed");
    pid_t pid = fork();
    if (pid < 0) die(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      // Child: default signal dispositions, own process group, die with mixcclrun.
      struct sigaction dfl;
      std::memset(&dfl, 0, sizeof(dfl));
      dfl.sa_handler = SIG_DFL;
      for (int s : kForwarded) sigaction(s, &dfl, nullptr);
      sigaction(SIGCHLD, &dfl, nullptr);
      sigaction(SIGPIPE, &dfl, nullptr);
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != self) _exit(1);
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, 0);
      dup2(outp[1], 1);
      dup2(errp[1], 2);
      for (auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
      setenv("MIXCCL_RANK", std::to_string(r).c_str(), 1);
      setenv("MIXCCL_NRANKS", std::to_string(opt.np).c_str(), 1);
      setenv("MIXCCL_LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("MIXCCL_LOCAL_SIZE", std::to_string(opt.np).c_str(), 1);
      if (!opt.adaptors.empty()) setenv("MIXCCL_ADAPTOR", opt.adaptors[r].c_str(), 1);
      if (!rankCpus.empty() && sched_setaffinity(0, sizeof(cpu_set_t), &rankCpus[r]) != 0)
        std::fprintf(stderr, "%s: rank %d runs unbound: sched_setaffinity: %s\n", kProg, r,
                     std::strerror(errno));
      std::vector<char*> args;
      for (auto& s : opt.command) args.push_back(const_cast<char*>(s.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      std::fprintf(stderr, "%s: cannot execute '%s': %s\n", kProg, args[0], std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);
    close(outp[1]);
    close(errp[1]);
    ranks[r].pid = pid;
    ranks[r].running = true;
    ranks[r].out.fd = outp[0];
    ranks[r].out.outFd = 1;
    ranks[r].err.fd = errp[0];
    ranks[r].err.outFd = 2;
  }

  const double start = now();
  int running = opt.np;
  int failedRank = -1;        // first rank that failed on its own
  std::vector<int> lostRanks;  // --keep-going: the ranks that failed while others went on
  int userSignal = 0;         // last signal forwarded from the user
  bool terminating = false;   // SIGTERM sent to the survivors
  bool killed = false;        // SIGKILL sent
  bool timedOut = false;
  double killAt = 0;
  double drainUntil = 0;      // after the last rank ended: wait this long for pipes held by others

  auto signalAll = [&](int sig) {
    for (Rank& rk : ranks) {
      if (rk.running && kill(-rk.pid, sig) != 0) kill(rk.pid, sig);
    }
  };
  auto startTermination = [&]() {
    if (terminating) return;
    terminating = true;
    signalAll(SIGTERM);
    killAt = now() + opt.graceS;
  };

  while (true) {
    std::vector<pollfd> fds;
    std::vector<Stream*> streams;
    std::vector<int> owner;
    fds.push_back({g_sigPipe[0], POLLIN, 0});
    streams.push_back(nullptr);
    owner.push_back(-1);
    for (int r = 0; r < opt.np; ++r) {
      for (Stream* s : {&ranks[r].out, &ranks[r].err}) {
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          streams.push_back(s);
          owner.push_back(r);
        }
      }
    }
    if (running == 0 && fds.size() == 1) break;
    if (running == 0) {
      if (drainUntil == 0) drainUntil = now() + 2.0;
      if (now() > drainUntil) break;  // a grandchild keeps a pipe open: stop waiting for it
    }
    int timeoutMs = 200;
    int n = poll(fds.data(), fds.size(), timeoutMs);
    if (n < 0 && errno != EINTR) die(std::string("poll: ") + std::strerror(errno));
    for (size_t i = 1; n > 0 && i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      Stream* s = streams[i];
      if (got > 0) {
        emit(*s, owner[i], opt.prefix, buf, static_cast<size_t>(got), false);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        emit(*s, owner[i], opt.prefix, "", 0, true);
        close(s->fd);
        s->fd = -1;
      }
    }
    if (n > 0 && (fds[0].revents & POLLIN)) {
      unsigned char sigs[64];
      ssize_t got;
      while ((got = read(g_sigPipe[0], sigs, sizeof(sigs))) > 0) {
        for (ssize_t k = 0; k < got; ++k) {
          int sig = sigs[k];
          if (sig == SIGCHLD) continue;  // reaped below
          if (userSignal != 0 && (sig == SIGINT || sig == SIGTERM)) {
            std::fprintf(stderr, "%s: signal %d again: killing all ranks\n", kProg, sig);
            signalAll(SIGKILL);
            killed = true;
          } else {
            signalAll(sig);
          }
          if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
            userSignal = sig;
            if (!terminating) {
              terminating = true;  // the forwarded signal is the termination request
              killAt = now() + opt.graceS;
            }
          }
        }
      }
    }
    // Reap.
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (int r = 0; r < opt.np; ++r) {
        if (ranks[r].pid != pid || !ranks[r].running) continue;
        ranks[r].running = false;
        ranks[r].status = status;
        --running;
        if (failed(status) && !terminating && opt.keepGoing) {
          // The job decides whether it can go on without the rank (it shrinks, docs/reliability.md).
          lostRanks.push_back(r);
          std::fprintf(stderr, "%s: rank %d (pid %d) %s; the others go on (--keep-going)\n",
                       kProg, r, static_cast<int>(pid), describe(status).c_str());
        } else if (failed(status) && !terminating && failedRank < 0) {
          failedRank = r;
          std::fprintf(stderr, "%s: rank %d (pid %d) %s; terminating the other ranks\n", kProg, r,
                       static_cast<int>(pid), describe(status).c_str());
          startTermination();
        }
      }
    }
    double t = now();
    if (opt.timeoutS > 0 && !terminating && t - start > opt.timeoutS) {
      timedOut = true;
      std::fprintf(stderr, "%s: job timeout (%g s): terminating all ranks\n", kProg, opt.timeoutS);
      startTermination();
    }
    if (terminating && !killed && running > 0 && t > killAt) {
      std::fprintf(stderr, "%s: %d rank(s) still running %g s after SIGTERM: sending SIGKILL\n",
                   kProg, running, opt.graceS);
      signalAll(SIGKILL);
      killed = true;
    }
  }

  for (Rank& rk : ranks) {
    for (Stream* s : {&rk.out, &rk.err}) {
      if (s->fd >= 0) close(s->fd);
    }
  }
  if (!lostRanks.empty() && failedRank < 0 && !timedOut && userSignal == 0) {
    bool finished = false;  // some rank completed: the job went on without the lost ones
    for (const Rank& rk : ranks) finished = finished || !failed(rk.status);
    std::string lost;
    for (int r : lostRanks) lost += (lost.empty() ? "" : ", ") + std::to_string(r);
    std::fprintf(stderr, "%s: --keep-going: lost rank(s) %s; %s\n", kProg, lost.c_str(),
                 finished ? "the others completed" : "no rank completed");
    if (!finished) failedRank = lostRanks.front();
  }
  if (failedRank >= 0) {
    int st = ranks[failedRank].status;
    std::fprintf(stderr, "%s: job failed: rank %d %s\n", kProg, failedRank, describe(st).c_str());
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
  }
  if (timedOut) return 124;
  if (userSignal != 0) {
    for (int r = 0; r < opt.np; ++r) {
      if (failed(ranks[r].status)) {
        std::fprintf(stderr, "%s: rank %d %s after signal %d\n", kProg, r,
                     describe(ranks[r].status).c_str(), userSignal);
      }
    }
    return 128 + userSignal;
  }
  return 0;
}
