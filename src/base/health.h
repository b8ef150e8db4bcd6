// A communicator's health: its first failure (code, message, and the rank that caused it), owned
// by the communicator. Every engine that works for it (the proxy, the staged device executor,
// native-library calls) reports into it, and every later call and mixcclCommGetAsyncError read
// it, so a failure anywhere ends the whole communicator the same way.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace mixccl {

class Health {
 public:
  // Records the failure if it is the first (later ones are dropped), logs it once (WARN) and
  // sets it as this thread's last error; then runs the listeners. culprit: the rank at fault
  // (-1: this rank's own failure). Returns true for the first failure. Any thread.
  bool fail(Result code, const std::string& message, int culprit = -1);
  // The first failure, or mixcclSuccess.
  Result error(std::string* message = nullptr) const;
  bool failed() const { return code_.load(std::memory_order_acquire) != mixcclSuccess; }
  int culprit() const { return culprit_.load(std::memory_order_acquire); }
  // fn runs after the first failure (at once if it already happened), on the failing thread.
  // Returns an id for removeListener (whoever registered must remove before it goes away).
  int onFailure(std::function<void()> fn);
  void removeListener(int id);

 private:
  mutable std::mutex mutex_;
  std::atomic<int> code_{mixcclSuccess};
  std::atomic<int> culprit_{-1};
  std::string message_;
  std::vector<std::pair<int, std::function<void()>>> listeners_;
  int nextListener_ = 0;
};

}  // namespace mixccl
