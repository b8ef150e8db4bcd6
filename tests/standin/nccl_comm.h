// A stand-in NCCL communicator and the work enqueued on it. Calls are executed on the
// stream's worker (the runtime's bridge), in the order they were made on this rank, whatever
// stream they were enqueued on, as NCCL requires every rank to issue them in one order.
#pragma once

#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_segment.h"

namespace standin {

struct CommState {
  std::unique_ptr<Segment> segment;
  int rank = 0, nranks = 0, device = 0;
  std::atomic<bool> aborted{false};

  std::mutex m;
  std::condition_variable cv;
  uint64_t nextTicket = 0;  // tasks enqueued
  uint64_t serving = 0;     // tasks finished (the next to run has ticket serving)
  uint64_t collectives = 0; // collective calls executed: their descriptors' seq
  ncclResult_t asyncError = ncclSuccess;  // the first failure of enqueued work
  std::string asyncMessage;

  void recordAsyncError(ncclResult_t r, const std::string& why);
};

enum class OpKind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Send, Recv };
const char* opKindName(OpKind k);

// One call, its buffers already translated to host views of device memory.
struct Op {
  OpKind kind;
  const char* send;
  char* recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;  // the root, or the peer of Send/Recv
};

// The calls of one ncclGroupEnd (or one call outside a group) on one communicator.
struct Task {
  std::shared_ptr<CommState> comm;
  std::vector<Op> ops;
  uint64_t ticket = 0;
};

// Runs on the stream's worker: waits for the task's turn, executes its collectives in order
// and then its sends and receives together, records a failure as the communicator's async
// error, and frees the task.
void runTask(Task* task, bool skipped);

}  // namespace standin
