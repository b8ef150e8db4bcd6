// Connections on first use (MIXCCL_CONNECT=lazy, docs/scale.md): pairs that both dial at once,
// a rank that dies before anyone connected to it, and a stranger at a listener that stays open
// after init, a rank killed while the others wait on its shared-memory slot. Ranks are forked
// processes over real sockets (tests/fault/fault_harness.h); CTest
// sets MIXCCL_CONNECT=lazy, and every test first checks through mixcclCommInspect that it took
// effect and that the pair under test was not connected by init.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <regex>
#include <set>
#include <string>

#include "bootstrap/auth.h"
#include "bootstrap/socket.h"
#include "fault_harness.h"

using namespace fault;

namespace {

constexpr int kRanks = 8;
// Rank 0's partners in the collectives init runs (recursive doubling 1, 2, 4; ring 1, 7): 5 is
// none of them, so the pair (0, 5) connects only when the test uses it.
constexpr int kFar = 5;

std::string inspect(mixcclComm_t comm, const char* key) {
  char v[256] = "";
  if (mixcclCommInspect(comm, key, v, sizeof(v)) != mixcclSuccess) return "(failed)";
  return v;
}

int connectedPeers(mixcclComm_t comm) { return atoi(inspect(comm, "connected_peers").c_str()); }

// The peers this rank has a transport to, one bit per rank.
unsigned peerMask(mixcclComm_t comm, int rank, int n) {
  unsigned mask = 0;
  for (int p = 0; p < n; ++p)
    if (p != rank && !inspect(comm, ("transport." + std::to_string(p)).c_str()).empty())
      mask |= 1u << p;
  return mask;
}

// The transport MIXCCL_NET names for every pair (CTest runs these tests over ucx and ofi too),
// or "" where the pair's host decides (auto, shm).
std::string namedTransport() {
  const char* net = getenv("MIXCCL_NET");
  const std::string n = net ? net : "";
  return n == "socket" || n == "ucx" || n == "ofi" ? n : "";
}

// "" when the pair with peer runs over the transport MIXCCL_NET names, else what it runs over.
std::string wrongTransport(mixcclComm_t comm, int peer) {
  const std::string got = inspect(comm, ("transport." + std::to_string(peer)).c_str());
  const std::string want = namedTransport();
  return want.empty() || got == want ? "" : "transport." + std::to_string(peer) + " is '" + got +
                                                "', MIXCCL_NET=" + want;
}

// Lets the rank go on once the parent set released (or fails the rank after seconds).
bool waitReleased(RankReport& rep, double seconds) {
  double end = now() + seconds;
  while (!rep.released.load()) {
    if (now() > end) return false;
    usleep(1000);
  }
  return true;
}

// What a rank found after init, for the parent's asserts (iterations and code are reused).
struct InitFacts {
  int lazy;           // inspect "connect" said "lazy"
  int peersAfterInit;
  int farConnected;   // rank 0: "transport.5" was set right after init
  unsigned initMask;  // rank 0: the peers with a transport right after init, one bit each
  unsigned endMask;   // rank 0: the same after the late pair (0, 5) connected
  int slotBytes;      // inspect "shm_slot_bytes"
  int onSlots;        // inspect "algo.allreduce.4" said "slots"
};

InitFacts* mapFacts() {
  void* p = mmap(nullptr, sizeof(InitFacts) * kRanks + sizeof(sockaddr_storage),
                 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<InitFacts*>(p);
}

// This process's listening sockets.
std::set<int> listeningFds() {
  std::set<int> fds;
  for (int fd = 3; fd < 1024; ++fd) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening)
      fds.insert(fd);
  }
  return fds;
}

// The address of the listener that init opened (the communicator's transport listener), not
// one of before (the rendezvous root's, inherited from the parent across fork).
bool findListener(const std::set<int>& before, sockaddr_storage* out) {
  for (int fd : listeningFds()) {
    if (before.count(fd)) continue;
    socklen_t alen = sizeof(*out);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(out), &alen) == 0) return true;
  }
  return false;
}

