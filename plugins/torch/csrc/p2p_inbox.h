// The matching side of a group's point-to-point (p2p_engine.h), the way Gloo matches: every
// message from one rank to another travels in one ordered stream (of the communicator of that
// direction) behind a header that names its tag, and the inbox decides which receive takes it: the earliest posted
// receive of that (source, tag), or of that tag from any source. A message no receive waits for
// yet is kept (its bytes copied out of the stream, so that the messages behind it, of other
// tags, can arrive) until a receive of its source and tag takes it, in arrival order.
#pragma once

#include "work.h"

#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace mixccl_torch {

// One receive posted by the program and not yet matched with a message.
struct PendingRecv {
  c10::intrusive_ptr<MixcclWork> work;
  at::Tensor tensor;  // what the program passed
  at::Tensor buffer;  // its bytes as one contiguous buffer (the tensor itself where it is one)
  int peer = -1;      // -1: from any source
  int tag = 0;
  uint64_t order = 0;  // posting order, among the receives a message could go to
  std::chrono::steady_clock::time_point deadline;  // from any source: when it gives up
  std::atomic<bool> claimed{false};  // matched (or failed): exactly one thread finishes it
  bool claim() { return !claimed.exchange(true); }
  size_t bytes() const { return buffer.nbytes(); }
  // The message is in buffer: copy it into the tensor when they differ, mark the Work done.
  void finish(int from);
};

class P2PInbox {
 public:
  // Registers r so that a message arriving for it goes straight into its buffer.
  void post(const std::shared_ptr<PendingRecv>& r);
  // A header from peer announced a message of tag: the receive that takes it (claimed and no
  // longer posted), or nullptr: then the message is kept (keep()) behind the kept ones.
  std::shared_ptr<PendingRecv> match(int peer, int tag);
  void keep(int peer, int tag, at::Tensor payload);
  // For r (posted; from its peer or, from any source, from any peer): the first kept message,
  // claiming r and unposting it (Taken). Mismatch: that message is of another size than r
  // (*bytes); r is claimed and unposted (to be failed), the message stays. None: nothing kept
  // (or r was claimed meanwhile).
  enum class Kept { None, Taken, Mismatch };
  Kept takeKept(PendingRecv& r, at::Tensor* payload, int* from, size_t* bytes);

 private:
  using Queue = std::deque<std::shared_ptr<PendingRecv>>;
  // Drops claimed receives from the front (a receive from any source claimed elsewhere).
  static void dropClaimed(Queue& q);
  void unpost(PendingRecv& r);

  std::mutex mutex_;
  uint64_t nextArrival_ = 0;
  std::map<std::pair<int, int>, Queue> named_;  // (peer, tag)
  std::map<int, Queue> anySource_;              // tag
  struct Message {
    uint64_t arrival;
    at::Tensor payload;
  };
  std::map<std::pair<int, int>, std::deque<Message>> kept_;  // (peer, tag)
};

}  // namespace mixccl_torch
