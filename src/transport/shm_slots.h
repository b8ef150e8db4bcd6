// Shared-memory slots for small collectives on one host: each rank owns one /dev/shm segment
// holding two slots (operations alternate between them), writes its part of a collective into
// its slot, and reads the other ranks' slots straight from their segments. The caller's thread
// does all of it: no proxy hand-off, no frames, no system call on the fast path, which is what
// an 8-byte AllReduce costs through the rings (docs/architecture.md "Shared-memory slots").
//
// Two slots suffice: a rank publishes operation k+2 into the slot of operation k only after
// finishing k+1, which needs every rank's k+1, which every rank publishes only after it has
// read everything of k. So a slot is never rewritten while someone may still read it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/health.h"
#include "base/result.h"
#include "bootstrap/socket.h"
#include "transport/shm_ring.h"

namespace mixccl {

constexpr uint32_t kShmSlotsMagic = 0x544c5353;  // "SSLT"
constexpr uint32_t kShmSlotsVersion = 2;
constexpr size_t kShmSlotsHeaderBytes = 4096;

// What a rank's slot says about the call it belongs to, so that readers can tell a peer that
// called something else (a different collective, count, type, op or root).
struct SlotStamp {
  int16_t kind = 0;
  int16_t type = 0;
  int32_t op = 0;
  int32_t root = -1;
  uint64_t count = 0;
  bool operator==(const SlotStamp& o) const {
    return kind == o.kind && type == o.type && op == o.op && root == o.root && count == o.count;
  }
};

// The head of each slot; the data follows it, so 8 bytes of data share the cache line of seq.
struct alignas(8) SlotHeader {
  std::atomic<uint64_t> seq;  // the operation the slot holds (0: none yet); stored last
  uint32_t bytes;             // data bytes that follow
  uint32_t reserved;
  SlotStamp stamp;
};
static_assert(sizeof(SlotHeader) == 40, "SlotHeader is part of the shared layout");

// The start of each segment.
struct ShmSlotsHeader {
  std::atomic<uint32_t> magic;  // written last by the creator (release)
  uint32_t version;
  uint64_t slotBytes;           // data bytes per slot
  uint64_t commHash;
  int32_t ownerRank;
  int32_t ownerPid;
  // Which process owns the segment, so that a reader on the same host can tell it died without
  // any connection to it: the pid namespace (its inode; 0: unknown) and the process's start
  // time (/proc/<pid>/stat), which a reused pid does not share.
  uint64_t ownerPidNamespace;
  uint64_t ownerStartTime;
  // Readers that stop spinning sleep on wakeWord (a futex, shared between processes); the owner
  // bumps it and wakes them after a publish when sleepers says anyone sleeps.
  alignas(64) std::atomic<uint32_t> wakeWord;
  std::atomic<uint32_t> sleepers;
  std::atomic<uint32_t> closed;  // 1: the owner destroyed the communicator (set last)
};
static_assert(sizeof(ShmSlotsHeader) <= kShmSlotsHeaderBytes, "header must fit its page");

// Bytes of one slot (header and data, whole cache lines) and of one rank's segment.
size_t shmSlotStride(size_t slotBytes);
size_t shmSlotsSegmentBytes(size_t slotBytes);
// /mixccl-<commHash>-slots-<rank>, the shm_open name of one rank's segment.
std::string shmSlotsSegmentName(uint64_t commHash, int rank);

struct ShmSlotsParams {
  int rank = 0;
  int nranks = 1;
  uint64_t commHash = 0;
  size_t slotBytes = 0;       // data bytes per slot; 0: this rank does not want slots
  int spinUs = 100;           // busy-poll this long before sleeping on the futex
  bool yieldWhileSpinning = false;  // more ranks than CPUs: give the CPU away at every poll
};

class ShmSlots {
 public:
  // Every rank of the communicator calls this with the control connections of the mesh (before
  // the proxy owns them). The slots exist only if every rank wants them (slotBytes > 0, the
  // same on all, every pair on one host with shared memory): otherwise *out stays null and
  // *why says which rank declined. Every name is unlinked before this returns.
  static Result setup(const ShmSlotsParams& p, const std::vector<std::vector<Socket>>& conns,
                      const std::vector<std::string>& peerNames, const Deadline& deadline,
                      std::unique_ptr<ShmSlots>* out, std::string* why);
  // setup's steps, for callers that agree over something other than the mesh's control
  // connections (core/comm_slots.h: init's collectives over the neighbours a communicator
  // connected on first use has). create makes this rank's segment (peerNames: "rank 2 (host
  // pid 123)" for every rank, for messages); mapPeers maps everyone else's once every rank
  // created its own; unlinkAll removes every rank's name, once every rank mapped or gave up.
  static Result create(const ShmSlotsParams& p, const std::vector<std::string>& peerNames,
                       std::unique_ptr<ShmSlots>* out);
  Result mapPeers();
  static void unlinkAll(uint64_t commHash, int nranks);

