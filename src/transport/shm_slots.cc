#include "transport/shm_slots.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/log.h"
#include "transport/control_exchange.h"

namespace mixccl {

size_t shmSlotStride(size_t slotBytes) { return (sizeof(SlotHeader) + slotBytes + 63) & ~size_t(63); }

size_t shmSlotsSegmentBytes(size_t slotBytes) {
  return kShmSlotsHeaderBytes + 2 * shmSlotStride(slotBytes);
}

std::string shmSlotsSegmentName(uint64_t commHash, int rank) {
  char name[64];
  snprintf(name, sizeof(name), "/mixccl-%016" PRIx64 "-slots-%d", commHash, rank);
  return name;
}

namespace {

constexpr uint32_t kSlotsHelloMagic = 0x4f4c5353;  // "SSLO"

struct SlotsHello {
  uint32_t magic;
  uint32_t want;       // 1: this rank wants slots (and all its pairs are on shared memory)
  uint64_t slotBytes;
  uint64_t commHash;
};
struct SlotsStatus {
  uint32_t magic;
  uint32_t ok;
};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

long futexCall(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, ts, nullptr, 0);
}

// This process's pid namespace (the inode of /proc/self/ns/pid), 0 if unknown.
uint64_t pidNamespaceId() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

// A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat); false when
// the process is gone or a zombie (killed, not yet reaped by its parent).
bool processStartTime(pid_t pid, uint64_t* start) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  // The command name (field 2) may hold spaces and parentheses: the fields after it follow the
  // last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(line.substr(close + 1));
  std::string state, skip;
  fields >> state;  // field 3
  if (state == "Z" || state == "X" || state == "x") return false;
  for (int f = 4; f < 22; ++f) fields >> skip;
  return static_cast<bool>(fields >> *start);
}

// Every rank answers ok or not after a step; one failure anywhere fails the setup everywhere.
Result agreeOnStep(const std::vector<int>& peers, const std::vector<std::vector<Socket>>& conns,
                   const std::vector<std::string>& names, const Deadline& deadline, Result mine,
                   int rank, const char* step) {
  std::vector<SlotsStatus> out(peers.size(), SlotsStatus{kSlotsHelloMagic, mine == mixcclSuccess ? 1u : 0u});
  std::vector<SlotsStatus> in;
  MIXCCL_CHECK(exchangeWithPeers(peers, conns, out, &in, deadline, names));
  if (mine != mixcclSuccess) return mine;
  for (size_t i = 0; i < peers.size(); ++i)
    if (in[i].magic != kSlotsHelloMagic || in[i].ok != 1)
      return raiseError(mixcclRemoteError,
                        "rank %d: %s could not %s its shared-memory slots (see its log); "
                        "MIXCCL_SHM_SLOT_BYTES=0 turns the slots off", rank, names[i].c_str(), step);
  return mixcclSuccess;
}

}  // namespace

Result ShmSlots::createMine() {
  const std::string name = shmSlotsSegmentName(p_.commHash, p_.rank);
  MIXCCL_CHECK(ShmSegment::create(name, shmSlotsSegmentBytes(p_.slotBytes), &segs_[p_.rank]));
  ShmSlotsHeader* h = headerOfSegment(p_.rank);
  h->version = kShmSlotsVersion;
  h->slotBytes = p_.slotBytes;
  h->commHash = p_.commHash;
  h->ownerRank = p_.rank;
  h->ownerPid = (int32_t)getpid();
  uint64_t started = 0;
  h->ownerPidNamespace = processStartTime(getpid(), &started) ? pidNamespace_ : 0;
  h->ownerStartTime = started;
  h->wakeWord.store(0, std::memory_order_relaxed);
  h->sleepers.store(0, std::memory_order_relaxed);
  h->closed.store(0, std::memory_order_relaxed);
  for (uint64_t s = 0; s < 2; ++s) slot(p_.rank, s)->seq.store(0, std::memory_order_relaxed);
  h->magic.store(kShmSlotsMagic, std::memory_order_release);
  return mixcclSuccess;
}

Result ShmSlots::openPeer(int r) {
  const std::string name = shmSlotsSegmentName(p_.commHash, r);
  MIXCCL_CHECK(ShmSegment::open(name, shmSlotsSegmentBytes(p_.slotBytes), &segs_[r]));
  const ShmSlotsHeader* h = headerOfSegment(r);
  if (h->magic.load(std::memory_order_acquire) != kShmSlotsMagic || h->version != kShmSlotsVersion ||
      h->slotBytes != p_.slotBytes || h->commHash != p_.commHash || h->ownerRank != r)
    return raiseError(mixcclRemoteError, "rank %d: the shared-memory slots of rank %d are invalid",
                      p_.rank, r);
  return mixcclSuccess;
}

