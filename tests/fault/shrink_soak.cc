// A soak of shrink and grow (docs/reliability.md "Soak"): N rank processes loop over AllReduces;
// each round the parent kills -9 one or two random ranks in the middle of one, the survivors
// shrink without them (MIXCCL_SHRINK_ABORT) and check AllReduces of three sizes bit-exact
// against the values every rank can compute, then replacement processes join by mixcclCommGrow
// and all N check again (and a Broadcast from a new rank). Every round is bounded; after each
// one every process that lived through it must have the fds and threads it had after its first
// round, and at the end no /dev/shm name and no child may be left. Prints one line per round and
// a summary; exits 1 on any deviation.
//   fault_shrink_soak [--seconds S] [--ranks N] [--net socket|shm|ucx|ofi] [--seed X]
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fault_harness.h"

namespace {

using fault::now;

constexpr int kSlots = 16;          // process slots; a dead rank's slot takes its replacement
constexpr double kRoundLimit = 30;  // seconds a round may take before the soak fails
constexpr int kTimeoutS = 5;

// One process slot, written by its process (and by the parent where said).
struct Slot {
  std::atomic<int> round;     // the last round this process completed (its comm whole again)
  std::atomic<int> failed;    // exit code of a failed check (the message says which)
  int rank;                   // its rank in the current communicator
  int assignedRank;           // parent: the rank a replacement joins as
  int fdsBase, threadsBase;   // after its first round
  double workingAfter;        // kill to the end of its first exact AllReduce on the shrunk comm
  char message[512];
};

struct Soak {
  std::atomic<int> go;        // parent: the round the ranks may start (its kills follow)
  std::atomic<int> stop;      // parent: leave after the current round
  std::atomic<int> idRound;   // the round whose grow id is in growId
  mixcclUniqueId growId;
  double killedAt;
  int victims[2];
  int nVictims;
  Slot slots[kSlots];
};

Soak* soak = nullptr;
const char* net = "socket";
int nranks = 6;

int fail(Slot* me, int code, const std::string& what) {
  snprintf(me->message, sizeof(me->message), "%s", what.c_str());
  me->failed.store(code);
  return code;
}

// An AllReduce (Sum, int32) whose exact result every rank knows; false if it failed or differs.
bool exactAllReduce(mixcclComm_t comm, size_t count) {
  int rank = 0, n = 0;
  mixcclCommUserRank(comm, &rank);
  mixcclCommCount(comm, &n);
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = rank + 1 + (int32_t)i;
  if (mixcclAllReduce(v.data(), v.data(), count, mixcclInt32, mixcclSum, comm, nullptr) !=
      mixcclSuccess)
    return false;
  for (size_t i = 0; i < count; ++i)
    if (v[i] != n * (n + 1) / 2 + n * (int32_t)i) return false;
  return true;
}

bool exactCollectives(mixcclComm_t comm) {
  for (size_t count : {(size_t)1, (size_t)1000, (size_t)1 << 18})
    if (!exactAllReduce(comm, count)) return false;
  return true;
}

// What every rank checks once the communicator is whole again: AllReduces of three sizes and a
// Broadcast from the last rank (a replacement after a grow).
// One value to and from every peer, checked. Every pair is then connected, also under
// MIXCCL_CONNECT=lazy, where a rank otherwise holds the pairs its renumbered neighbours need:
// its fd count after each round then compares with its first round's (leaksNothing).
bool exchangeWithEveryPeer(mixcclComm_t comm, int rank) {
  std::vector<int32_t> got(nranks, -1);
  const int32_t mine = rank;
  mixcclGroupStart();
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    mixcclSend(&mine, 1, mixcclInt32, p, comm, nullptr);
    mixcclRecv(&got[p], 1, mixcclInt32, p, comm, nullptr);
  }
  if (mixcclGroupEnd() != mixcclSuccess) return false;
  for (int p = 0; p < nranks; ++p)
    if (p != rank && got[p] != p) return false;
  return true;
}

