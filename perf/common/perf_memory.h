// Where a perf tool's buffers live. Like nccl-tests (cudaMalloc), a rank whose adaptor takes device
// memory (nccl, or the simulated "simdev" of tests/hetero) benchmarks device buffers allocated
// through that adaptor; host-memory adaptors (host, gloo, mpi) get page-aligned host memory.
// The tool fills and checks data on the host and moves it with the adaptor's copies.
#ifndef MIXCCL_PERF_MEMORY_H_
#define MIXCCL_PERF_MEMORY_H_

#include <cstddef>
#include <string>

#include "mixccl.h"
#include "mixccl_adaptor.h"

namespace mixperf {

class PerfMemory {
 public:
  PerfMemory() = default;
  ~PerfMemory();
  PerfMemory(const PerfMemory&) = delete;
  PerfMemory& operator=(const PerfMemory&) = delete;

  // Device memory when adaptor takes it, else host memory. Creates the stream the collectives
  // run on (device only). Returns "" or what failed.
  std::string init(const mixcclAdaptor_v2_t* adaptor);

  bool device() const { return device_; }
  const mixcclAdaptor_v2_t* adaptor() const { return adaptor_; }
  // "[<adaptor>, device memory]" or "[<adaptor>, host memory]" for the table's device lines.
  std::string describe() const;
  mixcclStream_t stream() const { return stream_; }

  // Memory the communicator's collectives take (device or host), zero bytes allowed.
  std::string alloc(size_t bytes, char** p);
  void release(char* p);
  // Host bytes into such memory, and back; both wait until the copy is done.
  std::string upload(void* dst, const void* hostSrc, size_t bytes);
  std::string download(void* hostDst, const void* src, size_t bytes);
  // Waits for everything issued on the stream (the timed loop ends with it, as in nccl-tests).
  std::string synchronize();

 private:
  std::string failed(const char* what) const;

  const mixcclAdaptor_v2_t* adaptor_ = nullptr;
  bool device_ = false;
  void* stream_ = nullptr;
};

}  // namespace mixperf

#endif  // MIXCCL_PERF_MEMORY_H_
