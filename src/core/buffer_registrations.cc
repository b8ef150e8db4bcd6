#include "core/buffer_registrations.h"

namespace mixccl {

void* BufferRegistrations::add(const BufferRegistration& reg) {
  auto rec = std::make_unique<BufferRegistration>(reg);
  void* handle = rec.get();
  std::lock_guard<std::mutex> lock(mutex_);
  live_.emplace(handle, std::move(rec));
  return handle;
}

bool BufferRegistrations::take(void* handle, BufferRegistration* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(handle);
  if (it == live_.end()) return false;
  *out = *it->second;
  live_.erase(it);
  return true;
}

}  // namespace mixccl
