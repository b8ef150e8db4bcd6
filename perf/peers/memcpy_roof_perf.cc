// The memory-copy roof for perf/compare: what moving a shared-memory collective's minimum bytes
// through the caches and memory of this machine costs, with nothing else done with them.
//
//   mixcclrun -np 2 memcpy_roof_perf -C allreduce -S /tmp/store-dir -b 1M -e 64M -f 2
//
// Every rank holds the collective's own buffers (send and receive, sizes as the *_perf tools
// allocate them) and copies B bytes from the send buffer into the receive buffer per
// "collective", cycling over both buffers when B is larger than one of them, where B is the
// bytes nccl-tests' busbw counts per rank: 2(n-1)/n * S for AllReduce of S bytes and (n-1)/n * S
// for AllGather and ReduceScatter (S the larger buffer). All ranks copy at once, so they share
// the caches and memory bandwidth as the collective's ranks do; busbw = B / time. Each size is
// timed with two copies, glibc's memcpy and a copy with non-temporal (streaming) stores, which
// wins when the buffers are larger than the caches; the faster one is reported, and a comment
// line before the row gives both.
//
// Why no shared-memory collective reports more busbw (docs/performance.md, "The memory-copy
// roof"): without reading another process's memory, a rank of an AllReduce must read its whole
// input (S) and the other ranks' part of its result from shared memory (>= S), and write its
// whole output (S) and its contribution for the others (>= (n-1)/n * S): >= 2S read and
// >= (2n-1)/n * S written, against B <= 2S read and B = 2(n-1)/n * S written here, within a
// footprint (the two buffers) the collective touches too. AllGather and ReduceScatter likewise.
//
// Ranks come from mixccl_launch's detection (mixcclrun, mpirun, srun, torchrun), so the ranks
// are placed as the collective's ranks are. The ranks meet in a page mapped from a file in the
// fresh directory -S: a barrier before and after each timed loop, and the sum of their times
// (the reported time is the average over ranks, as the *_perf tools' default -a 1).
// -c 1 checks the last copy of each size: every byte of the receive buffer must hold the send
// byte the last lap of the cycle put there.
#include <fcntl.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "mixccl_launch.h"
#include "peer_table.h"

namespace {

constexpr int kMaxRanks = 256;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void die(int rank, const char* what) {
  std::fprintf(stderr, "memcpy_roof_perf: rank %d: %s: %s\n", rank, what, std::strerror(errno));
  std::exit(1);
}

uint8_t patternByte(size_t i) { return static_cast<uint8_t>(i % 251 + 1); }

// The ranks' meeting page: a sense-reversing barrier and one value slot per rank.
struct Page {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
  double values[kMaxRanks];
};
static_assert(sizeof(Page) <= 4096, "the meeting page is one page");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "atomics across processes");

class Group {
 public:
  Group(int rank, int nranks, const std::string& dir) : rank_(rank), nranks_(nranks) {
    const std::string path = dir + "/memcpy-roof.page";
    int fd = -1;
    if (rank == 0) {
      // Another run's page would hand the other ranks a barrier in the wrong state.
      if (access(path.c_str(), F_OK) == 0) {
        errno = EEXIST;
        die(rank, ("-S must be a fresh directory, but it holds " + path).c_str());
      }
      const std::string tmp = path + ".tmp";
      fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
      if (fd < 0 || ftruncate(fd, 4096) != 0) die(rank, ("create " + tmp).c_str());
      map(fd);  // a fresh file reads as zeros: the barrier starts at generation 0
      if (std::rename(tmp.c_str(), path.c_str()) != 0) die(rank, "publish the page in -S DIR");
    } else {
      for (double end = now() + 60; fd < 0; std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
        fd = open(path.c_str(), O_RDWR);
        if (fd < 0 && now() > end) die(rank, ("waiting for " + path).c_str());
      }
      map(fd);
    }
    close(fd);
  }
  ~Group() { munmap(page_, 4096); }

