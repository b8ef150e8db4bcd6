#include "nccl_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace standin {
namespace {

// Futexes on the shared mapping (not FUTEX_PRIVATE: the waiters are other processes).
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}
void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, 0x7fffffff, nullptr, nullptr, 0);
}

// A waiter rechecks failure, abort and its deadline this often even without a wake-up.
constexpr int kPollMs = 20;

struct alignas(64) RankArea {
  std::atomic<uint32_t> joined;
  std::atomic<uint32_t> bell;
  int32_t pid;
  CallDesc desc[2];
};

struct alignas(64) ChannelHead {
  std::atomic<uint64_t> written;
  std::atomic<uint64_t> read;
};

}  // namespace

struct Segment::Layout {
  std::atomic<int32_t> nranks;
  std::atomic<uint32_t> attached;
  std::atomic<uint32_t> barrierCount;
  std::atomic<uint32_t> barrierGen;
  std::atomic<int32_t> failedBy;  // rank + 1 of the first rank that marked it failed
  char failReason[512];
  RankArea ranks[kMaxRanks];
};

namespace {

size_t channelStride() { return sizeof(ChannelHead) + kChannelBytes; }

}  // namespace

size_t Segment::layoutBytes() { return (sizeof(Layout) + 4095) / 4096 * 4096; }

ncclResult_t Segment::join(const std::string& name, int nranks, int rank, double timeoutS,
                           const std::atomic<bool>* aborted, Segment** out, std::string* why) {
  const size_t bytes = layoutBytes() + static_cast<size_t>(nranks) * 2 * kSlotHalfBytes +
                       static_cast<size_t>(nranks) * nranks * channelStride();
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    *why = "shm_open(" + name + "): " + std::strerror(errno);
    return ncclSystemError;
  }
  // Every rank grows the file to the size it needs before mapping it, so no rank maps a file
  // shorter than its view (a rank with another nranks is refused below, never shrinks it).
  struct stat st{};
  if (fstat(fd, &st) != 0 || (static_cast<size_t>(st.st_size) < bytes && ftruncate(fd, static_cast<off_t>(bytes)) != 0)) {
    *why = "sizing " + name + ": " + std::strerror(errno);
    close(fd);
    return ncclSystemError;
  }
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    *why = "mmap(" + name + "): " + std::strerror(errno);
    return ncclSystemError;
  }
  auto* s = new Segment;
  s->layout_ = static_cast<Layout*>(map);
  s->bytes_ = bytes;
  s->slots_ = static_cast<char*>(map) + layoutBytes();
  s->channels_ = s->slots_ + static_cast<size_t>(nranks) * 2 * kSlotHalfBytes;
  s->rank_ = rank;
  s->nranks_ = nranks;
  s->timeoutS_ = timeoutS;
  s->aborted_ = aborted;
  Layout* L = s->layout_;
  int32_t expected = 0;
  if (!L->nranks.compare_exchange_strong(expected, nranks) && expected != nranks) {
    *why = "rank " + std::to_string(rank) + " was given nranks " + std::to_string(nranks) +
           ", but the communicator was formed with nranks " + std::to_string(expected);
    delete s;
    return ncclInvalidArgument;
  }
  if (L->ranks[rank].joined.exchange(1) != 0) {
    *why = "rank " + std::to_string(rank) + " joined twice (two processes gave the same rank)";
    delete s;
    return ncclInvalidArgument;
  }
  L->ranks[rank].pid = static_cast<int32_t>(getpid());
  if (L->attached.fetch_add(1) + 1 == static_cast<uint32_t>(nranks)) shm_unlink(name.c_str());
  futexWakeAll(&L->attached);
  const double deadline = Segment::now() + timeoutS;
  for (;;) {
    uint32_t seen = L->attached.load();
    if (seen >= static_cast<uint32_t>(nranks)) break;
    if (ncclResult_t r = s->checkAlive(deadline, why)) {
      // Nobody else may be coming to unlink the name: a rank that comes later makes a new
      // segment, and times out alone too.
      shm_unlink(name.c_str());
      if (r == ncclSystemError)
        *why = "only " + std::to_string(seen) + " of " + std::to_string(nranks) +
               " ranks joined within " + std::to_string(static_cast<int>(timeoutS)) + " s";
      delete s;
      return r;
    }
    futexWait(&L->attached, seen, kPollMs);
  }
  *out = s;
  return ncclSuccess;
}

Segment::~Segment() {
  if (layout_) munmap(layout_, bytes_);
}

ncclResult_t Segment::checkAlive(double deadline, std::string* why) {
  if (int32_t by = layout_->failedBy.load(); by > 0) {
    *why = "rank " + std::to_string(by - 1) + " failed: " + layout_->failReason;
    return ncclRemoteError;
  }
  if (aborted_ && aborted_->load()) {
    *why = "the communicator was aborted (ncclCommAbort)";
    return ncclInvalidUsage;
  }
  if (Segment::now() > deadline) {
    *why = "rank " + std::to_string(rank_) + " timed out after " +
           std::to_string(static_cast<int>(timeoutS_)) + " s waiting for its peers";
    markFailed(*why);
    return ncclSystemError;
  }
  return ncclSuccess;
}

