#include "core/staged_executor.h"

#include <chrono>

#include "base/error.h"
#include "base/log.h"

namespace mixccl {

StagedExecutor::StagedExecutor(std::function<void(Result, const std::string&)> onError)
    : onError_(std::move(onError)) {
  thread_ = std::thread([this] { run(); });
}

StagedExecutor::~StagedExecutor() {
  {
    std::unique_lock<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  reclaim(/*waitForStreams=*/true);
  freeSpares();
}

Result StagedExecutor::takeStaging(const AdaptorTable& t, size_t bytes, void** out, size_t* got) {
  {
    std::lock_guard<std::mutex> lock(m_);
    // The smallest spare that holds bytes, unless it is more than twice as large (a large
    // buffer kept for a small call would leave the next large call without one).
    auto it = spares_.lower_bound(bytes);
    if (it != spares_.end() && it->first <= 2 * bytes) {
      *got = it->first;
      *out = it->second;
      spares_.erase(it);
      return mixcclSuccess;
    }
  }
  Result r = t.hostAlloc(out, bytes);
  if (r == mixcclSuccess) *got = bytes;
  return r;
}

// The number of spares kept: enough for the buffers of the calls a stream has in flight at once;
// beyond it the smallest is freed (a device-wide synchronisation, so as rarely as possible).
constexpr size_t kMaxSpares = 32;

void StagedExecutor::keepSpare(void* p, size_t bytes) {
  spares_.emplace(bytes, p);
  while (spares_.size() > kMaxSpares) {
    sparesTable_->hostFree(spares_.begin()->second);
    spares_.erase(spares_.begin());
  }
}

void StagedExecutor::freeSpares() {
  for (auto& s : spares_) sparesTable_->hostFree(s.second);
  spares_.clear();
}

void StagedExecutor::markReady(void* arg) {
  StagedJob* job = static_cast<StagedJob*>(arg);
  {
    std::lock_guard<std::mutex> lock(job->m);
    job->ready = true;
  }
  job->cv.notify_all();
}

void StagedExecutor::holdUntilDone(void* arg) {
  StagedJob* job = static_cast<StagedJob*>(arg);
  std::unique_lock<std::mutex> lock(job->m);
  // Bounded: by then the communicator has failed the job (timeout) and reports it.
  job->cv.wait_for(lock, std::chrono::seconds(job->holdSeconds + 5), [job] { return job->done; });
}

void StagedExecutor::submit(std::shared_ptr<StagedJob> job) {
  reclaim(/*waitForStreams=*/false);
  {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back(job);
    inFlight_.push_back(job);
  }
  cv_.notify_all();
}

void StagedExecutor::waitIdle() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [this] { return (queue_.empty() && !current_) || aborted_; });
}

void StagedExecutor::abort() {
  std::deque<std::shared_ptr<StagedJob>> dropped;
  {
    std::lock_guard<std::mutex> lock(m_);
    aborted_ = true;
    dropped.swap(queue_);
    if (current_) dropped.push_back(current_);
  }
  cv_.notify_all();
  for (auto& job : dropped) {
    std::lock_guard<std::mutex> lock(job->m);
    job->done = true;
    job->ready = true;
    job->cv.notify_all();
  }
}

void StagedExecutor::run() {
  for (;;) {
    std::shared_ptr<StagedJob> job;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [this] { return stop_ || aborted_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ (after draining) or abort
      job = queue_.front();
      queue_.pop_front();
      current_ = job;
    }
    bool skip;
    {
      // The stream reaches the job when the work before it on the stream is done.
      std::unique_lock<std::mutex> lock(job->m);
      job->cv.wait(lock, [&] { return job->ready; });
      skip = job->cancelled;
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      skip = skip || aborted_;
    }
    Result r = skip ? mixcclSuccess : job->run();
    if (r != mixcclSuccess) onError_(r, threadLastError());
    {
      std::lock_guard<std::mutex> lock(job->m);
      job->done = true;
    }
    job->cv.notify_all();
    {
      std::lock_guard<std::mutex> lock(m_);
      current_.reset();
    }
    cv_.notify_all();
  }
}

// Takes back the staging of jobs whose copy back has run on their stream (oldest first).
void StagedExecutor::reclaim(bool waitForStreams) {
  for (;;) {
    std::shared_ptr<StagedJob> job;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (inFlight_.empty()) return;
      job = inFlight_.front();
    }
    int finished = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(job->holdSeconds + 10);
    while (job->event && job->table->eventQuery(job->event, &finished) == mixcclSuccess &&
           !finished && waitForStreams && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (job->event && !finished) {
      if (!waitForStreams) return;
      WARN(kLogColl, "device staging: a stream never passed a staged collective; its host "
                     "buffers are leaked rather than freed under it");
      std::lock_guard<std::mutex> lock(m_);
      inFlight_.pop_front();
      continue;
    }
    if (job->event) job->table->eventDestroy(job->event);
    std::lock_guard<std::mutex> lock(m_);
    sparesTable_ = job->table;  // one adaptor per communicator
    if (job->hostSend) keepSpare(job->hostSend, job->hostSendBytes);
    if (job->hostRecv) keepSpare(job->hostRecv, job->hostRecvBytes);
    if (job->hostScalar) keepSpare(job->hostScalar, job->hostScalarBytes);
    inFlight_.pop_front();
  }
}

}  // namespace mixccl
