// Floods at init: thousands of idle connections plus connections that send junk, at the
// rendezvous root and at a rank's transport listener, while a real job initialises. The job
// must start within 1 s of its unattacked time, measured in the same test, and the attacked
// processes (the one hosting the root, and rank 0 whose listener is flooded) must keep a
// bounded number of threads and bounded memory while it lasts.
//
// MIXCCL_TEST_FLOOD_CONNECTIONS sets the idle connections per target (default 2000).
#include <gtest/gtest.h>
#include <dirent.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "fault_harness.h"

namespace {

using fault::now;
using namespace mixccl;

const int kEnvTimeoutS = [] {
  setenv("MIXCCL_TIMEOUT_S", "20", 1);
  return 20;
}();

int floodConnections() { return fault::envCount("MIXCCL_TEST_FLOOD_CONNECTIONS", 2000); }

constexpr int kRanks = 3;
// Connections that talk, per target: random bytes, a well-formed hello with a random proof
// (both refused at once), a hello and then silence, and half a hello.
constexpr int kRandom = 10, kForged = 10, kHelloThenSilence = 20, kTruncated = 10;

// The connecting side's first message (auth.cc's ClientHello): magic "MXC1", version 1, nonce.
std::vector<uint8_t> clientHello() {
  std::vector<uint8_t> h(24);
  const uint32_t magic = 0x3143584d, version = 1;
  memcpy(h.data(), &magic, 4);
  memcpy(h.data() + 4, &version, 4);
  RAND_bytes(h.data() + 8, 16);
  return h;
}

std::vector<uint8_t> randomBytesOf(size_t n) {
  std::vector<uint8_t> b(n);
  RAND_bytes(b.data(), (int)n);
  return b;
}

long rssKb() {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

// The highest thread count and resident memory seen by sample(), from a starting point.
struct Peak {
  int threadsAtStart = 0, maxThreads = 0;
  long rssAtStartKb = 0, maxRssKb = 0;
  void start() {
    threadsAtStart = maxThreads = fault::countThreadsNow();
    rssAtStartKb = maxRssKb = rssKb();
  }
  void sample() {
    maxThreads = std::max(maxThreads, fault::countThreadsNow());
    maxRssKb = std::max(maxRssKb, rssKb());
  }
  long growthKb() const { return maxRssKb - rssAtStartKb; }
};

// Waits (sampling every 2 ms) until done() or seconds passed; returns done().
bool waitSampling(const std::function<bool()>& done, double seconds, Peak* peak) {
  double end = now() + seconds;
  while (!done() && now() < end) {
    if (peak) peak->sample();
    usleep(2000);
  }
  return done();
}

struct Address {
  sockaddr_storage storage;
  socklen_t length;
};

struct FloodShared {
  Address root, listener;
  std::atomic<int> listenerKnown, rootFlooded, listenerFlooded, stopAttack, release;
  double releasedAt;
  double initDoneAt[kRanks];
  std::atomic<int> rank0InitDone;
  Peak rank0;
  char attackerError[256];
};

// Opens a connection without waiting for the listener to accept it; -1 if even that failed.
int connectNonBlocking(const Address& a) {
  int fd = socket(a.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a.storage), a.length) != 0 &&
      errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

// A connection that sends bytes: waits (up to 5 s) for it to be established first.
bool connectAndSend(const Address& a, const std::vector<uint8_t>& bytes, std::vector<int>* fds) {
  int fd = connectNonBlocking(a);
  if (fd < 0) return false;
  fds->push_back(fd);
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, 5000) != 1) return false;
  size_t off = 0;
  double end = now() + 5;
  while (off < bytes.size() && now() < end) {
    ssize_t k = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (k > 0) off += (size_t)k;
    else if (k < 0 && errno != EAGAIN && errno != EINTR) return true;  // it was refused: fine
    else usleep(1000);
  }
  return true;
}

// Floods one target: the talking connections first (so that they get in before the idle ones
// fill the listener's backlog), then `idle` connections that never send a byte.
std::string flood(const Address& a, int idle, std::vector<int>* fds) {
  for (int i = 0; i < kRandom; ++i)
    if (!connectAndSend(a, randomBytesOf(4096), fds)) return "random bytes: no connection";
  for (int i = 0; i < kForged; ++i) {
    std::vector<uint8_t> forged = clientHello(), proof = randomBytesOf(32);
    forged.insert(forged.end(), proof.begin(), proof.end());
    if (!connectAndSend(a, forged, fds)) return "forged proof: no connection";
  }
  for (int i = 0; i < kHelloThenSilence; ++i)
    if (!connectAndSend(a, clientHello(), fds)) return "hello then silence: no connection";
  for (int i = 0; i < kTruncated; ++i) {
    std::vector<uint8_t> half = clientHello();
    half.resize(10);
    if (!connectAndSend(a, half, fds)) return "truncated hello: no connection";
  }
  for (int i = 0; i < idle; ++i) {
    int fd = connectNonBlocking(a);
    if (fd < 0) return std::string("idle connection ") + std::to_string(i) + ": " + strerror(errno);
    fds->push_back(fd);
  }
  return "";
}

