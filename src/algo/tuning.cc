#include "algo/tuning.h"

#include <algorithm>
#include <cstdio>

#include "base/env.h"
#include "base/pow2.h"

namespace mixccl {
namespace {

constexpr uint64_t KiB = 1 << 10, MiB = 1 << 20;

// A quarter of `cache`, rounded down to a power of two, within [lo, hi]; `fallback` when the
// cache is not reported. *why says how.
uint64_t quarterOf(uint64_t cache, const char* level, uint64_t lo, uint64_t hi, uint64_t fallback,
                   std::string* why) {
  char buf[160];
  if (cache == 0) {
    snprintf(buf, sizeof(buf), "%s not reported: %llu KiB", level,
             (unsigned long long)(fallback / KiB));
    *why = buf;
    return fallback;
  }
  const uint64_t v = floorPow2Within(cache / 4, lo, hi);
  snprintf(buf, sizeof(buf), "%s %llu KiB per core / 4, within [%llu, %llu] KiB: %llu KiB", level,
           (unsigned long long)(cache / KiB), (unsigned long long)(lo / KiB),
           (unsigned long long)(hi / KiB), (unsigned long long)(v / KiB));
  *why = buf;
  return v;
}

}  // namespace

std::string Tuning::describe() const {
  char buf[128];
  snprintf(buf, sizeof(buf), "chunk %zu bytes (", chunkBytes);
  std::string s = buf + chunkWhy;
  snprintf(buf, sizeof(buf), "); rh threshold %zu bytes (", rhThresholdBytes);
  s += buf + rhWhy;
  snprintf(buf, sizeof(buf), "); same-host SO_SNDBUF/SO_RCVBUF %d bytes (", socketBufferBytes);
  return s + buf + socketWhy + ")";
}

Tuning deriveTuning(const TuningInputs& in, const TuningOverrides& over) {
  Tuning t;
  if (over.chunkBytes >= 0) {
    t.chunkBytes = (size_t)over.chunkBytes;
    t.chunkSet = true;
    t.chunkWhy = "MIXCCL_CHUNK_BYTES";
  } else {
    t.chunkBytes = quarterOf(in.l2PerCore, "L2", 64 * KiB, 1 * MiB, 256 * KiB, &t.chunkWhy);
  }
  if (over.rhThresholdBytes >= 0) {
    t.rhThresholdBytes = (size_t)over.rhThresholdBytes;
    t.rhSet = true;
    t.rhWhy = "MIXCCL_RH_THRESHOLD";
  } else {
    t.rhThresholdBytes = quarterOf(in.l3PerCore, "L3", 1 * MiB, 16 * MiB, 4 * MiB, &t.rhWhy);
  }
  if (over.socketBufferBytes >= 0) {
    t.socketBufferBytes = (int)over.socketBufferBytes;
    t.socketWhy = over.socketBufferBytes ? "MIXCCL_SOCKET_BUFFER_BYTES"
                                         : "MIXCCL_SOCKET_BUFFER_BYTES=0: the kernel's autotuning";
  } else if (in.l3Total == 0) {
    t.socketBufferBytes = 4 << 20;
    t.socketWhy = "L3 not reported: 4096 KiB";
  } else {
    const int ranks = std::max(in.localRanks, 1);
    const int cores = in.cores > 0 ? in.cores : ranks;
    const double perCore = ranks > cores ? (double)ranks / cores : 1.0;
    const uint64_t share = (uint64_t)((double)in.l3Total / ranks / 4 / perCore);
    const uint64_t v = floorPow2Within(share, 256 * KiB, 4 * MiB);
    char buf[200];
    snprintf(buf, sizeof(buf), "L3 %llu KiB / %d rank(s) of this host / 4 / %.3g rank(s) per core "
             "(%d cores), within [256, 4096] KiB: %llu KiB", (unsigned long long)(in.l3Total / KiB),
             ranks, perCore, cores, (unsigned long long)(v / KiB));
    t.socketBufferBytes = (int)v;
    t.socketWhy = buf;
  }
  return t;
}

TuningInputs tuningInputsFrom(const TopoCaches& caches, int cores, int localRanks) {
  TuningInputs in;
  in.l2PerCore = caches.l2.bytes / (uint64_t)std::max(caches.l2.cores, 1);
  in.l3PerCore = caches.l3.bytes / (uint64_t)std::max(caches.l3.cores, 1);
  in.l3Total = caches.l3.bytes * (uint64_t)std::max(caches.l3.instances, 1);
  in.cores = cores;
  in.localRanks = localRanks;
  return in;
}

TuningOverrides envTuningOverrides() {
  TuningOverrides o;
  o.chunkBytes = env().chunkBytes;
  o.rhThresholdBytes = env().rhThresholdBytes;
  o.socketBufferBytes = env().socketBufferBytes;
  return o;
}

TuningWire tuningToWire(const Tuning& t) {
  TuningWire w{};
  w.chunkBytes = t.chunkBytes;
  w.rhThresholdBytes = t.rhThresholdBytes;
  w.flags = (t.chunkSet ? 1u : 0u) | (t.rhSet ? 2u : 0u);
  return w;
}

namespace {

// The smallest explicit value if any rank set one, else the smallest derived one; the rank it
// came from (the lowest of equals) in *from.
uint64_t agreed(const std::vector<TuningWire>& all, uint64_t TuningWire::*field, uint32_t bit,
                int* from, bool* set) {
  *set = false;
  for (const TuningWire& w : all) *set |= (w.flags & bit) != 0;
  uint64_t best = 0;
  *from = -1;
  for (size_t r = 0; r < all.size(); ++r) {
    if (*set && !(all[r].flags & bit)) continue;
    if (*from < 0 || all[r].*field < best) {
      best = all[r].*field;
      *from = (int)r;
    }
  }
  return best;
}

void adopt(uint64_t value, int from, bool set, size_t* mine, bool* mineSet, std::string* why,
           const char* variable) {
  if (value == *mine && set == *mineSet) return;
  char buf[200];
  snprintf(buf, sizeof(buf), "rank %d's %llu%s%s%s, the smallest over the ranks; this rank's own: "
           "%zu from ", from, (unsigned long long)value, set ? " (" : "", set ? variable : "",
           set ? ")" : "", *mine);
  *why = buf + *why;
  *mine = value;
  *mineSet = set;
}

}  // namespace

Tuning combineTuning(const Tuning& mine, const std::vector<TuningWire>& all) {
  Tuning t = mine;
  int from = -1;
  bool set = false;
  uint64_t v = agreed(all, &TuningWire::chunkBytes, 1u, &from, &set);
  if (from >= 0) adopt(v, from, set, &t.chunkBytes, &t.chunkSet, &t.chunkWhy, "MIXCCL_CHUNK_BYTES");
  v = agreed(all, &TuningWire::rhThresholdBytes, 2u, &from, &set);
  if (from >= 0)
    adopt(v, from, set, &t.rhThresholdBytes, &t.rhSet, &t.rhWhy, "MIXCCL_RH_THRESHOLD");
  return t;
}

Result agreeTuning(CollContext& c, Tuning* t) {
  TuningWire mine = tuningToWire(*t);
  std::vector<TuningWire> all((size_t)c.nranks);
  MIXCCL_CHECK(ringAllGather(c, &mine, all.data(), sizeof(TuningWire), mixcclUint8));
  *t = combineTuning(*t, all);
  return mixcclSuccess;
}

}  // namespace mixccl
