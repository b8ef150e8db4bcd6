// The memory-copy roof for perf/compare: what moving a shared-memory AllReduce's minimum bytes
// through the caches and memory of this machine costs, with nothing else done with them.
//
//   mixcclrun -np 2 memcpy_roof_perf -C allreduce -S FRESH_DIR -b 1M -e 64M -f 2 [-s 65536,262144]
//
// Every rank holds the collective's buffers (send and receive, S bytes each) and moves its S
// bytes from the send buffer into the receive buffer through a small private staging buffer,
// piece by piece (send -> stage -> receive: two copies of S, the staging buffer staying in
// cache), all ranks at once, so that they share the caches and the memory bandwidth as the
// collective's ranks do. busbw is computed as for the AllReduce of S bytes (2(n-1)/n * S / time).
// Each size is timed with every staging size of -s and two ways to write the receive buffer,
// glibc's memcpy and non-temporal (streaming) stores, which win once the buffers leave the
// caches; the fastest counts, and a comment line above each row gives them all.
//
// Why no shared-memory AllReduce reports more busbw (docs/performance.md, "The memory-copy
// roof"): where ranks exchange bytes only through shared memory (no reading of another
// process's buffers), every element of every rank's input influences every rank's result, so
// each rank must read its whole input (S), write something about every element into shared
// memory (>= S), read something about every element from shared memory (>= S) and write its
// whole output (S): >= 2S read and >= 2S written per rank. The roof reads and writes exactly
// that, with its input and output in the collective's own buffers and its "shared" bytes in a
// private buffer that stays in the nearest cache and is never handed to another core.
//
// Ranks come from mixccl_launch's detection (mixcclrun, mpirun, srun, torchrun), so the ranks
// are placed as the collective's ranks are. The ranks meet in a page mapped from a file in the
// fresh directory -S: a barrier before each timed loop, and the sum of their times (the
// reported time is the average over ranks, as the *_perf tools' default -a 1).
// -c 1 checks one more pass of every variant: the receive buffer must equal the send buffer.
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
#include <vector>

#include "peer_launch.h"
#include "peer_table.h"
#include "roof_sweep.h"

namespace {

constexpr int kMaxRanks = 256;
// Staging sizes tried (the fastest counts): a small one and one like mixccl's 256 KiB chunks.
const char* const kDefaultStages = "65536,262144";

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
      for (double end = roofNow() + 60; fd < 0;
           std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
        fd = open(path.c_str(), O_RDWR);
        if (fd < 0 && roofNow() > end) die(rank, ("waiting for " + path).c_str());
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

// Moves the S bytes of src into dst through the staging buffer (stageBytes), piece by piece:
// in -> stage with memcpy, stage -> out with memcpy or non-temporal stores.
void stagedCopy(Method m, const uint8_t* src, uint8_t* dst, size_t bytes, uint8_t* stage,
                size_t stageBytes) {
  for (size_t off = 0; off < bytes; off += stageBytes) {
    size_t len = std::min(stageBytes, bytes - off);
    std::memcpy(stage, src + off, len);
    if (m == kStream) {
      streamCopy(dst + off, stage, len);
    } else {
      std::memcpy(dst + off, stage, len);
    }
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
  const char* stageList = kDefaultStages;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {  // -s is ours; the rest are the peers' common flags
    if (std::strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
      stageList = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  std::vector<size_t> stages;
  for (const char* p = stageList; *p;) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(p, &end, 10);
    if (end == p || v == 0 || (*end != ',' && *end != '\0')) {
      std::fprintf(stderr, "memcpy_roof_perf: bad -s %s (comma-separated byte counts)\n",
                   stageList);
      return 2;
    }
    stages.push_back(static_cast<size_t>(v));
    p = *end ? end + 1 : end;
  }
  if (stages.empty()) {
    std::fprintf(stderr, "memcpy_roof_perf: -s names no staging size\n");
    return 2;
  }
  const size_t maxStage = *std::max_element(stages.begin(), stages.end());
  peer_args a;
  if (peer_parse_args(static_cast<int>(rest.size()), rest.data(), &a,
                      " -S store_dir [-s staging_bytes,...]") != 0) {
    return 2;
  }
  if (a.coll != PEER_ALLREDUCE) {
    std::fprintf(stderr, "memcpy_roof_perf: -C allreduce only\n");
    return 2;
  }
  const char* storeDir = nullptr;
  mixcclLaunchInfo info;
  if (peer_launch("memcpy_roof_perf", a, &storeDir, &info) != 0) return 2;
  const int n = info.nranks, rank = info.rank;
  if (n < 2 || n > kMaxRanks) {
    std::fprintf(stderr, "memcpy_roof_perf: needs 2 to %d ranks\n", kMaxRanks);
    return 2;
  }
  Group group(rank, n, storeDir);

  const size_t maxBytes = peer_max_elems(&a, n) * sizeof(float);
  uint8_t* src = pageAlloc(rank, maxBytes);
  uint8_t* dst = pageAlloc(rank, maxBytes);
  uint8_t* stage = pageAlloc(rank, maxStage);
  for (size_t i = 0; i < maxBytes; ++i) src[i] = patternByte(i);
  if (rank == 0) {
    char banner[256];
    std::snprintf(banner, sizeof(banner),
                  "memcpy-roof-perf allreduce: every rank moves its S bytes from its send buffer "
                  "through a staging buffer (%s bytes) into its receive buffer, all ranks at "
                  "once; the fastest of memcpy and non-temporal stores", stageList);
    peer_print_header(banner, &a, n);
  }
  // Variant v: staging size stages[v / 2], method v % 2 (count 0: nothing to move or time).
  int errors = roofSweep(a, n, rank, static_cast<int>(2 * stages.size()),
                         [&](const RoofSize& z, int v) {
    RoofRun r;
    const size_t bytes = z.param * sizeof(float);
    if (bytes == 0) return r;
    const Method m = static_cast<Method>(v % 2);
    const size_t stageBytes = stages[v / 2];
    r.seconds = roofTime(group, a, n, [&] { stagedCopy(m, src, dst, bytes, stage, stageBytes); });
    if (a.check) {
      std::memset(dst, 0, bytes);  // pattern bytes are never 0
      stagedCopy(m, src, dst, bytes, stage, stageBytes);
      long long bad = 0;
      for (size_t i = 0; i < bytes; ++i) bad += dst[i] != patternByte(i);
      r.wrong = static_cast<int64_t>(group.sum(static_cast<double>(bad)));
    }
    return r;
  }, [&](const RoofSize& z, const std::vector<double> (&variantBus)[2]) {
    const size_t bytes = z.param * sizeof(float);
    std::printf("# %zu bytes, busbw GB/s out-of-place / in-place:", bytes);
    for (size_t v = 0; bytes && v < variantBus[0].size(); ++v) {
      std::printf("%s stage %zu %s %.2f / %.2f", v ? "," : "", stages[v / 2],
                  kMethodNames[v % 2], variantBus[0][v], variantBus[1][v]);
    }
    std::printf("\n");
  });
  group.barrier();
  std::free(src);
  std::free(dst);
  std::free(stage);
  return errors ? 1 : 0;
}
