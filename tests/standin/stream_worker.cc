#include "stream_worker.h"

#include <thread>

namespace standin {

std::shared_ptr<StreamWorker> StreamWorker::start(Kind kind) {
  std::shared_ptr<StreamWorker> s(new StreamWorker(kind));
  std::thread(run, s).detach();
  return s;
}

uint64_t StreamWorker::enqueue(std::function<void()> op) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back(std::move(op));
    ticket = ++enqueued_;
  }
  cv_.notify_all();
  return ticket;
}

uint64_t StreamWorker::lastTicket() {
  std::lock_guard<std::mutex> lock(m_);
  return enqueued_;
}

bool StreamWorker::finished(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(m_);
  return finished_ >= ticket;
}

void StreamWorker::waitFinished(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return finished_ >= ticket; });
}

void StreamWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void StreamWorker::run(std::shared_ptr<StreamWorker> self) {
  std::unique_lock<std::mutex> lock(self->m_);
  for (;;) {
    self->cv_.wait(lock, [&] { return self->stopping_ || !self->queue_.empty(); });
    if (self->queue_.empty()) return;  // stopping, and everything enqueued has run
    std::function<void()> op = std::move(self->queue_.front());
    self->queue_.pop_front();
    lock.unlock();
    op();
    op = nullptr;  // release what the op captured before it counts as finished
    lock.lock();
    ++self->finished_;
    self->cv_.notify_all();
  }
}

}  // namespace standin
