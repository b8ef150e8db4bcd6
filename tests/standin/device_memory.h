// The stand-in's "device memory": each allocation is one memfd mapped twice. The device
// address handed to the program is a PROT_NONE mapping, so host code that dereferences it
// faults at once (as it would on a GPU); the runtime and the NCCL-API library reach the same
// bytes through a second, read-write "shadow" mapping. Pinned host memory is ordinary memory
// the runtime remembers, so copies can tell it from pageable memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace standin {

class DeviceMemory {
 public:
  static DeviceMemory& get();

  // 0, or the errno of the failed memfd_create/mmap (ENOMEM when the budget is exhausted).
  int allocate(size_t bytes, void** device);
  // false: ptr is not the start of a live allocation.
  bool release(void* device);
  int allocatePinned(size_t bytes, void** host);
  bool releasePinned(void* host);

  // The shadow address of [ptr, ptr + bytes) inside one device allocation, else nullptr.
  void* shadowOf(const void* ptr, size_t bytes);
  bool isDevice(const void* ptr);
  // [ptr, ptr + bytes) inside one pinned allocation.
  bool isPinned(const void* ptr, size_t bytes);

 private:
  struct Allocation {
    size_t bytes;   // as asked
    size_t mapped;  // rounded up to pages
    char* shadow;   // device allocations only
  };
  // The allocation holding ptr, or nullptr.
  static const Allocation* find(const std::map<uintptr_t, Allocation>& m, const void* ptr,
                                uintptr_t* base);

  std::mutex m_;
  std::map<uintptr_t, Allocation> device_;
  std::map<uintptr_t, Allocation> pinned_;
  size_t deviceBytes_ = 0;
  size_t budget_ = 0;  // MIXCCL_STANDIN_DEVICE_MEMORY_MB
};

}  // namespace standin
