#include "transport/shm_sizing.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/pow2.h"

namespace mixccl {

size_t shmRingBytesFor(uint64_t l2Bytes, int l2Cores, size_t chunkBytes, std::string* why) {
  char buf[160];
  if (l2Bytes == 0) {
    if (why) *why = "L2 cache size not reported; the fixed default";
    return kShmRingFallbackBytes;
  }
  const uint64_t perCore = l2Bytes / (uint64_t)std::max(l2Cores, 1);
  const size_t fromCache = floorPow2(perCore);
  const size_t floorBytes = ceilPow2((uint64_t)chunkBytes * 4);
  size_t ring = std::min(std::max(fromCache, floorBytes), kShmRingMaxDerivedBytes);
  if (why) {
    snprintf(buf, sizeof(buf), "L2 %llu KiB per core -> %zu KiB; at least 4 chunks (%zu KiB), "
             "at most %zu KiB", (unsigned long long)(perCore >> 10), fromCache >> 10,
             floorBytes >> 10, kShmRingMaxDerivedBytes >> 10);
    *why = buf;
  }
  return ring;
}

size_t shmFarRingBytesFor(size_t ringBytes, int nranks, int distance) {
  const uint64_t half = std::max<uint64_t>(floorPow2((uint64_t)std::max(nranks, 2)) / 2, 1);
  const uint64_t d = std::min<uint64_t>(floorPow2((uint64_t)std::max(distance, 1)), half);
  const uint64_t floorBytes = std::min(kShmFarRingMinBytes, ringBytes);
  return (size_t)std::max<uint64_t>((uint64_t)ringBytes * d / half, floorBytes);
}

size_t shmSlotBytesFor(uint64_t l2Bytes, int l2Cores, int nranks, std::string* why) {
  char buf[160];
  if (l2Bytes == 0) {
    if (why) *why = "L2 cache size not reported; the fixed default";
    return kShmSlotFallbackBytes;
  }
  const uint64_t perCore = l2Bytes / (uint64_t)std::max(l2Cores, 1);
  const uint64_t share = perCore / (4 * (uint64_t)std::max(nranks, 1));
  const size_t slot = floorPow2Within(share, kShmSlotMinBytes, kShmSlotMaxBytes);
  if (why) {
    snprintf(buf, sizeof(buf), "L2 %llu KiB per core / (4 x %d ranks) -> %zu KiB, within %zu-%zu KiB",
             (unsigned long long)(perCore >> 10), nranks, slot >> 10, kShmSlotMinBytes >> 10,
             kShmSlotMaxBytes >> 10);
    *why = buf;
  }
  return slot;
}

int onlineCpuCount() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

}  // namespace mixccl