bool wholeAgain(mixcclComm_t comm) {
  int rank = -1;
  mixcclCommUserRank(comm, &rank);
  std::vector<int32_t> b(1000, rank == nranks - 1 ? 7 : 0);
  return exactCollectives(comm) &&
         mixcclBroadcast(b.data(), b.data(), b.size(), mixcclInt32, nranks - 1, comm, nullptr) ==
             mixcclSuccess &&
         b[0] == 7 && b[999] == 7 && exchangeWithEveryPeer(comm, rank);
}

// AllReduces of 1 MiB until one fails (the kill) or every rank agrees to stop: the last element
// carries each rank's stop flag, so all leave after the same call. Each result is checked.
mixcclResult_t workUntilFailure(mixcclComm_t comm, Slot* me, bool* stopped) {
  std::vector<float> v(1 << 18);
  for (;;) {
    std::fill(v.begin(), v.end(), 1.0f);
    v.back() = soak->stop.load() ? 1.0f : 0.0f;
    mixcclResult_t r = mixcclAllReduce(v.data(), v.data(), v.size(), mixcclFloat, mixcclSum,
                                       comm, nullptr);
    if (r != mixcclSuccess) return r;
    if (v[0] != (float)nranks || v[v.size() / 2] != (float)nranks) {
      fail(me, 40, "an AllReduce before the kill was wrong");
      return mixcclInternalError;
    }
    if (v.back() > 0) {
      *stopped = true;
      return mixcclSuccess;
    }
  }
}

// Checks, at the end of a round, that this process holds the fds and threads of its first one.
// A thread that has just ended (the grow's rendezvous root, in the id maker's process) may stay
// listed for a moment, longer on loaded cores, so a count other than the first is read again
// for up to five seconds.
bool leaksNothing(Slot* me, bool first) {
  int fds = fault::countFds(), threads = fault::countThreadsNow();
  for (int i = 0; i < 1000 && !first && (fds != me->fdsBase || threads != me->threadsBase); ++i) {
    usleep(5000);
    fds = fault::countFds();
    threads = fault::countThreadsNow();
  }
  if (first) {
    me->fdsBase = fds;
    me->threadsBase = threads;
    return true;
  }
  if (fds == me->fdsBase && threads == me->threadsBase) return true;
  fail(me, 41, "rank " + std::to_string(me->rank) + ": " + std::to_string(fds) + " fds and " +
                   std::to_string(threads) + " threads, " + std::to_string(me->fdsBase) +
                   " and " + std::to_string(me->threadsBase) + " after its first round");
  return false;
}

// A rank process: joins (init in round 0, grow later), then round after round works until a
// kill, shrinks, grows back and checks.
int rankMain(int slot, const mixcclUniqueId& initId, int joinRound) {
  Slot* me = &soak->slots[slot];
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.timeout = kTimeoutS;
  cfg.netName = net;
  mixcclComm_t comm = nullptr;
  mixcclResult_t r = joinRound == 0
                         ? mixcclCommInitRankConfig(&comm, nranks, initId, me->assignedRank, &cfg)
                         : mixcclCommGrow(nullptr, nranks, &soak->growId, me->assignedRank,
                                          &comm, &cfg);
  if (r != mixcclSuccess) return fail(me, 10, mixcclGetLastError(nullptr));
  me->rank = me->assignedRank;
  if (!wholeAgain(comm)) return fail(me, 11, "collectives after joining were wrong");
  if (!leaksNothing(me, true)) return 41;
  me->round.store(joinRound);
  for (int round = joinRound + 1;; ++round) {
    while (soak->go.load() < round) usleep(200);
    bool stopped = false;
    mixcclResult_t failed = workUntilFailure(comm, me, &stopped);
    if (stopped) break;
    if (failed != mixcclRemoteError)
      return fail(me, 12, std::string("the kill gave ") + mixcclGetErrorString(failed) + ": " +
                              mixcclGetLastError(comm));
    mixcclComm_t shrunk = nullptr;
    if (mixcclCommShrink(comm, soak->victims, soak->nVictims, &shrunk, nullptr,
                         MIXCCL_SHRINK_ABORT) != mixcclSuccess)
      return fail(me, 13, mixcclGetLastError(comm));
    const bool exact = exactAllReduce(shrunk, 1);
    me->workingAfter = now() - soak->killedAt;
    if (!exact || !exactCollectives(shrunk))
      return fail(me, 14, "collectives on the shrunk communicator were wrong");
    mixcclCommDestroy(comm);
    int newRank = -1;
    mixcclCommUserRank(shrunk, &newRank);
    if (newRank == 0) {
      if (mixcclCommGetUniqueId(shrunk, &soak->growId) != mixcclSuccess)
        return fail(me, 15, mixcclGetLastError(shrunk));
      soak->idRound.store(round);
    }
    r = mixcclCommGrow(shrunk, nranks, newRank == 0 ? &soak->growId : nullptr, -1, &comm, nullptr);
    if (r != mixcclSuccess) return fail(me, 16, mixcclGetLastError(shrunk));
    mixcclCommDestroy(shrunk);
    me->rank = newRank;
    if (!wholeAgain(comm)) return fail(me, 17, "collectives after the grow were wrong");
    if (!leaksNothing(me, false)) return 41;
    me->round.store(round);
  }
  return mixcclCommDestroy(comm) == mixcclSuccess ? 0 : fail(me, 19, "destroy failed");
}

