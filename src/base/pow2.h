// Powers of two for sizes derived from the machine (ring, slots, chunk, thresholds, buffers).
#pragma once

#include <algorithm>
#include <cstdint>

namespace mixccl {

// The largest power of two <= x (1 for x <= 1).
inline uint64_t floorPow2(uint64_t x) {
  uint64_t p = 1;
  while (p <= x / 2) p <<= 1;
  return p;
}

// The smallest power of two >= x, at most 2^40.
inline uint64_t ceilPow2(uint64_t x) {
  uint64_t p = 1;
  while (p < x && p < ((uint64_t)1 << 40)) p <<= 1;
  return p;
}

// floorPow2(x) kept within [lo, hi].
inline uint64_t floorPow2Within(uint64_t x, uint64_t lo, uint64_t hi) {
  return std::min(std::max(floorPow2(x), lo), hi);
}

}  // namespace mixccl
