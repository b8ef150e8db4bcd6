#include "work.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

MixcclWork::MixcclWork(int rank, c10d::OpType opType, std::string opName,
                       std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout)
    : c10d::Work(rank, opType),
      opName_(std::move(opName)),
      outputs_(std::move(outputs)),
      timeout_(timeout),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()))) {}

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

bool MixcclWork::wait(std::chrono::milliseconds timeout) {
  std::chrono::milliseconds limit = timeout == kNoTimeout ? timeout_ : timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, limit, [this] { return completed_; })) {
    C10_THROW_ERROR(DistBackendError,
                    "mixccl " + opName_ + ": Timed out waiting " +
                        std::to_string(limit.count()) + " ms for the operation to complete (its "
                        "timeout)");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

int MixcclWork::sourceRank() const {
  if (sourceRank_ >= 0) return sourceRank_;
  return c10d::Work::sourceRank();  // throws: not a receive from any source
}

c10::intrusive_ptr<c10::ivalue::Future> MixcclWork::getFuture() { return future_; }

std::vector<at::Tensor> MixcclWork::result() { return outputs_; }

}  // namespace mixccl_torch
