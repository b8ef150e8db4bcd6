#include "p2p_lanes.h"

#include "types.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

// Members in this order: the worker, declared last, is joined before comm is freed.
struct P2PLanes::Lane {
  std::mutex commMutex;        // guards comm between the lane thread and abort()
  std::unique_ptr<Comm> comm;  // created on the lane thread by the first transfer
  bool aborted = false;
  Worker worker;
  explicit Lane(std::string name) : worker(std::move(name)) {}
};

P2PLanes::P2PLanes(c10::intrusive_ptr<c10d::Store> store, int rank,
                   std::chrono::milliseconds timeout)
    : store_(std::move(store)), rank_(rank), timeout_(timeout) {}

P2PLanes::~P2PLanes() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : lanes_) entry.second->worker.drain();
  lanes_.clear();
}

size_t P2PLanes::laneCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  return lanes_.size();
}

P2PLanes::Lane& P2PLanes::lane(int peer, bool sending, int tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(peer, sending, tag);
  auto it = lanes_.find(key);
  if (it != lanes_.end()) return *it->second;
  std::string name = std::string(sending ? "mixccl>" : "mixccl<") + std::to_string(peer);
  auto inserted = lanes_.emplace(key, std::make_unique<Lane>(name));
  return *inserted.first->second;
}

c10::intrusive_ptr<MixcclWork> P2PLanes::send(const at::Tensor& tensor, int peer, int tag) {
  return transfer(tensor, peer, tag, true);
}

c10::intrusive_ptr<MixcclWork> P2PLanes::recv(const at::Tensor& tensor, int peer, int tag) {
  return transfer(tensor, peer, tag, false);
}

c10::intrusive_ptr<MixcclWork> P2PLanes::transfer(const at::Tensor& tensor, int peer, int tag,
                                                  bool sending) {
  const char* opName = sending ? "send" : "recv";
  auto work = c10::make_intrusive<MixcclWork>(
      rank_, sending ? c10d::OpType::SEND : c10d::OpType::RECV, opName,
      std::vector<at::Tensor>{tensor}, timeout_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!aborted_, "mixccl ", opName, ": the process group was aborted");
  }
  Lane& l = lane(peer, sending, tag);
  int src = sending ? rank_ : peer, dst = sending ? peer : rank_;
  // Sender is rank 0 of the lane's communicator: it publishes the unique id.
  std::string key = "mixccl/p2p/" + std::to_string(src) + ">" + std::to_string(dst) + "/tag" +
                    std::to_string(tag);
  c10::intrusive_ptr<c10d::Store> store = store_;
  std::chrono::milliseconds timeout = timeout_;
  l.worker.submit([&l, work, tensor, sending, store, key, timeout, opName] {
    try {
      HostBuffer buf(tensor, sending);
      {
        std::lock_guard<std::mutex> lock(l.commMutex);
        TORCH_CHECK(!l.aborted, "mixccl ", opName, ": the process group was aborted");
      }
      if (!l.comm) {
        std::unique_ptr<Comm> comm = Comm::viaStore(*store, key, sending ? 0 : 1, 2, timeout, key);
        std::lock_guard<std::mutex> lock(l.commMutex);
        l.comm = std::move(comm);
        if (l.aborted) l.comm->abort();
      }
      // Bytes, not elements: point-to-point needs no arithmetic, so every dtype travels.
      if (sending) {
        l.comm->check(mixcclSend(buf.data(), buf.bytes(), mixcclUint8, 1, l.comm->get(), nullptr),
                      "send");
      } else {
        l.comm->check(mixcclRecv(buf.data(), buf.bytes(), mixcclUint8, 0, l.comm->get(), nullptr),
                      "recv");
        buf.writeBack();
      }
      work->markDone();
    } catch (...) {
      work->markFailed(std::current_exception());
    }
  });
  return work;
}

void P2PLanes::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  for (auto& entry : lanes_) {
    Lane& l = *entry.second;
    std::lock_guard<std::mutex> commLock(l.commMutex);
    l.aborted = true;
    if (l.comm) l.comm->abort();
  }
}

}  // namespace mixccl_torch
