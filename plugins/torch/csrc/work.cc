#include "work.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

MixcclWork::MixcclWork(int rank, c10d::OpType opType, std::string opName,
                       std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout,
                       OpOrder order)
    : c10d::Work(rank, opType),
      opName_(std::move(opName)),
      outputs_(std::move(outputs)),
      timeout_(timeout),
      order_(std::move(order)),
      // CUDA-aware for CUDA tensors: whoever waits on it has its stream wait for the operation.
      future_(order_.placement.orderedAfterCaller ? order_.fence->makeFuture()
                                                  : HostFence().makeFuture()) {}

void MixcclWork::markDone() {
  finish();
  // Callbacks chained on the future (DDP comm hooks) run here, on the worker thread; they may
  // enqueue more work, never wait for it.
  future_->markCompleted(c10::IValue(outputs_));
}

void MixcclWork::markFailed(std::exception_ptr error) {
  finish(error);
  future_->setError(error);
}

void MixcclWork::waitForWorker(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, limit, [this] { return completed_; })) {
    C10_THROW_ERROR(DistBackendError,
                    "mixccl " + opName_ + ": Timed out waiting " +
                        std::to_string(limit.count()) + " ms for the operation to complete (its "
                        "timeout)");
  }
  if (exception_) std::rethrow_exception(exception_);
}

void MixcclWork::runWaitSteps(const std::vector<WaitStep>& steps,
                              std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (WaitStep step : steps) {
    switch (step) {
      case WaitStep::kHostWaitsWorker: waitForWorker(limit); break;
      case WaitStep::kCurrentWaitsEnd: order_.fence->currentWaitsEnd(); break;
      case WaitStep::kHostWaitsEnd: {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (!order_.fence->hostWaitsEnd(std::max(left, std::chrono::milliseconds(0))))
          C10_THROW_ERROR(DistBackendError,
                          "mixccl " + opName_ + ": Timed out waiting " +
                              std::to_string(limit.count()) +
                              " ms for the device to finish the operation");
        break;
      }
    }
  }
}

bool MixcclWork::wait(std::chrono::milliseconds timeout) {
  const bool given = timeout != kNoTimeout;
  runWaitSteps(waitSteps(order_.placement, given), given ? timeout : timeout_);
  return true;
}

void MixcclWork::synchronize() { runWaitSteps(synchronizeSteps(order_.placement), timeout_); }

bool MixcclWork::isCompleted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!completed_) return false;
    if (exception_) return true;
  }
  return !completionQueriesEnd(order_.placement) || order_.fence->endPassed();
}

int MixcclWork::sourceRank() const {
  if (sourceRank_ >= 0) return sourceRank_;
  return c10d::Work::sourceRank();  // throws: not a receive from any source
}

c10::intrusive_ptr<c10::ivalue::Future> MixcclWork::getFuture() { return future_; }

std::vector<at::Tensor> MixcclWork::result() { return outputs_; }

}  // namespace mixccl_torch
