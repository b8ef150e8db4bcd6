// Point-to-point traffic of one process group. Each (peer, direction, tag) is a lane: its own
// two-rank mixccl communicator (formed through the Store the first time the lane is used, on
// both sides) and its own thread. isend/irecv therefore never block the caller, and a send
// that waits for its receiver never holds up anything else: two ranks that each isend a large
// tensor before their irecv do not deadlock, as they would on one thread, and tags match like
// Gloo's (sends and receives of one tag, between two ranks, match in order).
// A receive from any source probes (mixcclIprobe) every other rank's lane of its tag, each on
// that lane's own thread so it queues behind the lane's earlier receives; the first lane where a
// message has arrived takes it, the others stop probing and leave their messages in place.
// CUDA tensors are ordered as the group's collectives are (op_order.h), on an internal stream
// of the lane's own, so a transfer that waits for its peer holds up no other lane.
#pragma once

#include "comm.h"
#include "op_order.h"
#include "worker.h"
#include "work.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace mixccl_torch {

class P2PLanes {
 public:
  // deviceMemory: the ranks' adaptor takes device memory (the lanes' communicators use it too).
  P2PLanes(c10::intrusive_ptr<c10d::Store> store, int rank, std::chrono::milliseconds timeout,
           bool deviceMemory);
  ~P2PLanes();  // finishes queued transfers, then frees every lane

  c10::intrusive_ptr<MixcclWork> send(const at::Tensor& tensor, int peer, int tag);
  c10::intrusive_ptr<MixcclWork> recv(const at::Tensor& tensor, int peer, int tag);
  // From whichever of the group's other ranks sends with tag first; the Work's sourceRank()
  // names it. groupSize: the ranks that may send.
  c10::intrusive_ptr<MixcclWork> recvAnySource(const at::Tensor& tensor, int tag, int groupSize);
  // Aborts every lane's communicator: transfers in flight and queued ones fail at once.
  void abort();
  // Lanes in use (for tests: lanes are created lazily and per tag).
  size_t laneCount();

 private:
  struct Lane;
  struct AnySource;
  Lane& lane(int peer, bool sending, int tag);
  // The lane's communicator, formed through the Store on first use (on the lane's thread).
  void ensureComm(Lane& l, int peer, int tag, bool sending);
  std::string storeKey(int peer, int tag, bool sending) const;
  // One lane's share of a receive from any source (runs on that lane's thread).
  void probeLane(Lane& l, int peer, AnySource& any);
  c10::intrusive_ptr<MixcclWork> transfer(const at::Tensor& tensor, int peer, int tag, bool sending);

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  std::chrono::milliseconds timeout_;
  bool deviceMemory_;
  std::mutex mutex_;
  bool aborted_ = false;
  std::atomic<bool> stopping_{false};  // aborted or being destroyed: probes give up
  std::map<std::tuple<int, bool, int>, std::unique_ptr<Lane>> lanes_;
};

}  // namespace mixccl_torch
