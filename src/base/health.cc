#include "base/health.h"

#include "base/error.h"

namespace mixccl {

bool Health::fail(Result code, const std::string& message, int culprit) {
  std::vector<std::pair<int, std::function<void()>>> listeners;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (code_.load() != mixcclSuccess) return false;
    message_ = message;
    culprit_.store(culprit, std::memory_order_release);
    code_.store(code, std::memory_order_release);
    listeners = listeners_;
  }
  raiseError(code, "%s", message.c_str());
  for (auto& l : listeners) l.second();
  return true;
}

Result Health::error(std::string* message) const {
  // Healthy, the common case: no lock (code_ is set last, under the lock, by fail()).
  if (code_.load(std::memory_order_acquire) == mixcclSuccess) {
    if (message) message->clear();
    return mixcclSuccess;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (message) *message = message_;
  return (Result)code_.load();
}

int Health::onFailure(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (code_.load() == mixcclSuccess) {
      listeners_.emplace_back(nextListener_, std::move(fn));
      return nextListener_++;
    }
  }
  fn();
  return -1;
}

void Health::removeListener(int id) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < listeners_.size(); ++i)
    if (listeners_[i].first == id) {
      listeners_.erase(listeners_.begin() + (long)i);
      return;
    }
}

}  // namespace mixccl
