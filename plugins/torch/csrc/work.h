// The Work a mixccl backend call returns at once: completed by the worker thread that ran the
// operation, with the output tensors (its Future carries them, for DDP comm hooks) or the error.
// For CUDA tensors it behaves as ProcessGroupNCCL's (placement.h): the worker completes it once
// the operation is issued on the internal stream; wait() and synchronize() then make the
// caller's current stream wait on the end event, and is_completed() asks that event.
#pragma once

#include "device_fence.h"

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

namespace mixccl_torch {

class MixcclWork : public c10d::Work {
 public:
  // timeout bounds wait() when it is called without one.
  MixcclWork(int rank, c10d::OpType opType, std::string opName, std::vector<at::Tensor> outputs,
             std::chrono::milliseconds timeout, OpOrder order = OpOrder());

  // Called once by the thread that ran the operation.
  void markDone();
  void markFailed(std::exception_ptr error);

  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override;
  bool isCompleted() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;

  const std::string& opName() const { return opName_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // A receive from any source: the rank its message came from, set before markDone.
  void setSourceRank(int rank) { sourceRank_ = rank; }
  int sourceRank() const override;

 private:
  // The wait steps of placement.h; throws on a timeout or the operation's error.
  void runWaitSteps(const std::vector<WaitStep>& steps, std::chrono::milliseconds limit);
  void waitForWorker(std::chrono::milliseconds limit);

  std::string opName_;
  std::vector<at::Tensor> outputs_;
  std::chrono::milliseconds timeout_;
  int sourceRank_ = -1;
  OpOrder order_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace mixccl_torch