// The attacker: a process of its own, so that its threads and descriptors are not the root's.
int attacker(FloodShared* fs, int idle) {
  std::vector<int> fds;
  std::string e = flood(fs->root, idle, &fds);
  fs->rootFlooded.store(1);
  double end = now() + 30;
  while (e.empty() && !fs->listenerKnown.load() && now() < end) usleep(500);
  if (e.empty()) e = fs->listenerKnown.load() ? flood(fs->listener, idle, &fds) : "no listener";
  snprintf(fs->attackerError, sizeof(fs->attackerError), "%s", e.c_str());
  fs->listenerFlooded.store(1);
  end = now() + 60;
  while (!fs->stopAttack.load() && now() < end) usleep(1000);
  for (int fd : fds) close(fd);
  return e.empty() ? 0 : 1;
}

// This process's listening TCP sockets: inode -> address.
std::map<ino_t, Address> listeningSockets() {
  std::map<ino_t, Address> out;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    int fd = atoi(e->d_name);
    struct stat st;
    if (e->d_name[0] == '.' || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int listening = 0;
    socklen_t len = sizeof(listening);
    Address a;
    a.length = sizeof(a.storage);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.length) != 0 ||
        (a.storage.ss_family != AF_INET && a.storage.ss_family != AF_INET6))
      continue;
    out[st.st_ino] = a;
  }
  closedir(d);
  return out;
}

// The address of a listening socket of this process not in `before` (the transport's).
bool newListener(const std::map<ino_t, Address>& before, Address* a) {
  for (const auto& l : listeningSockets())
    if (!before.count(l.first)) {
      *a = l.second;
      return true;
    }
  return false;
}

// A rank: rank 0 publishes its transport listener as soon as it exists (a spy thread finds it)
// and samples its own threads and memory until its init returns; the others wait for the
// release. Every rank records when its init returned, then checks an AllReduce.
int floodRank(FloodShared* fs, const mixcclUniqueId& id, int rank, int nranks) {
  std::thread spy;
  if (rank == 0) {
    std::map<ino_t, Address> before = listeningSockets();
    fs->rank0.start();
    spy = std::thread([fs, before] {
      double end = now() + 30;
      while (!fs->listenerKnown.load() && now() < end) {
        if (newListener(before, &fs->listener)) fs->listenerKnown.store(1);
        fs->rank0.sample();
        usleep(500);
      }
      while (!fs->rank0InitDone.load() && now() < end) {
        fs->rank0.sample();
        usleep(2000);
      }
    });
  } else {
    double end = now() + 30;
    while (!fs->release.load() && now() < end) usleep(200);
  }
  mixcclComm_t comm;
  mixcclResult_t r = mixcclCommInitRank(&comm, nranks, id, rank);
  fs->initDoneAt[rank] = now();
  if (rank == 0) {
    fs->rank0InitDone.store(1);
    spy.join();
  }
  if (r != mixcclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, mixcclGetLastError(nullptr));
    return 3;
  }
  std::vector<float> v(1024, 1.0f);
  if (mixcclAllReduce(v.data(), v.data(), v.size(), mixcclFloat, mixcclSum, comm, nullptr) !=
      mixcclSuccess)
    return 4;
  for (float x : v)
    if (x != (float)nranks) return 5;
  return mixcclCommDestroy(comm) == mixcclSuccess ? 0 : 6;
}

struct RunResult {
  bool ok = false;
  std::string why;
  double initSeconds = 0;
  Peak root, rank0;
  RootConnectionCounts counts;  // what the root did in this run
};

Address addressOf(const SocketAddress& s) {
  Address a;
  memcpy(&a.storage, &s.storage, sizeof(a.storage));
  a.length = s.length;
  return a;
}