TEST(LazyConnect, BothRanksOfEveryPairDialAtOnce) {
  InitFacts* facts = mapFacts();
  ASSERT_NE(facts, nullptr);
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport& rep = sh->ranks[rank];
    mixcclComm_t comm;
    RANK_CHECK(mixcclCommInitRank(&comm, n, id, rank) == mixcclSuccess);
    facts[rank].lazy = inspect(comm, "connect") == "lazy";
    facts[rank].peersAfterInit = connectedPeers(comm);
    // Every rank sends to and receives from every other in one group: each pair not connected
    // yet is dialled by both of its ranks at the same moment. Twice: the second round reuses.
    for (int round = 0; round < 2; ++round) {
      std::vector<int> out(n), in(n, -1);
      for (int q = 0; q < n; ++q) out[q] = 1000 * rank + q + 100000 * round;
      RANK_CHECK(mixcclGroupStart() == mixcclSuccess);
      for (int q = 0; q < n; ++q) {
        if (q == rank) continue;
        RANK_CHECK(mixcclSend(&out[q], 1, mixcclInt32, q, comm, nullptr) == mixcclSuccess);
        RANK_CHECK(mixcclRecv(&in[q], 1, mixcclInt32, q, comm, nullptr) == mixcclSuccess);
      }
      rep.code = mixcclGroupEnd();
      if (rep.code != mixcclSuccess) {
        copyMessage(&rep, mixcclGetLastError(comm));
        return 1;
      }
      for (int q = 0; q < n; ++q)
        if (q != rank && in[q] != 1000 * q + rank + 100000 * round) {
          snprintf(rep.message, sizeof(rep.message), "round %d: from rank %d got %d", round, q, in[q]);
          return 1;
        }
    }
    rep.iterations = connectedPeers(comm);
    for (int q = 0; q < n; ++q)
      if (q != rank && !wrongTransport(comm, q).empty()) {
        copyMessage(&rep, wrongTransport(comm, q).c_str());
        return 1;
      }
    RANK_CHECK(mixcclCommDestroy(comm) == mixcclSuccess);
    return 0;
  });
  ASSERT_TRUE(job.waitExit());
  int unconnectedAfterInit = 0;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(job.exitCode(r), 0) << "rank " << r << ": " << job.report(r).message;
    EXPECT_EQ(facts[r].lazy, 1) << "rank " << r << ": MIXCCL_CONNECT=lazy did not take effect";
    EXPECT_EQ(job.report(r).iterations, kRanks - 1) << "rank " << r;
    unconnectedAfterInit += kRanks - 1 - facts[r].peersAfterInit;
  }
  // Init connected only its algorithms' neighbours: the group had pairs left to dial.
  EXPECT_GT(unconnectedAfterInit, 0);
}

TEST(LazyConnect, RankDeadBeforeAnyConnectionToItIsReportedWithinTheBound) {
  InitFacts* facts = mapFacts();
  ASSERT_NE(facts, nullptr);
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport& rep = sh->ranks[rank];
    mixcclComm_t comm;
    RANK_CHECK(mixcclCommInitRank(&comm, n, id, rank) == mixcclSuccess);
    facts[rank].lazy = inspect(comm, "connect") == "lazy";
    if (rank == kFar) {
      rep.phase.store(2);
      for (;;) pause();  // killed by the parent
    }
    if (rank != 0) {
      // Leaving cleanly: no failure for anyone to relay to rank 0.
      RANK_CHECK(mixcclCommDestroy(comm) == mixcclSuccess);
      return 0;
    }
    facts[0].farConnected = !inspect(comm, "transport.5").empty();
    // Init's collective connected rank 1 (recursive doubling), over the transport asked for.
    if (!wrongTransport(comm, 1).empty() || inspect(comm, "transport.1").empty()) {
      copyMessage(&rep, ("after init: " + wrongTransport(comm, 1)).c_str());
      return 1;
    }
    rep.phase.store(1);
    RANK_CHECK(waitReleased(rep, 30));
    int x = 0;
    mixcclResult_t r = mixcclRecv(&x, 1, mixcclInt32, kFar, comm, nullptr);
    return reportFailureAndDestroy(comm, &rep, r, nullptr);
  });
  std::vector<int> leavers;
  for (int r = 1; r < kRanks; ++r)
    if (r != kFar) leavers.push_back(r);
  ASSERT_TRUE(job.waitExit(leavers));
  ASSERT_TRUE(job.waitPhase(kFar, 2, 30));
  ASSERT_TRUE(job.waitPhase(0, 1, 30));
  job.inject(kFar, SIGKILL);
  ASSERT_TRUE(job.reap(kFar, 10));
  job.report(0).released.store(1);
  ASSERT_TRUE(job.waitExit({0}));
  EXPECT_EQ(facts[0].lazy, 1) << "MIXCCL_CONNECT=lazy did not take effect";
  EXPECT_EQ(facts[0].farConnected, 0) << "init connected rank 0 to rank 5: nothing to test";
  const RankReport& rep = job.report(0);
  EXPECT_EQ(rep.code, mixcclRemoteError);
  const double took = rep.failedAt - job.shared()->injectedAt;
  fprintf(stderr, "rank 0 learned of rank 5's death %.3f s after the kill: %s\n", took, rep.message);
  // MIXCCL_TIMEOUT_S is 30 here: the dial is refused at once, no wait runs out.
  EXPECT_LT(took, 5.0);
  const std::string msg = rep.message;
  EXPECT_NE(msg.find("rank 0: connecting to rank 5 ("), std::string::npos) << msg;
  EXPECT_NE(msg.find("on first use failed: cannot connect to "), std::string::npos) << msg;
  EXPECT_NE(msg.find("Connection refused (its process has ended or left the communicator)"),
            std::string::npos) << msg;
  EXPECT_EQ(job.exitCode(0), 0);
}

