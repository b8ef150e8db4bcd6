// A fork-based job for fault injection: N ranks, each a child process that runs a body of the
// test's choosing (the body does its own init, so it can delay or skip it). Each rank writes
// what it saw into a report in memory shared with the parent (MAP_SHARED | MAP_ANONYMOUS, no
// file), so the test asserts in the parent: error codes, messages, and how fast errors came.
// The parent injects the faults (SIGKILL, SIGSTOP) at points the ranks announce through
// their reports, and reaps every child before it returns; a job that overruns its limit is
// killed whole.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "rank_check.h"  // tests/multirank: RANK_CHECK for rank bodies

#include "mixccl.h"

namespace fault {

inline double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // system-wide: comparable across the job's processes
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// A repeat count a test takes from the environment (MIXCCL_TEST_*_RUNS and the like): a
// positive integer there, else fallback.
inline int envCount(const char* name, int fallback) {
  const char* v = getenv(name);
  int n = v ? atoi(v) : 0;
  return n > 0 ? n : fallback;
}

// The communicator's connection mode (mixcclCommInspect "connect": eager or lazy) into *mode;
// false when it cannot be read or differs from a MIXCCL_CONNECT=eager|lazy the test was run
// under (a .lazy variant must really run lazily).
inline bool connectModeAsAsked(mixcclComm_t comm, std::string* mode) {
  char v[16] = "";
  if (mixcclCommInspect(comm, "connect", v, sizeof(v)) != mixcclSuccess) return false;
  *mode = v;
  const char* asked = getenv("MIXCCL_CONNECT");
  const std::string want = asked ? asked : "";
  return (want != "eager" && want != "lazy") || want == *mode;
}

inline void sleepSeconds(double s) {
  timespec ts{(time_t)s, (long)((s - (time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// What one rank reports. Written by the rank, read by the parent after the rank exits (or,
// for the atomics, while it runs).
struct RankReport {
  std::atomic<int> phase;      // set by the rank to announce where it is (see waitPhase)
  std::atomic<int> released;   // set by the parent to let the rank go on (see waitReleased)
  int code;                    // result of the call under test
  int asyncCode;               // mixcclCommGetAsyncError after it
  int laterCode;               // the call after it
  double failedAt;             // now() when the call under test returned
  double laterSeconds;         // how long the call after it took
  double destroySeconds;       // how long mixcclCommDestroy took
  int threadsAfterDestroy;     // entries of /proc/self/task after destroy
  int iterations;              // successful calls before the failure
  char message[768];           // mixcclGetLastError after the failure
  int fdsBefore;               // open fds before init (tests that check for leaked fds)
  int fdsAfter;                // ... and after destroy
};

struct Shared {
  std::atomic<int> go;  // set once every rank is forked (see Job::start)
  double injectedAt;    // now() when the parent injected the fault
  RankReport ranks[16];
};

inline int countThreadsNow() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// Threads of this process once those that are exiting have gone: a joined thread can still be
// listed in /proc/self/task for a moment after pthread_join returns (the kernel reaps it
// asynchronously), so a count above one is re-read for up to one second.
inline int countThreads() {
  int n = countThreadsNow();
  for (int i = 0; i < 200 && n > 1; ++i) {
    usleep(5000);
    n = countThreadsNow();
  }
  return n;
}

// Names under /dev/shm that contain `part` (by default those of the library; "" for every
// name, as UCX's shared-memory transports keep their own files there).
inline std::set<std::string> shmFiles(const char* part = "mixccl") {
  std::set<std::string> out;
  DIR* d = opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.' && strstr(e->d_name, part)) out.insert(e->d_name);
  closedir(d);
  return out;
}

// The parent of process pid, from /proc/PID/stat (0 when it is gone).
inline pid_t parentOf(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* close = strrchr(buf, ')');  // the command name may hold spaces and parentheses
  int ppid = 0;
  char state;
  if (!close || sscanf(close + 1, " %c %d", &state, &ppid) != 2) return 0;
  return ppid;
}

inline bool descendsFrom(pid_t pid, pid_t root) {
  for (int depth = 0; pid > 1 && depth < 64; ++depth, pid = parentOf(pid))
    if (pid == root) return true;
  return false;
}

// The /dev/shm names that a live process outside the tree of `ownRoot` maps or holds open:
// other tests that ctest runs at the same moment hold theirs while they initialise, or for
// their whole life (libfabric's shm provider), and those are not this test's leaks.
inline std::set<std::string> shmHeldByOthers(pid_t ownRoot) {
  std::set<std::string> held;
  const std::string prefix = "/dev/shm/";
  auto note = [&](const std::string& target) {
    if (target.compare(0, prefix.size(), prefix) != 0) return;
    std::string name = target.substr(prefix.size());
    const std::string deleted = " (deleted)";
    if (name.size() > deleted.size() &&
        name.compare(name.size() - deleted.size(), deleted.size(), deleted) == 0)
      return;  // unlinked: no longer a name in /dev/shm
    held.insert(name);
  };
  DIR* proc = opendir("/proc");
  if (!proc) return held;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = (pid_t)atoi(e->d_name);
    if (pid <= 0 || descendsFrom(pid, ownRoot)) continue;
    const std::string base = std::string("/proc/") + e->d_name;
    if (FILE* maps = fopen((base + "/maps").c_str(), "r")) {
      char line[1024];
      while (fgets(line, sizeof(line), maps)) {
        const char* path = strstr(line, "/dev/shm/");
        if (!path) continue;
        std::string target(path);
        while (!target.empty() && (target.back() == '\n' || target.back() == ' '))
          target.pop_back();
        note(target);
      }
      fclose(maps);
    }
    if (DIR* fds = opendir((base + "/fd").c_str())) {
      while (dirent* fd = readdir(fds)) {
        char target[512];
        const std::string link = base + "/fd/" + fd->d_name;
        const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
        if (n <= 0) continue;
        target[n] = 0;
        note(target);
      }
      closedir(fds);
    }
  }
  closedir(proc);
  return held;
}

// The names containing `part` that appeared under /dev/shm since `before` and stay, space-
// separated: a name is a leak only if it is still there graceS seconds later and no live
// process outside the tree of `ownRoot` (by default this process and its children) maps it or
// holds it open. Segments exist only while a communicator initialises, and tests running at
// the same time (ctest -j) create and remove their own or keep them for their whole life
// (libfabric's shm provider), so such a name belongs to someone else. (Comparing the whole
// directory before and after failed whenever another test's segment was there at the second
// look.)
inline std::string shmLeftSince(const std::set<std::string>& before, const char* part = "mixccl",
                                double graceS = 5.0, pid_t ownRoot = getpid()) {
  std::set<std::string> left;
  for (const std::string& f : shmFiles(part))
    if (!before.count(f)) left.insert(f);
  for (int i = 0; i < (int)(graceS * 10) && !left.empty(); ++i) {
    usleep(100 * 1000);
    std::set<std::string> now = shmFiles(part), still;
    for (const std::string& f : left)
      if (now.count(f)) still.insert(f);
    left.swap(still);
  }
  if (!left.empty()) {
    const std::set<std::string> others = shmHeldByOthers(ownRoot);
    for (auto it = left.begin(); it != left.end();) it = others.count(*it) ? left.erase(it) : ++it;
  }
  std::string names;
  for (const std::string& f : left) names += (names.empty() ? "" : " ") + f;
  return names;
}

inline void copyMessage(RankReport* r, const char* msg) {
  snprintf(r->message, sizeof(r->message), "%s", msg ? msg : "");
}

// Fills the report after the call under test failed, then destroys the communicator and
// counts the threads left. Returns 0 if destroy worked.
inline int reportFailureAndDestroy(mixcclComm_t comm, RankReport* rep, mixcclResult_t code,
                                   const std::function<mixcclResult_t()>& laterCall) {
  rep->code = code;
  rep->failedAt = now();
  copyMessage(rep, mixcclGetLastError(comm));
  mixcclResult_t async = mixcclSuccess;
  mixcclCommGetAsyncError(comm, &async);
  rep->asyncCode = async;
  double t0 = now();
  rep->laterCode = laterCall ? laterCall() : mixcclSuccess;
  rep->laterSeconds = now() - t0;
  t0 = now();
  mixcclResult_t d = mixcclCommDestroy(comm);
  rep->destroySeconds = now() - t0;
  rep->threadsAfterDestroy = countThreads();
  return d == mixcclSuccess ? 0 : 1;
}

using RankBody = std::function<int(const mixcclUniqueId& id, int rank, int nranks, Shared* sh)>;

class Job {
 public:
  // Maps the shared reports; the id (and with it the rendezvous root) is made in the parent.
  Job(int nranks, double limitSeconds) : nranks_(nranks), limit_(limitSeconds) {
    void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    sh_ = p == MAP_FAILED ? nullptr : static_cast<Shared*>(p);
    if (sh_) memset(static_cast<void*>(sh_), 0, sizeof(Shared));
    rootStarted_ = now();
    idOk_ = mixcclGetUniqueId(&id_) == mixcclSuccess;
  }
  // now() just before the rendezvous root started: its timeout counts from here, while a
  // rank's own clock starts only once it is forked and released.
  double rootStarted() const { return rootStarted_; }
  ~Job() {
    killAll();
    if (sh_) munmap(sh_, sizeof(Shared));
  }
  bool ok() const { return sh_ && idOk_ && nranks_ <= 16; }
  Shared* shared() { return sh_; }
  RankReport& report(int r) { return sh_->ranks[r]; }
  pid_t pid(int r) const { return pids_[r]; }
  const mixcclUniqueId& id() const { return id_; }

  void start(const RankBody& body) {
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < nranks_; ++r) {
      pid_t p = fork();
      if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
        // No rank starts before all are forked: the rendezvous root's threads in this process
        // then never hold a lock (log, OpenSSL) at the moment of a later fork.
        while (!sh_->go.load()) usleep(200);
        int rc = body(id_, r, nranks_, sh_);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
      }
      pids_.push_back(p);
      status_.push_back(-1);
    }
    sh_->go.store(1);
    started_ = now();
  }

  // Waits until rank r announced at least phase; false if it did not within seconds.
  bool waitPhase(int r, int phase, double seconds) {
    double end = now() + seconds;
    while (sh_->ranks[r].phase.load() < phase) {
      if (now() > end) return false;
      usleep(500);
    }
    return true;
  }

  void inject(int r, int sig) {
    sh_->injectedAt = now();
    kill(pids_[r], sig);
  }

  // Reaps the rank's process (after a SIGKILL); true if it is gone within seconds.
  bool reap(int r, double seconds) {
    double end = now() + seconds;
    while (status_[r] == -1) {
      int st;
      pid_t p = waitpid(pids_[r], &st, WNOHANG);
      if (p == pids_[r]) {
        status_[r] = st;
        break;
      }
      if (now() > end) return false;
      usleep(1000);
    }
    return true;
  }

  // A stalled peer: once victim announced phase 2 (within phaseSeconds) it is stopped
  // (SIGSTOP); when the survivors have exited it is killed (a stopped process still dies of
  // SIGKILL) and reaped. injectedAt stays the time of the stop, which the survivors' bounds
  // count from. Returns "" or the step that failed.
  std::string stallUntilOthersExit(int victim, const std::vector<int>& survivors,
                                   double phaseSeconds) {
    if (!waitPhase(victim, 2, phaseSeconds)) return "the victim never reached phase 2";
    inject(victim, SIGSTOP);
    if (!waitExit(survivors)) return "the survivors did not exit within the job's limit";
    double stoppedAt = sh_->injectedAt;
    inject(victim, SIGKILL);
    sh_->injectedAt = stoppedAt;
    if (!reap(victim, 10)) return "the stopped victim did not die of SIGKILL";
    return "";
  }

  // Waits for the ranks in which (all if empty) to exit, up to the job's limit; returns false
  // (after killing everything) if the limit passed.
  bool waitExit(std::vector<int> which = {}) {
    if (which.empty())
      for (int r = 0; r < nranks_; ++r) which.push_back(r);
    for (int r : which) {
      double left = started_ + limit_ - now();
      if (left <= 0 || !reap(r, left)) {
        fprintf(stderr, "job exceeded %.0f s: killing all ranks\n", limit_);
        killAll();
        return false;
      }
    }
    return true;
  }

  // Exit code of a reaped rank: its exit status, 128+signal if killed, -1 if not reaped.
  int exitCode(int r) const {
    int st = status_[r];
    if (st == -1) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  // No child of this test process is left (reaped or running).
  static bool noChildrenLeft() {
    int st;
    return waitpid(-1, &st, WNOHANG) == -1 && errno == ECHILD;
  }

  void killAll() {
    for (int r = 0; r < (int)pids_.size(); ++r)
      if (status_[r] == -1) {
        kill(pids_[r], SIGKILL);
        int st;
        if (waitpid(pids_[r], &st, 0) == pids_[r]) status_[r] = st;
      }
  }

 private:
  int nranks_;
  double limit_;
  Shared* sh_ = nullptr;
  bool idOk_ = false;
  mixcclUniqueId id_;
  std::vector<pid_t> pids_;
  std::vector<int> status_;
  double started_ = 0;
  double rootStarted_ = 0;
};

// The connected TCP sockets of this process (not listeners): after init, the transport's.
inline std::vector<int> connectedSockets() {
  std::vector<int> out;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd <= 2) continue;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int listening = 0, type = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) continue;
    len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage peer;
    socklen_t plen = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) continue;
    if (peer.ss_family != AF_INET && peer.ss_family != AF_INET6) continue;
    out.push_back(fd);
  }
  closedir(d);
  return out;
}

// Entries of /proc/self/fd (the directory's own fd included, so compare counts only).
inline int countFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

inline std::string hostName() {
  char h[256] = {0};
  gethostname(h, sizeof(h) - 1);
  return h;
}

}  // namespace fault
