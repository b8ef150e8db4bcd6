// A stand-in stream: a worker thread that runs the operations enqueued on it one after the
// other, in order, as a GPU runs a stream's work. The thread is detached and owns a reference
// to the stream's state, so cudaStreamDestroy returns at once and the work already enqueued
// still runs (CUDA's rule).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace standin {

class StreamWorker {
 public:
  // The legacy default stream waits for the blocking streams' earlier work, and they wait for
  // its earlier work; non-blocking streams (cudaStreamNonBlocking) do neither.
  enum class Kind { Legacy, Blocking, NonBlocking };

  static std::shared_ptr<StreamWorker> start(Kind kind);
  Kind kind() const { return kind_; }

  // Appends op; returns its ticket (1, 2, ...). The op runs once every earlier op has finished.
  uint64_t enqueue(std::function<void()> op);
  uint64_t lastTicket();
  bool finished(uint64_t ticket);
  void waitFinished(uint64_t ticket);
  // The worker ends after running what is queued.
  void stop();

 private:
  explicit StreamWorker(Kind kind) : kind_(kind) {}
  static void run(std::shared_ptr<StreamWorker> self);

  const Kind kind_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0, finished_ = 0;
  bool stopping_ = false;
};

// An event: a marker on a stream. It is complete once the stream has run everything enqueued
// before its last record (an event never recorded is complete).
struct EventState {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0, reached = 0;
};

}  // namespace standin
