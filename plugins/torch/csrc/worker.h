// A thread that runs jobs one after another in submission order. The backend has one for its
// collectives (mixccl communicators are single-threaded, and collectives must run in the order
// the program issued them) and one per point-to-point lane.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace mixccl_torch {

class Worker {
 public:
  explicit Worker(std::string name);
  ~Worker();  // runs what is queued, then joins
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // job must not throw (it reports its errors through its Work).
  void submit(std::function<void()> job);
  // Runs job on the worker and waits for it; rethrows what it threw.
  void runAndWait(const std::function<void()>& job);
  // Returns when everything submitted before has run.
  void drain();

 private:
  void loop();
  std::string name_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> jobs_;
  bool running_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mixccl_torch
