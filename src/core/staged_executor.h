// Device memory in a job with several domains: each collective is staged through host memory
// in stream order without blocking the caller. The call enqueues on the caller's stream a
// device-to-host copy, a host function that hands the job to this executor's thread, a host
// function that holds the stream until the job is done, and the host-to-device copy of the
// result; it then returns. The executor runs the jobs of one communicator in call order with
// the host-memory cross-domain algorithms. Errors surface through mixcclCommGetAsyncError
// (the communicator is failed), like NCCL's asynchronous errors.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "adaptors/adaptor_table.h"
#include "base/result.h"

namespace mixccl {

struct StagedJob {
  std::function<Result()> run;  // the host-memory collective, on the executor thread
  const AdaptorTable* table = nullptr;
  void* hostSend = nullptr;      // pinned staging buffers (StagedExecutor::takeStaging), back
  void* hostRecv = nullptr;      // to the executor's spares once event has completed
  void* hostScalar = nullptr;    // a pre-multiplied sum's device-resident scalar, copied per call
  size_t hostSendBytes = 0, hostRecvBytes = 0, hostScalarBytes = 0;
  void* event = nullptr;         // recorded after the copy back to the device
  int holdSeconds = 300;         // bound of the stream's wait for the result

  std::mutex m;
  std::condition_variable cv;
  bool ready = false;  // the stream reached the job: its input is in hostSend
  bool done = false;   // the result is in hostRecv (or the job failed)
  bool cancelled = false;  // not fully enqueued on its stream: never run
};

class StagedExecutor {
 public:
  // onError fails the communicator (any thread).
  explicit StagedExecutor(std::function<void(Result, const std::string&)> onError);
  ~StagedExecutor();  // finishes queued jobs, then frees staging once the streams passed it
  StagedExecutor(const StagedExecutor&) = delete;
  StagedExecutor& operator=(const StagedExecutor&) = delete;

  // Queues job (already enqueued on its stream, see device_staging.cc) and frees the staging
  // buffers of earlier jobs whose streams are past them.
  void submit(std::shared_ptr<StagedJob> job);
  // Blocks until every queued job is done (MIXCCL_CHECK_MISMATCH needs the proxy to itself).
  void waitIdle();
  // Stops at once: queued jobs end as failed so the streams waiting on them go on.
  void abort();

  // Pinned host memory of at least bytes for a job's staging: a spare of an earlier job whose
  // stream is past it, else the adaptor's hostAlloc. Staging is never freed on the call path:
  // CUDA's cudaFreeHost synchronises the whole device, so a call that freed would wait for every
  // stream, its caller's included, which may be held by work queued after the call.
  Result takeStaging(const AdaptorTable& t, size_t bytes, void** out, size_t* got);

  // Host functions enqueued on the stream (arg: StagedJob*).
  static void markReady(void* job);
  static void holdUntilDone(void* job);

 private:
  void run();
  void reclaim(bool waitForStreams);
  void keepSpare(void* p, size_t bytes);  // caller holds m_
  void freeSpares();

  std::function<void(Result, const std::string&)> onError_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<StagedJob>> queue_;     // not yet run
  std::deque<std::shared_ptr<StagedJob>> inFlight_;  // staging not yet freed
  std::shared_ptr<StagedJob> current_;               // taken from queue_, not yet done
  // Staging of finished jobs for reuse, by size; freed with the executor (after the streams).
  std::multimap<size_t, void*> spares_;
  const AdaptorTable* sparesTable_ = nullptr;
  bool stop_ = false;
  bool aborted_ = false;
  std::thread thread_;
};

}  // namespace mixccl