  void barrier() {
    const uint32_t gen = page_->generation.load(std::memory_order_acquire);
    if (page_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == (uint32_t)nranks_) {
      page_->arrived.store(0, std::memory_order_relaxed);
      page_->generation.store(gen + 1, std::memory_order_release);
      return;
    }
    while (page_->generation.load(std::memory_order_acquire) == gen) sched_yield();
  }

  // Sum of v over the ranks, known to every rank.
  double sum(double v) {
    page_->values[rank_] = v;
    barrier();
    double s = 0;
    for (int r = 0; r < nranks_; ++r) s += page_->values[r];
    barrier();  // nobody overwrites a slot before everyone has read it
    return s;
  }

 private:
  void map(int fd) {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) die(rank_, "mmap the meeting page");
    page_ = static_cast<Page*>(p);
  }
  int rank_, nranks_;
  Page* page_ = nullptr;
};

// The bytes busbw counts per rank for a collective of these buffers (float32 elements).
size_t bytesPerRank(peer_coll c, size_t param, int n) {
  size_t whole = (c == PEER_ALLREDUCE ? param : param * static_cast<size_t>(n)) * sizeof(float);
  size_t factor = c == PEER_ALLREDUCE ? 2 : 1;
  return factor * whole / static_cast<size_t>(n) * static_cast<size_t>(n - 1);
}

enum Method { kMemcpy = 0, kStream = 1 };
const char* const kMethodNames[] = {"memcpy", "non-temporal"};

// memcpy with non-temporal stores: the destination bypasses the caches (no read for
// ownership). Unaligned head and tail go through memcpy. Without SSE2, memcpy.
void streamCopy(uint8_t* dst, const uint8_t* src, size_t len) {
#if defined(__x86_64__)
  size_t head = std::min(len, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= len; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  std::memcpy(dst + i, src + i, len - i);
#else
  std::memcpy(dst, src, len);
#endif
}

// Copies `bytes` from src into dst, cycling over srcBytes and dstBytes.
void cycleCopy(Method m, const uint8_t* src, size_t srcBytes, uint8_t* dst, size_t dstBytes,
               size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    size_t s = done % srcBytes, d = done % dstBytes;
    size_t len = std::min({bytes - done, srcBytes - s, dstBytes - d});
    if (m == kStream) {
      streamCopy(dst + d, src + s, len);
    } else {
      std::memcpy(dst + d, src + s, len);
    }
    done += len;
  }
#if defined(__x86_64__)
  if (m == kStream) _mm_sfence();  // the streamed bytes are visible before the copy counts as done
#endif
}