  ~ShmSlots();
  ShmSlots(const ShmSlots&) = delete;
  ShmSlots& operator=(const ShmSlots&) = delete;

  int rank() const { return p_.rank; }
  int nranks() const { return p_.nranks; }
  size_t slotBytes() const { return p_.slotBytes; }

  // Starts this rank's next operation: bytes of data (<= slotBytes) and the stamp go into its
  // slot and the peers are told. Returns the operation's number.
  uint64_t publish(const SlotStamp& stamp, const void* data, size_t bytes);
  // Waits until every other rank has published operation seq. A failure of the communicator
  // (health: a dead peer, an abort) ends the wait with that error; timeoutS seconds with
  // mixcclTimeout naming the ranks that never arrived (what: the call, for the message). No
  // clock is read while the peers are already there.
  Result waitForAll(uint64_t seq, double timeoutS, Health& health, const char* what);
  // What rank published for operation seq (valid after waitForAll, until the next publish).
  const SlotHeader& headerOf(int rank, uint64_t seq) const { return *slot(rank, seq); }
  const char* dataOf(int rank, uint64_t seq) const {
    return reinterpret_cast<const char*>(slot(rank, seq)) + sizeof(SlotHeader);
  }

 private:
  explicit ShmSlots(const ShmSlotsParams& p) : p_(p), segs_(p.nranks) {}
  Result createMine();
  Result openPeer(int r);
  SlotHeader* slot(int rank, uint64_t seq) const {
    char* base = static_cast<char*>(segs_[rank].base()) + kShmSlotsHeaderBytes;
    return reinterpret_cast<SlotHeader*>(base + (seq & 1) * shmSlotStride(p_.slotBytes));
  }
  ShmSlotsHeader* headerOfSegment(int rank) const {
    return static_cast<ShmSlotsHeader*>(segs_[rank].base());
  }
  bool arrived(int rank, uint64_t seq) const {
    return slot(rank, seq)->seq.load(std::memory_order_acquire) >= seq;
  }
  void sleepOn(int rank, uint64_t seq, int maxMs);
  Result checkWhileWaiting(int r, uint64_t seq, const Deadline& deadline, Health& health,
                           const char* what);
  bool ownerDied(int rank) const;
  static constexpr int kPureSpinUs = 5;
  // How often a waiter looks whether the owner of the slot it waits on still lives (a read of
  // /proc/<pid>/stat): the bound on learning of a death that no connection reports.
  static constexpr int kLivenessCheckMs = 10;

  ShmSlotsParams p_;
  std::vector<ShmSegment> segs_;  // [rank]: that rank's segment ([p_.rank]: ours)
  std::vector<std::string> names_;  // [rank]: "rank 2 (host pid 123)", for messages
  uint64_t next_ = 1;             // the number of the next operation
  uint64_t pidNamespace_ = 0;     // this process's (0: unknown: no liveness checks)
  mutable Clock::time_point nextLivenessCheck_{};
};

}  // namespace mixccl