// One job of kRanks ranks; attacked: with the attacker at the root before any rank starts and
// at rank 0's listener before the other ranks start (rank 0 then waits at the rendezvous).
RunResult runJob(bool attacked) {
  RunResult res;
  void* p = mmap(nullptr, sizeof(FloodShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) {
    res.why = "mmap failed";
    return res;
  }
  FloodShared* fs = static_cast<FloodShared*>(p);
  memset(static_cast<void*>(fs), 0, sizeof(*fs));
  const RootConnectionCounts start = rootConnectionCounts();
  res.root.start();
  fault::Job job(kRanks, 60);
  UniqueIdData id;
  SocketAddress rootAddr;
  if (!job.ok() || decodeUniqueId(job.id(), &id) != mixcclSuccess ||
      fromWire(id.root, &rootAddr) != mixcclSuccess) {
    res.why = "no job";
    return res;
  }
  fs->root = addressOf(rootAddr);
  pid_t attackerPid = -1;
  if (attacked) {
    fflush(stderr);
    attackerPid = fork();
    if (attackerPid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      _exit(attacker(fs, floodConnections()));
    }
    if (!waitSampling([&] { return fs->rootFlooded.load() != 0; }, 30, &res.root))
      res.why = "the attacker never flooded the root";
  }
  job.start([fs](const mixcclUniqueId& uid, int rank, int nranks, fault::Shared*) {
    return floodRank(fs, uid, rank, nranks);
  });
  if (!waitSampling([&] { return fs->listenerKnown.load() != 0; }, 30, &res.root))
    res.why = "rank 0's listener was not found";
  if (attacked &&
      !waitSampling([&] { return fs->listenerFlooded.load() != 0; }, 30, &res.root))
    res.why = "the attacker never flooded rank 0's listener";
  fs->releasedAt = now();
  fs->release.store(1);
  auto allDone = [&] {
    for (int r = 0; r < kRanks; ++r)
      if (fs->initDoneAt[r] == 0) return false;
    return true;
  };
  waitSampling(allDone, 40, &res.root);
  bool exited = job.waitExit();
  if (attacked) {
    fs->stopAttack.store(1);
    int st = 0;
    if (waitpid(attackerPid, &st, 0) != attackerPid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      res.why += std::string(" the attacker failed: ") + fs->attackerError;
  }
  double last = 0;
  for (int r = 0; r < kRanks; ++r) last = std::max(last, fs->initDoneAt[r]);
  res.initSeconds = last - fs->releasedAt;
  res.rank0 = fs->rank0;
  for (int r = 0; r < kRanks && exited; ++r)
    if (job.exitCode(r) != 0) res.why += " rank " + std::to_string(r) + " exited with " +
                                         std::to_string(job.exitCode(r)) + ";";
  if (!exited) res.why += " the job did not end in time;";
  const RootConnectionCounts end = rootConnectionCounts();
  res.counts.accepted = end.accepted - start.accepted;
  res.counts.admitted = end.admitted - start.admitted;
  res.counts.refused = end.refused - start.refused;
  res.counts.cut = end.cut - start.cut;
  res.ok = res.why.empty();
  munmap(p, sizeof(FloodShared));
  return res;
}

void print(const char* what, const RunResult& r) {
  fprintf(stderr,
          "%s: init %.3f s after the release; root's process: threads %d -> max %d, RSS +%ld kB; "
          "rank 0: threads %d -> max %d, RSS +%ld kB; root accepted %llu, admitted %llu, refused "
          "%llu, cut %llu\n",
          what, r.initSeconds, r.root.threadsAtStart, r.root.maxThreads, r.root.growthKb(),
          r.rank0.threadsAtStart, r.rank0.maxThreads, r.rank0.growthKb(),
          (unsigned long long)r.counts.accepted, (unsigned long long)r.counts.admitted,
          (unsigned long long)r.counts.refused, (unsigned long long)r.counts.cut);
}

TEST(Flood, IdleAndJunkConnectionsAtTheRootAndARankListenerDoNotDelayInit) {
  const int idle = floodConnections();
  // The attacker holds two floods; the attacked processes what they choose to keep.
  const rlim_t needed = 2 * (rlim_t)idle + 1024;
  rlimit lim;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_cur < needed) {
    lim.rlim_cur = std::min(needed, lim.rlim_max);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0) << strerror(errno);
  }
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  ASSERT_GE(lim.rlim_cur, needed) << "RLIMIT_NOFILE (hard limit " << lim.rlim_max
                                  << ") is too low for the flood";

  RunResult quiet = runJob(false);
  print("unattacked", quiet);
  ASSERT_TRUE(quiet.ok) << quiet.why;
  RunResult flooded = runJob(true);
  print("attacked", flooded);
  EXPECT_TRUE(flooded.ok) << flooded.why;
  EXPECT_LE(flooded.initSeconds, quiet.initSeconds + 1.0) << "the flood delayed the job";
  // No thread per connection: the counts stay what they are without the attack (+2 for
  // threads caught starting or ending by the sampler).
  EXPECT_LE(flooded.root.maxThreads, quiet.root.maxThreads + 2);
  EXPECT_LE(flooded.rank0.maxThreads, quiet.rank0.maxThreads + 2);
  // Per pending connection a few hundred bytes; the kernel's socket buffers are not counted.
  EXPECT_LE(flooded.root.growthKb(), quiet.root.growthKb() + 16 * 1024);
  EXPECT_LE(flooded.rank0.growthKb(), quiet.rank0.growthKb() + 16 * 1024);
  // Exactly the ranks got in; every talking stranger at the root was refused.
  EXPECT_EQ(flooded.counts.admitted, (uint64_t)kRanks);
  EXPECT_GE(flooded.counts.refused, (uint64_t)(kRandom + kForged));
  EXPECT_GE(flooded.counts.accepted, (uint64_t)(kRanks + kRandom + kForged));
  EXPECT_TRUE(fault::Job::noChildrenLeft());
}

}  // namespace
