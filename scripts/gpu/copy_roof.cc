// The device copy roof for scripts/gpu-check.sh: cudaMemcpyAsync bandwidth host-to-device and
// device-to-host (pinned host memory) and device-to-device, timed with CUDA events; the best
// of 5 copies of BYTES (argument, default 1 GiB) after one warm-up. Prints one line per kind
// and a last "KEY: ..." line with the three numbers; exits 1 with CUDA's message on an error.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("FAIL: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// GB/s (1e9 bytes) of the fastest of 5 copies; bytes copied, each counted once.
double roof(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s,
            cudaEvent_t a, cudaEvent_t b) {
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    if (!ok(cudaEventRecord(a, s), "cudaEventRecord") ||
        !ok(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync") ||
        !ok(cudaEventRecord(b, s), "cudaEventRecord") ||
        !ok(cudaEventSynchronize(b), "cudaEventSynchronize"))
      return -1;
    float ms = 0;
    if (!ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime")) return -1;
    if (i > 0 && ms > 0 && bytes / (ms * 1e6) > best) best = bytes / (ms * 1e6);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t{1} << 30);
  void *host = nullptr, *d0 = nullptr, *d1 = nullptr;
  cudaStream_t s;
  cudaEvent_t a, b;
  if (!ok(cudaMallocHost(&host, bytes), "cudaMallocHost") || !ok(cudaMalloc(&d0, bytes), "cudaMalloc") ||
      !ok(cudaMalloc(&d1, bytes), "cudaMalloc") || !ok(cudaStreamCreate(&s), "cudaStreamCreate") ||
      !ok(cudaEventCreate(&a), "cudaEventCreate") || !ok(cudaEventCreate(&b), "cudaEventCreate"))
    return 1;
  const double h2d = roof(d0, host, bytes, cudaMemcpyHostToDevice, s, a, b);
  const double d2h = roof(host, d0, bytes, cudaMemcpyDeviceToHost, s, a, b);
  const double d2d = roof(d1, d0, bytes, cudaMemcpyDeviceToDevice, s, a, b);
  if (h2d < 0 || d2h < 0 || d2d < 0) return 1;
  std::printf("bytes %zu\nH2D %.1f GB/s\nD2H %.1f GB/s\nD2D %.1f GB/s\n", bytes, h2d, d2h, d2d);
  std::printf("KEY: %zu B copies: H2D %.1f GB/s, D2H %.1f GB/s, D2D %.1f GB/s\n", bytes, h2d, d2h,
              d2d);
  return 0;
}