TEST(LazyConnect, StrangerAtTheListenerAfterInitIsRefused) {
  InitFacts* facts = mapFacts();
  ASSERT_NE(facts, nullptr);
  auto* listener = reinterpret_cast<sockaddr_storage*>(facts + kRanks);
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport& rep = sh->ranks[rank];
    const std::set<int> inherited = listeningFds();
    mixcclComm_t comm;
    RANK_CHECK(mixcclCommInitRank(&comm, n, id, rank) == mixcclSuccess);
    facts[rank].lazy = inspect(comm, "connect") == "lazy";
    facts[rank].peersAfterInit = connectedPeers(comm);
    if (rank == 0) {
      facts[0].farConnected = !inspect(comm, "transport.5").empty();
      facts[0].initMask = peerMask(comm, 0, n);
      RANK_CHECK(findListener(inherited, listener));
    }
    rep.phase.store(1);
    RANK_CHECK(waitReleased(rep, 30));
    // The pair (0, 5) connects now, after the strangers: a late connection still gets in.
    int x = rank;
    if (rank == 0) rep.code = mixcclSend(&x, 1, mixcclInt32, kFar, comm, nullptr);
    if (rank == kFar) {
      rep.code = mixcclRecv(&x, 1, mixcclInt32, 0, comm, nullptr);
      if (rep.code == mixcclSuccess && x != 0) rep.code = -1;
    }
    if (rep.code != mixcclSuccess) copyMessage(&rep, mixcclGetLastError(comm));
    rep.iterations = connectedPeers(comm);
    if (rank == 0) {
      facts[0].endMask = peerMask(comm, 0, n);
      rep.phase.store(2);
    } else {
      // The AllReduce below connects rank 0's recursive-doubling partners: not before rank 0
      // has counted its peers.
      std::atomic<int>& counted = sh->ranks[0].phase;
      for (double end = now() + 30; counted.load() < 2 && now() < end;) usleep(1000);
      RANK_CHECK(counted.load() >= 2);
    }
    float v = 1, sum = 0;
    RANK_CHECK(mixcclAllReduce(&v, &sum, 1, mixcclFloat, mixcclSum, comm, nullptr) == mixcclSuccess);
    RANK_CHECK(sum == (float)n);
    RANK_CHECK(mixcclCommDestroy(comm) == mixcclSuccess);
    return 0;
  });
  for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(job.waitPhase(r, 1, 30)) << "rank " << r;
  mixccl::SocketAddress addr;
  memcpy(&addr.storage, listener, sizeof(*listener));
  addr.length = listener->ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  {
    // Knows the protocol but not the secret.
    mixccl::Socket s;
    ASSERT_EQ(mixccl::connectBefore(addr, mixccl::Deadline::afterSeconds(5), &s), mixcclSuccess);
    mixccl::Secret wrong{};
    EXPECT_NE(mixccl::authenticateClient(s, wrong, mixccl::Deadline::afterSeconds(5), "rank 0"),
              mixcclSuccess);
  }
  {
    // Talks something else entirely: refused and closed at once.
    mixccl::Socket s;
    ASSERT_EQ(mixccl::connectBefore(addr, mixccl::Deadline::afterSeconds(5), &s), mixcclSuccess);
    const char junk[] = "GET / HTTP/1.0\r\n\r\n";
    ASSERT_EQ(send(s.fd(), junk, sizeof(junk) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(junk) - 1));
    char buf[64];
    double end = now() + 5;
    ssize_t k = -1;
    while (now() < end && (k = recv(s.fd(), buf, sizeof(buf), MSG_DONTWAIT)) < 0 && errno == EAGAIN)
      usleep(2000);
    EXPECT_LE(k, 0) << "the listener answered a stranger";
    EXPECT_TRUE(k == 0 || (k < 0 && errno != EAGAIN)) << "the listener kept the stranger's connection";
  }
  for (int r = 0; r < kRanks; ++r) job.report(r).released.store(1);
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
    EXPECT_EQ(facts[r].lazy, 1) << "rank " << r;
  }
  EXPECT_EQ(facts[0].farConnected, 0) << "init connected rank 0 to rank 5: nothing to test";
  EXPECT_EQ(job.report(0).code, mixcclSuccess) << job.report(0).message;
  EXPECT_EQ(job.report(kFar).code, mixcclSuccess) << job.report(kFar).message;
  // Only real peers hold a slot: the count is the peers with a transport, and besides the late
  // pair (0, 5) the only peers added since init are init's own ring neighbours (1 and 7), whose
  // connections the acceptor may adopt just after init returned.
  const unsigned endMask = facts[0].endMask;
  EXPECT_EQ(job.report(0).iterations, __builtin_popcount(endMask));
  EXPECT_NE(endMask & (1u << kFar), 0u) << "the late pair (0, 5) did not connect";
  const unsigned ringNeighbours = (1u << 1) | (1u << (kRanks - 1));
  EXPECT_EQ(endMask & ~facts[0].initMask & ~(1u << kFar) & ~ringNeighbours, 0u)
      << "peers after init " << std::hex << facts[0].initMask << ", at the end " << endMask;
}

}  // namespace

