#include "device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace standin {
namespace {

size_t pageRound(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

DeviceMemory& DeviceMemory::get() {
  // Never destroyed: stream workers may still copy while the process exits.
  static DeviceMemory* d = [] {
    auto* m = new DeviceMemory;
    const char* env = std::getenv("MIXCCL_STANDIN_DEVICE_MEMORY_MB");
    long mb = env ? std::strtol(env, nullptr, 10) : 0;
    m->budget_ = static_cast<size_t>(mb > 0 ? mb : 4096) << 20;
    return m;
  }();
  return *d;
}

int DeviceMemory::allocate(size_t bytes, void** device) {
  const size_t mapped = pageRound(bytes);
  {
    std::lock_guard<std::mutex> lock(m_);
    if (deviceBytes_ + mapped > budget_) return ENOMEM;
    deviceBytes_ += mapped;
  }
  int err = 0;
  void* shadow = MAP_FAILED;
  void* dev = MAP_FAILED;
  int fd = memfd_create("mixccl-standin-device", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
    err = errno;
  } else {
    shadow = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    dev = mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd, 0);
    if (shadow == MAP_FAILED || dev == MAP_FAILED) err = errno;
  }
  if (fd >= 0) close(fd);  // the mappings keep the memory
  std::lock_guard<std::mutex> lock(m_);
  if (err != 0) {
    if (shadow != MAP_FAILED) munmap(shadow, mapped);
    if (dev != MAP_FAILED) munmap(dev, mapped);
    deviceBytes_ -= mapped;
    return err;
  }
  device_[reinterpret_cast<uintptr_t>(dev)] = Allocation{bytes, mapped, static_cast<char*>(shadow)};
  *device = dev;
  return 0;
}

bool DeviceMemory::release(void* device) {
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(m_);
    auto it = device_.find(reinterpret_cast<uintptr_t>(device));
    if (it == device_.end()) return false;
    a = it->second;
    device_.erase(it);
    deviceBytes_ -= a.mapped;
  }
  munmap(device, a.mapped);
  munmap(a.shadow, a.mapped);
  return true;
}

int DeviceMemory::allocatePinned(size_t bytes, void** host) {
  const size_t mapped = pageRound(bytes ? bytes : 1);
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return errno;
  std::lock_guard<std::mutex> lock(m_);
  pinned_[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, mapped, nullptr};
  *host = p;
  return 0;
}

bool DeviceMemory::releasePinned(void* host) {
  size_t mapped;
  {
    std::lock_guard<std::mutex> lock(m_);
    auto it = pinned_.find(reinterpret_cast<uintptr_t>(host));
    if (it == pinned_.end()) return false;
    mapped = it->second.mapped;
    pinned_.erase(it);
  }
  munmap(host, mapped);
  return true;
}

const DeviceMemory::Allocation* DeviceMemory::find(const std::map<uintptr_t, Allocation>& m,
                                                   const void* ptr, uintptr_t* base) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = m.upper_bound(p);
  if (it == m.begin()) return nullptr;
  --it;
  // An address inside the page rounding is still outside the allocation the program asked for
  // (one past the end is allowed: a zero-byte range there is valid).
  if (p > it->first + it->second.bytes) return nullptr;
  *base = it->first;
  return &it->second;
}

void* DeviceMemory::shadowOf(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(m_);
  uintptr_t base = 0;
  const Allocation* a = find(device_, ptr, &base);
  const uintptr_t offset = reinterpret_cast<uintptr_t>(ptr) - base;
  if (a == nullptr || bytes > a->bytes - offset) return nullptr;
  return a->shadow + offset;
}

bool DeviceMemory::isDevice(const void* ptr) {
  std::lock_guard<std::mutex> lock(m_);
  uintptr_t base = 0;
  return find(device_, ptr, &base) != nullptr;
}

bool DeviceMemory::isPinned(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(m_);
  uintptr_t base = 0;
  const Allocation* a = find(pinned_, ptr, &base);
  return a != nullptr && bytes <= a->bytes - (reinterpret_cast<uintptr_t>(ptr) - base);
}

}  // namespace standin
