// The sizes a communicator tunes itself with: the ring algorithms' chunk, the AllReduce /
// AllGather threshold between the recursive algorithms and the ring, and the same-host socket
// buffers. Unset, each follows this host's caches as hwloc reports them (the rules below; the
// measurements behind them: docs/performance.md, "Sizes that follow the machine"); the
// MIXCCL_* variable overrides. Every rank must run the same algorithm with the same chunk, so
// the chunk and the threshold are agreed over the ranks at init (agreeTuning); the socket
// buffers are a local setting and stay each rank's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algo/algorithms.h"
#include "base/result.h"
#include "topology/topology.h"

namespace mixccl {

// Of this host: the L2 and L3 one core can count on (bytes of the smallest instance divided by
// the cores sharing it; 0: not reported), all its L3, its cores, and how many ranks of the
// communicator run on it.
struct TuningInputs {
  uint64_t l2PerCore = 0;
  uint64_t l3PerCore = 0;
  uint64_t l3Total = 0;  // 0: not reported
  int cores = 0;         // 0: not known (counts as localRanks: no oversubscription)
  int localRanks = 1;
};

// From the topology discovery's caches (core/comm_topology.h hostCaches; an L2 shared by k
// cores counts 1/k, 0 cores as 1), the host's cores and the communicator's ranks on it.
TuningInputs tuningInputsFrom(const TopoCaches& caches, int cores = 0, int localRanks = 1);

// Explicit settings (MIXCCL_CHUNK_BYTES, MIXCCL_RH_THRESHOLD, MIXCCL_SOCKET_BUFFER_BYTES);
// -1: unset, derive.
struct TuningOverrides {
  long long chunkBytes = -1;
  long long rhThresholdBytes = -1;
  long long socketBufferBytes = -1;
};

struct Tuning {
  size_t chunkBytes = 256 << 10;        // pipelining unit of the ring and chain algorithms
  bool chunkSet = false;                // from MIXCCL_CHUNK_BYTES
  std::string chunkWhy;
  size_t rhThresholdBytes = 4 << 20;    // power-of-two n >= 4: rh / rd AllGather below this
  bool rhSet = false;                   // from MIXCCL_RH_THRESHOLD
  std::string rhWhy;
  int socketBufferBytes = 4 << 20;      // same-host SO_SNDBUF / SO_RCVBUF, 0: the kernel's
  std::string socketWhy;

  // One line for the log and mixcclCommInspect "tuning".
  std::string describe() const;
};

// The rules, with what they give for a few machines:
// - chunk: a quarter of one core's L2, rounded down to a power of two, within [64 KiB, 1 MiB]:
//   the chunk being reduced, the one arriving and the one leaving stay in the L2 together, and
//   the shared-memory ring (one L2, transport/shm_sizing.h) holds 4 of them. L2 1 MiB (the
//   AMD EPYC VM) -> 256 KiB, 2 MiB -> 512 KiB, 512 KiB -> 128 KiB. No L2 reported: 256 KiB.
// - rh threshold: a quarter of one core's L3, rounded down to a power of two, within
//   [1 MiB, 16 MiB]. The recursive algorithms swap half the buffer at a time through a scratch
//   of that size, and revisit the whole buffer log2(n) times: fine while the ranks' buffers
//   stay in the L3, where the ring (one chunk of scratch, one pass) wins once they do not.
//   L3 16 MiB per core (the VM: 32 MiB over 2 cores) -> 4 MiB; 4 MiB per core -> 1 MiB; 130 MiB
//   per core -> 16 MiB. No L3 reported: 4 MiB.
// - socket buffers: the host's L3 shared by the ranks on it, a quarter of each share, divided
//   again by the ranks per core where the ranks outnumber the cores; rounded down to a power
//   of two, within [256 KiB, 4 MiB] (the kernel doubles it and caps it at
//   net.core.wmem_max / rmem_max). What a connection keeps in flight is copied in by one core
//   and out by another through the L3; with more ranks than cores a rank's bytes wait there
//   while its reader is not running, and large buffers push the collective's own data out.
//   The VM (32 MiB L3, 2 cores): 2 ranks -> 4 MiB, 4 ranks -> 1 MiB, 8 ranks -> 256 KiB.
//   No L3 reported: 4 MiB.
// An override is taken as given (the socket buffer's 0 keeps the kernel's autotuning).
Tuning deriveTuning(const TuningInputs& in, const TuningOverrides& over);

// The overrides env() holds.
TuningOverrides envTuningOverrides();

// What one rank contributes to the agreement, and the combination every rank computes from
// all of them (all[r] from rank r): for the chunk and the threshold, the smallest value any
// rank set explicitly, else the smallest derived one (so a setting on some ranks only, or
// hosts with different caches, still give one choice); `mine`, this rank's record, keeps its
// socket buffers. The why strings say when the agreed value is not this
// rank's own.
struct TuningWire {
  uint64_t chunkBytes;
  uint64_t rhThresholdBytes;
  uint32_t flags;  // bit 0: chunk set explicitly, bit 1: threshold set explicitly
  uint32_t reserved;
};
TuningWire tuningToWire(const Tuning& t);
Tuning combineTuning(const Tuning& mine, const std::vector<TuningWire>& all);

// Exchanges the records over c's ranks (a ring AllGather of a few bytes) and makes *t the
// combination. Every rank of c must call it.
Result agreeTuning(CollContext& c, Tuning* t);

}  // namespace mixccl