uint8_t* pageAlloc(int rank, size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, std::max<size_t>(bytes, 1)) != 0) die(rank, "allocate buffers");
  std::memset(p, 0, std::max<size_t>(bytes, 1));  // fault the pages in before timing
  return static_cast<uint8_t*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  peer_args a;
  if (peer_parse_args(argc, argv, &a, " -S store_dir") != 0) return 2;
  if (a.coll == PEER_SENDRECV) {
    std::fprintf(stderr, "memcpy_roof_perf: -C allreduce|allgather|reducescatter only\n");
    return 2;
  }
  const char* storeDir = a.store ? a.store : std::getenv("GLOO_STORE_DIR");
  if (storeDir == nullptr) {
    std::fprintf(stderr, "memcpy_roof_perf: give the rendezvous directory with -S DIR\n");
    return 2;
  }
  mixcclLaunchInfo info;
  if (mixcclLaunchDetect(&info) != 0) {
    std::fprintf(stderr, "memcpy_roof_perf: %s\n", mixcclLaunchLastError());
    return 2;
  }
  const int n = info.nranks, rank = info.rank;
  if (n < 2 || n > kMaxRanks) {
    std::fprintf(stderr, "memcpy_roof_perf: needs 2 to %d ranks\n", kMaxRanks);
    return 2;
  }
  Group group(rank, n, storeDir);

  size_t maxSend = 0, maxRecv = 0;
  int done = 0;
  for (size_t s = a.min_bytes; !done; s = peer_next_size(&a, s, &done)) {
    size_t p, ns, nr;
    peer_counts(a.coll, s, n, &p, &ns, &nr);
    maxSend = std::max(maxSend, ns * sizeof(float));
    maxRecv = std::max(maxRecv, nr * sizeof(float));
  }
  uint8_t* src = pageAlloc(rank, maxSend);
  uint8_t* dst = pageAlloc(rank, maxRecv);
  for (size_t i = 0; i < maxSend; ++i) src[i] = patternByte(i);
  if (rank == 0) {
    char banner[256];
    std::snprintf(banner, sizeof(banner),
                  "memcpy-roof-perf %s: every rank copies the bytes busbw counts per rank from "
                  "its send buffer into its receive buffer, all ranks at once; the faster of "
                  "memcpy and non-temporal stores",
                  peer_coll_name(a.coll));
    peer_print_header(banner, &a, n);
  }
  int errors = 0;
  double bwSum = 0;
  int bwCount = 0;
  done = 0;
  for (size_t s = a.min_bytes; !done; s = peer_next_size(&a, s, &done)) {
    size_t param, ns, nr;
    peer_counts(a.coll, s, n, &param, &ns, &nr);
    const size_t bytes = bytesPerRank(a.coll, param, n);
    const size_t srcBytes = ns * sizeof(float), dstBytes = nr * sizeof(float);
    double us[2], alg[2], bus[2];
    double byMethod[2][2] = {{0, 0}, {0, 0}};  // [run][method] busbw
    int64_t wrong[2] = {0, 0};
    for (int run = 0; run < 2; ++run) {
      if (bytes == 0) {  // count 0: nothing to move
        us[run] = alg[run] = bus[run] = 0;
        continue;
      }
      double best = 0;
      for (Method m : {kMemcpy, kStream}) {
        for (int w = 0; w < a.warmup; ++w) cycleCopy(m, src, srcBytes, dst, dstBytes, bytes);
        group.barrier();
        double t0 = now();
        for (int it = 0; it < a.iters; ++it) cycleCopy(m, src, srcBytes, dst, dstBytes, bytes);
        double sec = group.sum((now() - t0) / a.iters) / n;
        double al, bu;
        peer_bw(a.coll, param, n, sec, &al, &bu);
        byMethod[run][m] = bu;
        if (m == kMemcpy || sec < best) {
          best = sec;
          us[run] = sec * 1e6;
          alg[run] = al;
          bus[run] = bu;
        }
        if (a.check) {
          std::memset(dst, 0, dstBytes);  // pattern bytes are never 0
          cycleCopy(m, src, srcBytes, dst, dstBytes, bytes);
          long long bad = 0;
          for (size_t i = 0; i < std::min(bytes, dstBytes); ++i) {
            // The last lap that wrote dst[i] carried stream offset o with o % dstBytes == i.
            size_t o = i + (bytes - 1 - i) / dstBytes * dstBytes;
            bad += dst[i] != patternByte(o % srcBytes);
          }
          wrong[run] += static_cast<int64_t>(group.sum(static_cast<double>(bad)));
        }
      }
      if (wrong[run]) ++errors;
      bwSum += bus[run];
      ++bwCount;
    }
    if (rank == 0) {
      std::printf("# %zu bytes, busbw GB/s out-of-place / in-place: %s %.2f / %.2f, %s %.2f / "
                  "%.2f\n", std::max(ns, nr) * sizeof(float), kMethodNames[kMemcpy],
                  byMethod[0][kMemcpy], byMethod[1][kMemcpy], kMethodNames[kStream],
                  byMethod[0][kStream], byMethod[1][kStream]);
      peer_print_row(a.coll, param, ns, nr, us, alg, bus, wrong);
    }
  }
  if (rank == 0) peer_print_footer(errors, bwCount ? bwSum / bwCount : 0);
  group.barrier();
  std::free(src);
  std::free(dst);
  return errors ? 1 : 0;
}
