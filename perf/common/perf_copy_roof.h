// The device copy roof of the perf tools: how fast the rank's adaptor copies between pinned host
// memory and its device memory (H2D, D2H) and within the device (D2D), measured in the same run
// as the collectives, so a device collective's busbw can be read against the copies it stands
// on (a cross-domain collective stages its bytes through D2H and H2D copies).
#ifndef MIXCCL_PERF_COPY_ROOF_H_
#define MIXCCL_PERF_COPY_ROOF_H_

#include <cstddef>
#include <string>

#include "perf_memory.h"

namespace mixperf {

struct CopyRoof {
  double h2dGBs = 0, d2hGBs = 0, d2dGBs = 0;  // 1e9 bytes per second, the best of reps copies
};

// Times reps copies of bytes in each direction with the adaptor's memcpyAsync on mem's stream
// (each one ended by streamSynchronize): between pinned host memory (hostAlloc, allocated here)
// and devA, and from devA to devB, two device buffers of at least bytes the caller lends (the
// collectives' own, so the roof needs no device memory beyond the sweep's). mem must be on
// device memory. Returns "" or what failed.
std::string measureCopyRoof(const PerfMemory& mem, void* devA, void* devB, size_t bytes, int reps,
                            CopyRoof* out);

// The table's line for it: "# Device copy roof (...): H2D x GB/s, D2H y GB/s, D2D z GB/s".
std::string copyRoofLine(const CopyRoof& roof, size_t bytes, int reps, int deviceRanks);

}  // namespace mixperf

#endif  // MIXCCL_PERF_COPY_ROOF_H_