Result ShmSlots::setup(const ShmSlotsParams& p, const std::vector<std::vector<Socket>>& conns,
                       const std::vector<std::string>& peerNames, const Deadline& deadline,
                       std::unique_ptr<ShmSlots>* out, std::string* why) {
  out->reset();
  std::vector<int> peers;
  std::vector<std::string> names;
  for (int r = 0; r < p.nranks; ++r) {
    if (r == p.rank) continue;
    if ((size_t)r >= conns.size() || conns[r].empty())
      return raiseError(mixcclInternalError, "rank %d: no control connection to rank %d for the "
                        "shared-memory slots", p.rank, r);
    peers.push_back(r);
    names.push_back(peerNames[r]);
  }
  // 1. Every rank must want them, with the same size (MIXCCL_SHM_SLOT_BYTES may differ).
  std::vector<SlotsHello> helloOut(peers.size(),
                                   SlotsHello{kSlotsHelloMagic, p.slotBytes ? 1u : 0u, p.slotBytes, p.commHash});
  std::vector<SlotsHello> helloIn;
  MIXCCL_CHECK(exchangeWithPeers(peers, conns, helloOut, &helloIn, deadline, names));
  *why = p.slotBytes ? "" : "MIXCCL_SHM_SLOT_BYTES=0 here";
  for (size_t i = 0; i < peers.size(); ++i) {
    const SlotsHello& h = helloIn[i];
    if (h.magic != kSlotsHelloMagic || h.commHash != p.commHash || h.want > 1)
      return raiseError(mixcclRemoteError, "rank %d: %s sent an invalid shared-memory slots hello",
                        p.rank, names[i].c_str());
    if (!why->empty()) continue;
    if (!h.want) *why = names[i] + " does not use them (MIXCCL_SHM_SLOT_BYTES=0 there)";
    else if (h.slotBytes != p.slotBytes)
      *why = names[i] + " asks for " + std::to_string(h.slotBytes) + "-byte slots, this rank for " +
             std::to_string(p.slotBytes);
  }
  if (!why->empty()) return mixcclSuccess;

  // 2. Each rank creates its own segment, 3. maps everyone else's; 4. no name stays.
  std::unique_ptr<ShmSlots> s;
  Result r = agreeOnStep(peers, conns, names, deadline, create(p, peerNames, &s), p.rank, "create");
  if (r == mixcclSuccess) r = agreeOnStep(peers, conns, names, deadline, s->mapPeers(), p.rank, "map");
  unlinkAll(p.commHash, p.nranks);
  if (r != mixcclSuccess) return r;
  *out = std::move(s);
  *why = std::to_string(p.slotBytes) + "-byte slots";
  return mixcclSuccess;
}

Result ShmSlots::create(const ShmSlotsParams& p, const std::vector<std::string>& peerNames,
                        std::unique_ptr<ShmSlots>* out) {
  std::unique_ptr<ShmSlots> s(new ShmSlots(p));
  s->names_ = peerNames;
  s->pidNamespace_ = pidNamespaceId();
  MIXCCL_CHECK(s->createMine());
  *out = std::move(s);
  return mixcclSuccess;
}

Result ShmSlots::mapPeers() {
  for (int q = 0; q < p_.nranks; ++q)
    if (q != p_.rank) MIXCCL_CHECK(openPeer(q));
  return mixcclSuccess;
}

void ShmSlots::unlinkAll(uint64_t commHash, int nranks) {
  for (int q = 0; q < nranks; ++q) ShmSegment::unlink(shmSlotsSegmentName(commHash, q));
}

ShmSlots::~ShmSlots() {
  if (!segs_[p_.rank].base()) return;
  // A reader still waiting for us learns that we left instead of waiting for its deadline.
  ShmSlotsHeader* h = headerOfSegment(p_.rank);
  h->closed.store(1, std::memory_order_seq_cst);
  h->wakeWord.fetch_add(1, std::memory_order_seq_cst);
  if (h->sleepers.load(std::memory_order_seq_cst) != 0) futexCall(&h->wakeWord, FUTEX_WAKE, INT_MAX, nullptr);
}

uint64_t ShmSlots::publish(const SlotStamp& stamp, const void* data, size_t bytes) {
  const uint64_t seq = next_++;
  SlotHeader* s = slot(p_.rank, seq);
  s->bytes = (uint32_t)bytes;
  s->stamp = stamp;
  if (bytes) memcpy(reinterpret_cast<char*>(s) + sizeof(SlotHeader), data, bytes);
  s->seq.store(seq, std::memory_order_seq_cst);
  // seq_cst on both sides (sleepOn counts itself in sleepers, then looks at seq): either the
  // sleeper sees this seq and stays awake, or this load sees the sleeper and wakes it.
  ShmSlotsHeader* h = headerOfSegment(p_.rank);
  if (h->sleepers.load(std::memory_order_seq_cst) != 0) {
    h->wakeWord.fetch_add(1, std::memory_order_seq_cst);
    futexCall(&h->wakeWord, FUTEX_WAKE, INT_MAX, nullptr);
  }
  return seq;
}