void Segment::markFailed(const std::string& why) {
  int32_t none = 0;
  if (layout_->failedBy.compare_exchange_strong(none, -1)) {  // -1: claimed, reason not written
    std::snprintf(layout_->failReason, sizeof layout_->failReason, "%s", why.c_str());
    layout_->failedBy.store(rank_ + 1);
  }
  futexWakeAll(&layout_->barrierGen);
  futexWakeAll(&layout_->attached);
  for (int r = 0; r < nranks_; ++r) ring(r);
}

ncclResult_t Segment::barrier(std::string* why) {
  Layout* L = layout_;
  const uint32_t gen = L->barrierGen.load(std::memory_order_acquire);
  ++round_;
  if (L->barrierCount.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(nranks_)) {
    L->barrierCount.store(0, std::memory_order_relaxed);
    L->barrierGen.fetch_add(1, std::memory_order_release);
    futexWakeAll(&L->barrierGen);
    return ncclSuccess;
  }
  const double deadline = Segment::now() + timeoutS_;
  while (L->barrierGen.load(std::memory_order_acquire) == gen) {
    if (ncclResult_t r = checkAlive(deadline, why)) return r;
    futexWait(&L->barrierGen, gen, kPollMs);
  }
  return ncclSuccess;
}

char* Segment::slot(int r, uint64_t round) {
  // Rounds alternate halves: a rank writes the next round's half only after the barrier that
  // every rank reaches once it has finished reading the current one.
  return slots_ + (static_cast<size_t>(r) * 2 + (round & 1)) * kSlotHalfBytes;
}

CallDesc& Segment::desc(int r, uint64_t seq) { return layout_->ranks[r].desc[seq & 1]; }

void Segment::ring(int r) {
  layout_->ranks[r].bell.fetch_add(1, std::memory_order_release);
  futexWakeAll(&layout_->ranks[r].bell);
}

uint32_t Segment::doorbell() { return layout_->ranks[rank_].bell.load(std::memory_order_acquire); }

double Segment::now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

ncclResult_t Segment::waitDoorbell(uint32_t seen, double deadline, std::string* why) {
  if (ncclResult_t r = checkAlive(deadline, why)) return r;
  futexWait(&layout_->ranks[rank_].bell, seen, kPollMs);
  return ncclSuccess;
}

void Segment::sendSome(Transfer* t, bool* moved) {
  auto* head = reinterpret_cast<ChannelHead*>(channels_ + (static_cast<size_t>(rank_) * nranks_ + t->peer) * channelStride());
  char* buffer = reinterpret_cast<char*>(head + 1);
  const uint64_t total = 8 + t->bytes;
  bool any = false;
  while (t->done < total) {
    const uint64_t w = head->written.load(std::memory_order_relaxed);
    const uint64_t space = kChannelBytes - (w - head->read.load(std::memory_order_acquire));
    if (space == 0) break;
    uint64_t n = std::min<uint64_t>({space, total - t->done, kChannelBytes - w % kChannelBytes});
    const char* src;
    if (t->done < 8) {
      n = std::min<uint64_t>(n, 8 - t->done);
      src = reinterpret_cast<const char*>(&t->bytes) + t->done;
    } else {
      src = t->data + (t->done - 8);
    }
    std::memcpy(buffer + w % kChannelBytes, src, n);
    head->written.store(w + n, std::memory_order_release);
    t->done += n;
    any = true;
  }
  if (any) ring(t->peer);
  *moved = *moved || any;
}

ncclResult_t Segment::recvSome(Transfer* t, bool* moved, std::string* why) {
  auto* head = reinterpret_cast<ChannelHead*>(channels_ + (static_cast<size_t>(t->peer) * nranks_ + rank_) * channelStride());
  const char* buffer = reinterpret_cast<const char*>(head + 1);
  const uint64_t total = 8 + t->bytes;
  bool any = false;
  ncclResult_t result = ncclSuccess;
  while (t->done < total) {
    const uint64_t r = head->read.load(std::memory_order_relaxed);
    const uint64_t avail = head->written.load(std::memory_order_acquire) - r;
    if (avail == 0) break;
    uint64_t n = std::min<uint64_t>({avail, total - t->done, kChannelBytes - r % kChannelBytes});
    char* dst;
    if (t->done < 8) {
      n = std::min<uint64_t>(n, 8 - t->done);
      dst = reinterpret_cast<char*>(&t->header) + t->done;
    } else {
      dst = t->data + (t->done - 8);
    }
    std::memcpy(dst, buffer + r % kChannelBytes, n);
    head->read.store(r + n, std::memory_order_release);
    t->done += n;
    any = true;
    if (t->done == 8 && t->header != t->bytes) {
      *why = "rank " + std::to_string(rank_) + ": a Recv of " + std::to_string(t->bytes) +
             " bytes from rank " + std::to_string(t->peer) + " met a Send of " +
             std::to_string(t->header) + " bytes";
      result = ncclInvalidUsage;
      break;
    }
  }
  if (any) ring(t->peer);
  *moved = *moved || any;
  return result;
}

}  // namespace standin
