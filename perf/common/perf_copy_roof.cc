#include "perf_copy_roof.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace mixperf {

namespace {

// Frees what the measurement allocated on every path out of it.
struct RoofBuffers {
  const mixcclAdaptor_v2_t* adaptor;
  void* host = nullptr;
  void* devA = nullptr;
  void* devB = nullptr;
  ~RoofBuffers() {
    if (host) adaptor->hostFree(host);
    if (devA) adaptor->memFree(devA);
    if (devB) adaptor->memFree(devB);
  }
};

std::string adaptorFailure(const mixcclAdaptor_v2_t* a, const char* what) {
  return std::string("device copy roof: ") + what + " of the " + a->name + " adaptor failed: " +
         a->lastError();
}

}  // namespace

std::string measureCopyRoof(const PerfMemory& mem, size_t bytes, int reps, CopyRoof* out) {
  const mixcclAdaptor_v2_t* a = mem.adaptor();
  if (!mem.device()) return "device copy roof: the rank is on host memory";
  RoofBuffers b{a};
  if (a->hostAlloc(&b.host, bytes) != mixcclSuccess) return adaptorFailure(a, "hostAlloc");
  if (a->memAlloc(&b.devA, bytes) != mixcclSuccess) return adaptorFailure(a, "memAlloc");
  if (a->memAlloc(&b.devB, bytes) != mixcclSuccess) return adaptorFailure(a, "memAlloc");
  struct Direction {
    void* dst;
    const void* src;
    mixcclAdaptorCopyKind_t kind;
    double* gbs;
  } dirs[] = {{b.devA, b.host, mixcclCopyHostToDevice, &out->h2dGBs},
              {b.host, b.devA, mixcclCopyDeviceToHost, &out->d2hGBs},
              {b.devB, b.devA, mixcclCopyDeviceToDevice, &out->d2dGBs}};
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