// On one host a communicator connected on first use has the shared-memory slots too
// (core/comm_slots.h). Rank 5 is killed while every other rank waits on the slots for it; rank
// 0 has no connection to it, yet learns of the death within the bound (MIXCCL_TIMEOUT_S is 30
// here): from its own look at rank 5's process, or from a neighbour of rank 5 that saw its
// connection break, whichever comes first. No /dev/shm name is left (the shm_segments fixture).
TEST(LazyConnect, RankKilledWhileOthersWaitOnItsSlotIsReportedWithinTheBound) {
  InitFacts* facts = mapFacts();
  ASSERT_NE(facts, nullptr);
  Job job(kRanks, 60);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport& rep = sh->ranks[rank];
    mixcclComm_t comm;
    RANK_CHECK(mixcclCommInitRank(&comm, n, id, rank) == mixcclSuccess);
    facts[rank].lazy = inspect(comm, "connect") == "lazy";
    facts[rank].slotBytes = atoi(inspect(comm, "shm_slot_bytes").c_str());
    facts[rank].onSlots = inspect(comm, "algo.allreduce.4") == "slots";
    if (rank == 0) facts[0].initMask = peerMask(comm, 0, n);
    int x = rank;
    mixcclResult_t r = mixcclSuccess;
    for (;;) {
      r = mixcclAllReduce(&x, &x, 1, mixcclInt32, mixcclMax, comm, nullptr);
      if (r != mixcclSuccess) break;
      if (++rep.iterations == 50) rep.phase.store(2);
      if (rank == kFar && rep.iterations == 50) for (;;) pause();  // killed by the parent
    }
    return reportFailureAndDestroy(comm, &rep, r, nullptr);
  });
  ASSERT_TRUE(job.waitPhase(kFar, 2, 30));
  fault::sleepSeconds(0.05);  // the others are waiting on rank 5's slot by now
  job.inject(kFar, SIGKILL);
  std::vector<int> survivors;
  for (int r = 0; r < kRanks; ++r)
    if (r != kFar) survivors.push_back(r);
  ASSERT_TRUE(job.waitExit(survivors));
  ASSERT_TRUE(job.reap(kFar, 10));
  EXPECT_EQ(facts[0].initMask & (1u << kFar), 0u) << "init connected rank 0 to rank 5";
  for (int r : survivors) {
    EXPECT_EQ(facts[r].lazy, 1) << "rank " << r << ": MIXCCL_CONNECT=lazy did not take effect";
    EXPECT_GT(facts[r].slotBytes, 0) << "rank " << r << ": shm_slot_bytes is 0";
    EXPECT_EQ(facts[r].onSlots, 1) << "rank " << r << ": a 4-byte AllReduce is not on the slots";
    const RankReport& rep = job.report(r);
    const double took = rep.failedAt - job.shared()->injectedAt;
    fprintf(stderr, "rank %d learned of rank 5's death %.3f s after the kill: %s\n", r, took,
            rep.message);
    EXPECT_EQ(rep.code, mixcclRemoteError) << "rank " << r;
    // One of the three ways to learn it, each message whole.
    const std::string me = "rank " + std::to_string(r) + ": ";
    const std::string victim = "rank 5 \\(" + fault::hostName() + " pid [0-9]+\\)";
    const std::regex own(me + "mixcclAllReduce on shared-memory slots: " + victim +
                         " died \\(its process has ended\\) while this rank waited for it");
    const std::regex relayed(me + victim + " failed \\(reported by rank [0-9] \\(" +
                             fault::hostName() + " pid [0-9]+\\)\\)");
    const std::regex neighbour(me + "connection to " + victim + " failed: it closed the "
                               "connection \\(process ended or crashed\\)");
    EXPECT_TRUE(std::regex_match(rep.message, own) || std::regex_match(rep.message, relayed) ||
                std::regex_match(rep.message, neighbour)) << rep.message;
    EXPECT_LT(took, 2.0) << "rank " << r;
    EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
  }
}
