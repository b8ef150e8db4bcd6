// The buffers registered on a communicator (mixcclCommRegister): each the buffer, its size and
// the native library's handle where the domain's library registered it (NULL where there was
// nothing to register: the host adaptor, or an adaptor without commRegister). The handle given
// to the caller is the record's address, valid until it is deregistered or the communicator is
// freed, so a stale handle is recognised instead of reaching the library.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace mixccl {

struct BufferRegistration {
  void* buff = nullptr;
  size_t size = 0;
  void* nativeHandle = nullptr;  // the library's, for commDeregister; NULL: nothing registered
};

class BufferRegistrations {
 public:
  // Keeps reg; returns the handle that names it.
  void* add(const BufferRegistration& reg);
  // Removes the registration handle names into *out; false when handle is not a live one here.
  bool take(void* handle, BufferRegistration* out);

 private:
  std::mutex mutex_;
  std::map<void*, std::unique_ptr<BufferRegistration>> live_;
};

}  // namespace mixccl