void ShmSlots::sleepOn(int rank, uint64_t seq, int maxMs) {
  ShmSlotsHeader* h = headerOfSegment(rank);
  const uint32_t seen = h->wakeWord.load(std::memory_order_seq_cst);
  h->sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (!arrived(rank, seq) && !h->closed.load(std::memory_order_seq_cst)) {
    timespec ts{maxMs / 1000, (long)(maxMs % 1000) * 1000000L};
    futexCall(&h->wakeWord, FUTEX_WAIT, seen, &ts);  // returns at once if wakeWord moved on
  }
  h->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

Result ShmSlots::waitForAll(uint64_t seq, double timeoutS, Health& health, const char* what) {
  // Polling first without giving the CPU away (a peer on its own core answers in well under a
  // microsecond), then yielding it at every poll (a late peer may need exactly this CPU), past
  // the spin time sleeping until the peer publishes. The clock starts at the first check.
  bool timing = false, yielding = p_.yieldWhileSpinning;
  Clock::time_point yieldFrom, sleepFrom;
  Deadline deadline = Deadline::afterSeconds(0);
  for (int r = 0; r < p_.nranks; ++r) {
    if (r == p_.rank) continue;
    unsigned polls = 0;
    while (!arrived(r, seq)) {
      if ((++polls & 63) == 0) {
        if (!timing) {
          timing = true;
          const auto start = Clock::now();
          yieldFrom = start + std::chrono::microseconds(kPureSpinUs);
          sleepFrom = start + std::chrono::microseconds(p_.spinUs);
          deadline = Deadline::afterSeconds(timeoutS);
        }
        MIXCCL_CHECK(checkWhileWaiting(r, seq, deadline, health, what));
        const auto now = Clock::now();
        yielding = yielding || now >= yieldFrom;
        if (now >= sleepFrom) sleepOn(r, seq, std::max(1, deadline.remainingMs(100)));
        continue;
      }
      if (yielding) sched_yield();
      else cpuRelax();
    }
  }
  return mixcclSuccess;
}

// Between polls: the communicator's health (a dead peer, an abort), a peer that left, the
// deadline.
Result ShmSlots::checkWhileWaiting(int r, uint64_t seq, const Deadline& deadline, Health& health,
                                   const char* what) {
  std::string msg;
  Result failed = health.error(&msg);
  if (failed != mixcclSuccess) return adoptError(failed, msg);
  const std::string me = "rank " + std::to_string(p_.rank) + ": " + what + " on shared-memory slots: ";
  if (headerOfSegment(r)->closed.load(std::memory_order_acquire) && !arrived(r, seq)) {
    msg = me + names_[r] + " has left the communicator (destroyed it) while this rank waited "
          "for it";
    health.fail(mixcclRemoteError, msg, r);
    return adoptError(mixcclRemoteError, msg);
  }
  if (ownerDied(r) && !arrived(r, seq)) {
    msg = me + names_[r] + " died (its process has ended) while this rank waited for it";
    health.fail(mixcclRemoteError, msg, r);
    return adoptError(mixcclRemoteError, msg);
  }
  if (!deadline.expired()) return mixcclSuccess;
  std::string missing;
  for (int q = 0; q < p_.nranks; ++q)
    if (q != p_.rank && !arrived(q, seq)) missing += (missing.empty() ? "" : ", ") + names_[q];
  msg = me + missing + " did not join within the timeout (MIXCCL_TIMEOUT_S)";
  health.fail(mixcclTimeout, msg, r);
  return adoptError(mixcclTimeout, msg);
}

// A peer that died is reported by the peers connected to it (failure notices reach health
// through them), but a communicator connected on first use may have no connection to it at
// all: on one host its process can be looked at directly, every kLivenessCheckMs at most.
// Only when both share a pid namespace (else the pid means another process or none).
bool ShmSlots::ownerDied(int r) const {
  const ShmSlotsHeader* h = headerOfSegment(r);
  if (pidNamespace_ == 0 || h->ownerPidNamespace != pidNamespace_) return false;
  const auto now = Clock::now();
  if (now < nextLivenessCheck_) return false;
  nextLivenessCheck_ = now + std::chrono::milliseconds(kLivenessCheckMs);
  uint64_t started = 0;
  return !processStartTime(h->ownerPid, &started) || started != h->ownerStartTime;
}

}  // namespace mixccl
