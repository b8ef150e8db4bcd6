// Thin wrappers over the Linux futex calls the waiting threads sleep on.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace mixccl {

// Sleeps while *word == expected, at most timeoutMs.
inline void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int timeoutMs) {
  timespec ts{timeoutMs / 1000, (long)(timeoutMs % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

inline void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

}  // namespace mixccl