struct Parent {
  std::vector<pid_t> pids = std::vector<pid_t>(kSlots, 0);
  int deviations = 0;

  void start(int slot, int rank, const mixcclUniqueId& id, int joinRound) {
    Slot* s = &soak->slots[slot];
    memset(static_cast<void*>(s), 0, sizeof(Slot));
    s->assignedRank = rank;
    s->rank = rank;
    s->round.store(-1);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      _exit(rankMain(slot, id, joinRound));
    }
    pids[slot] = p;
  }
  // The slots of the living ranks, by rank.
  std::vector<int> byRank() {
    std::vector<int> out(nranks, -1);
    for (int s = 0; s < kSlots; ++s)
      if (pids[s] && soak->slots[s].rank >= 0 && soak->slots[s].rank < nranks)
        out[soak->slots[s].rank] = s;
    return out;
  }
  // Waits until every living rank completed round; false (after saying why) on a failure or
  // when the round's limit passed.
  bool waitRound(int round, double until) {
    for (;;) {
      bool all = true;
      for (int s = 0; s < kSlots; ++s) {
        if (!pids[s]) continue;
        if (int code = soak->slots[s].failed.load()) {
          printf("FAIL round %d: rank %d (pid %d) exit code %d: %s\n", round, soak->slots[s].rank,
                 pids[s], code, soak->slots[s].message);
          return false;
        }
        int st;
        if (waitpid(pids[s], &st, WNOHANG) == pids[s]) {
          printf("FAIL round %d: rank %d (pid %d) ended unexpectedly\n", round,
                 soak->slots[s].rank, pids[s]);
          pids[s] = 0;
          return false;
        }
        if (soak->slots[s].round.load() < round) all = false;
      }
      if (all) return true;
      if (now() > until) {
        printf("FAIL round %d: not complete within %.0f s (a hang)\n", round, kRoundLimit);
        return false;
      }
      usleep(1000);
    }
  }
  void killAll() {
    for (pid_t& p : pids)
      if (p) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
        p = 0;
      }
  }
};

}  // namespace

