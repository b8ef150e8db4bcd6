#include "perf_copy_roof.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace mixperf {

namespace {

// The pinned host buffer, freed on every path out of the measurement.
struct PinnedBuffer {
  const mixcclAdaptor_v2_t* adaptor;
  void* host = nullptr;
  ~PinnedBuffer() {
    if (host) adaptor->hostFree(host);
  }
};

std::string adaptorFailure(const mixcclAdaptor_v2_t* a, const char* what) {
  return std::string("device copy roof: ") + what + " of the " + a->name + " adaptor failed: " +
         a->lastError();
}

}  // namespace

std::string measureCopyRoof(const PerfMemory& mem, void* devA, void* devB, size_t bytes, int reps,
                            CopyRoof* out) {
  const mixcclAdaptor_v2_t* a = mem.adaptor();
  if (!mem.device()) return "device copy roof: the rank is on host memory";
  PinnedBuffer b{a};
  if (a->hostAlloc(&b.host, bytes) != mixcclSuccess) return adaptorFailure(a, "hostAlloc");
  struct Direction {
    void* dst;
    const void* src;
    mixcclAdaptorCopyKind_t kind;
    double* gbs;
  } dirs[] = {{devA, b.host, mixcclCopyHostToDevice, &out->h2dGBs},
              {b.host, devA, mixcclCopyDeviceToHost, &out->d2hGBs},
              {devB, devA, mixcclCopyDeviceToDevice, &out->d2dGBs}};
  for (const Direction& d : dirs) {
    double best = 0;
    // One untimed copy first: the first touch of a buffer pays for mapping it.
    for (int r = -1; r < reps; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      if (a->memcpyAsync(d.dst, d.src, bytes, d.kind, mem.stream()) != mixcclSuccess)
        return adaptorFailure(a, "memcpyAsync");
      if (a->streamSynchronize(mem.stream()) != mixcclSuccess)
        return adaptorFailure(a, "streamSynchronize");
      double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 0 && sec > 0) best = std::max(best, static_cast<double>(bytes) / sec / 1e9);
    }
    *d.gbs = best;
  }
  return "";
}

std::string copyRoofLine(const CopyRoof& roof, size_t bytes, int reps, int deviceRanks) {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "# Device copy roof (the adaptor's memcpyAsync, %zu B, best of %d, the fastest of "
                "%d device rank(s), all at once): H2D %.2f GB/s, D2H %.2f GB/s, D2D %.2f GB/s\n",
                bytes, reps, deviceRanks, roof.h2dGBs, roof.d2hGBs, roof.d2dGBs);
  return buf;
}

}  // namespace mixperf
