// Deadlines: every blocking wait in mixccl is bounded by one.
#pragma once

#include <chrono>

namespace mixccl {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  static Deadline afterSeconds(double s) {
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(s)));
  }
  explicit Deadline(Clock::time_point at) : at_(at) {}
  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, cap]; for poll/epoll timeouts.
  int remainingMs(int cap = 1 << 30) const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : (int)left;
  }
  Clock::time_point at() const { return at_; }

 private:
  Clock::time_point at_;
};

}  // namespace mixccl