int main(int argc, char** argv) {
  double seconds = 20;
  unsigned seed = std::random_device{}();
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--seconds") seconds = atof(argv[i + 1]);
    else if (a == "--ranks") nranks = atoi(argv[i + 1]);
    else if (a == "--net") net = argv[i + 1];
    else if (a == "--seed") seed = (unsigned)strtoul(argv[i + 1], nullptr, 10);
    else {
      fprintf(stderr, "usage: %s [--seconds S] [--ranks N] [--net NET] [--seed X]\n", argv[0]);
      return 2;
    }
  }
  if (nranks < 3 || nranks > 8) {
    fprintf(stderr, "--ranks must be 3-8\n");
    return 2;
  }
  if (std::string(net) == "ucx") setenv("UCX_TLS", "tcp", 1);
  if (std::string(net) == "ofi") setenv("MIXCCL_OFI_PROVIDER", "tcp;ofi_rxm", 1);
  void* p = mmap(nullptr, sizeof(Soak), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  soak = static_cast<Soak*>(p);
  memset(p, 0, sizeof(Soak));
  const std::set<std::string> shmBefore = fault::shmFiles();
  printf("soak: %d ranks over %s for %.0f s, seed %u\n", nranks, net, seconds, seed);
  std::mt19937 rng(seed);
  mixcclUniqueId id;
  if (mixcclGetUniqueId(&id) != mixcclSuccess) return 1;
  Parent parent;
  for (int r = 0; r < nranks; ++r) parent.start(r, r, id, 0);
  const double t0 = now();
  bool ok = parent.waitRound(0, t0 + kRoundLimit);
  int round = 0, kills = 0;
  std::vector<double> working;
  while (ok && now() - t0 < seconds) {
    ++round;
    const double roundStart = now();
    // One or two distinct random ranks, killed 10-100 ms into the round's AllReduces.
    std::vector<int> ranks(nranks);
    for (int r = 0; r < nranks; ++r) ranks[r] = r;
    std::shuffle(ranks.begin(), ranks.end(), rng);
    const int k = 1 + (int)(rng() % 2);
    std::sort(ranks.begin(), ranks.begin() + k);
    soak->nVictims = k;
    for (int i = 0; i < k; ++i) soak->victims[i] = ranks[i];
    const std::vector<int> slotOf = parent.byRank();
    soak->go.store(round);
    fault::sleepSeconds(0.01 + (rng() % 90) / 1000.0);
    soak->killedAt = now();
    std::string killed;
    for (int i = 0; i < k; ++i) {
      const int s = slotOf[ranks[i]];
      kill(parent.pids[s], SIGKILL);
      waitpid(parent.pids[s], nullptr, 0);
      killed += (i ? "," : "") + std::to_string(ranks[i]);
      parent.pids[s] = 0;
    }
    kills += k;
    // The survivors publish the grow id; the replacements take the ranks above theirs.
    while (soak->idRound.load() < round && now() - roundStart < kRoundLimit) usleep(500);
    if (soak->idRound.load() < round) {
      ok = parent.waitRound(round, 0);  // names a failed rank, or the hang
      break;
    }
    for (int i = 0, s = 0; i < k; ++i, ++s) {
      while (parent.pids[s]) ++s;
      parent.start(s, nranks - k + i, id, round);
    }
    ok = parent.waitRound(round, roundStart + kRoundLimit);
    if (!ok) break;
    double worst = 0;
    for (int s = 0; s < kSlots; ++s)
      if (parent.pids[s] && soak->slots[s].round.load() == round &&
          soak->slots[s].rank < nranks - k) {
        working.push_back(soak->slots[s].workingAfter);
        worst = std::max(worst, soak->slots[s].workingAfter);
      }
    printf("round %d: killed rank(s) %s mid-AllReduce; survivors exact after %.3f s (slowest); "
           "grown back to %d, exact; round %.2f s; no fd or thread leaked\n", round,
           killed.c_str(), worst, nranks, now() - roundStart);
    fflush(stdout);
  }
  if (ok) {
    soak->stop.store(1);
    soak->go.store(round + 1);
    const double until = now() + kRoundLimit;
    for (pid_t& pid : parent.pids) {
      if (!pid) continue;
      int st = 0;
      while (waitpid(pid, &st, WNOHANG) != pid && now() < until) usleep(1000);
      if (now() >= until || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("FAIL at the end: pid %d did not exit cleanly\n", pid);
        ok = false;
      }
      pid = 0;
    }
  }
  parent.killAll();
  const std::string left = fault::shmLeftSince(shmBefore);
  if (!left.empty()) {
    printf("FAIL: left behind in /dev/shm: %s\n", left.c_str());
    ok = false;
  }
  if (!fault::Job::noChildrenLeft()) {
    printf("FAIL: a child process was left\n");
    ok = false;
  }
  std::sort(working.begin(), working.end());
  if (!working.empty())
    printf("kill -9 to a working shrunk communicator, %zu survivors: min %.3f s, median %.3f s, "
           "p90 %.3f s, max %.3f s\n", working.size(), working.front(),
           working[working.size() / 2], working[working.size() * 9 / 10], working.back());
  printf("soak %s: %d rounds, %d ranks killed and replaced, %.0f s\n", ok ? "passed" : "FAILED",
         round, kills, now() - t0);
  return ok ? 0 : 1;
}
