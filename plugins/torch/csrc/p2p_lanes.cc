#include "p2p_lanes.h"

#include "comm_buffer.h"
#include "types.h"

#include <c10/util/Exception.h>

#include <thread>

namespace mixccl_torch {

// Members in this order: the worker, declared last, is joined before comm is freed.
struct P2PLanes::Lane {
  std::mutex commMutex;        // guards comm between the lane thread and abort()
  std::unique_ptr<Comm> comm;  // created on the lane thread by the first transfer
  bool aborted = false;
  FenceSource fences;          // the lane's internal CUDA streams
  Worker worker;
  explicit Lane(std::string name) : worker(std::move(name)) {}
};

P2PLanes::P2PLanes(c10::intrusive_ptr<c10d::Store> store, int rank,
                   std::chrono::milliseconds timeout, bool deviceMemory)
    : store_(std::move(store)), rank_(rank), timeout_(timeout), deviceMemory_(deviceMemory) {}

P2PLanes::~P2PLanes() {
  stopping_.store(true);  // a probing receive from any source gives up instead of its timeout
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

std::string P2PLanes::storeKey(int peer, int tag, bool sending) const {
  int src = sending ? rank_ : peer, dst = sending ? peer : rank_;
  return "mixccl/p2p/" + std::to_string(src) + ">" + std::to_string(dst) + "/tag" +
         std::to_string(tag);
}

void P2PLanes::ensureComm(Lane& l, int peer, int tag, bool sending) {
  if (l.comm) return;
  std::string key = storeKey(peer, tag, sending);
  // Sender is rank 0 of the lane's communicator: it publishes the unique id.
  std::unique_ptr<Comm> comm = Comm::viaStore(*store_, key, sending ? 0 : 1, 2, timeout_, key);
  std::lock_guard<std::mutex> lock(l.commMutex);
  l.comm = std::move(comm);
  if (l.aborted) l.comm->abort();
}

c10::intrusive_ptr<MixcclWork> P2PLanes::transfer(const at::Tensor& tensor, int peer, int tag,
                                                  bool sending) {
  const char* opName = sending ? "send" : "recv";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!aborted_, "mixccl ", opName, ": the process group was aborted");
  }
  Lane& l = lane(peer, sending, tag);
  OpOrder order = l.fences.issue({tensor}, deviceMemory_, opName);
  auto work = c10::make_intrusive<MixcclWork>(
      rank_, sending ? c10d::OpType::SEND : c10d::OpType::RECV, opName,
      std::vector<at::Tensor>{tensor}, timeout_, order);
  l.worker.submit([this, &l, work, tensor, sending, peer, tag, opName, order] {
    try {
      {
        std::lock_guard<std::mutex> lock(l.commMutex);
        TORCH_CHECK(!l.aborted, "mixccl ", opName, ": the process group was aborted");
      }
      ensureComm(l, peer, tag, sending);
    } catch (...) {
      work->markFailed(std::current_exception());
      return;
    }
    runOrdered(order, *work, *l.comm, [&](Comm& comm) {
      CommBuffer buf(comm, tensor, sending);
      // Bytes, not elements: point-to-point needs no arithmetic, so every dtype travels.
      if (sending) {
        comm.check(mixcclSend(buf.data(), buf.bytes(), mixcclUint8, 1, comm.get(), comm.stream()),
                   "send");
      } else {
        comm.check(mixcclRecv(buf.data(), buf.bytes(), mixcclUint8, 0, comm.get(), comm.stream()),
                   "recv");
        buf.writeBack();
      }
    });
  });
  return work;
}

namespace {
std::exception_ptr backendError(const std::string& msg) {
  try {
    C10_THROW_ERROR(DistBackendError, msg);
  } catch (...) {
    return std::current_exception();
  }
}
}  // namespace

// Shared by the probing lanes of one receive from any source: the first to claim it finishes
// the Work (with a message, a timeout or an error); the others see `claimed` and stop.
struct P2PLanes::AnySource {
  c10::intrusive_ptr<MixcclWork> work;
  at::Tensor tensor;
  int tag = 0;
  std::chrono::steady_clock::time_point deadline;
  std::atomic<bool> claimed{false};
  bool claim() { return !claimed.exchange(true); }
};

c10::intrusive_ptr<MixcclWork> P2PLanes::recvAnySource(const at::Tensor& tensor, int tag,
                                                       int groupSize) {
  // The probing lanes end it at the group's timeout with a message saying what was waited for;
  // wait() gives them a second more before its own, plainer, timeout.
  auto work = c10::make_intrusive<MixcclWork>(rank_, c10d::OpType::RECVANYSOURCE,
                                              "recv (any source)", std::vector<at::Tensor>{tensor},
                                              timeout_ + std::chrono::seconds(1));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!aborted_, "mixccl recv (any source): the process group was aborted");
  }
  TORCH_CHECK(groupSize > 1, "mixccl recv (any source): rank ", rank_,
              " is alone in its group: no rank could send to it");
  // The probing lanes take the message on their own threads, outside the stream ordering of
  // CUDA tensors (op_order.h).
  TORCH_CHECK(!tensor.is_cuda(), "mixccl recv (any source): CUDA tensors are not supported; "
              "name the source (recv(tensor, src)) or receive into a CPU tensor");
  // An empty tensor's send moves no message, so there would be nothing to find.
  TORCH_CHECK(tensor.numel() > 0, "mixccl recv (any source): the tensor is empty; a receive "
              "from any source needs at least one element (name the source for an empty one)");
  auto any = std::make_shared<AnySource>();
  any->work = work;
  any->tensor = tensor;
  any->tag = tag;
  any->deadline = std::chrono::steady_clock::now() + timeout_;
  for (int peer = 0; peer < groupSize; ++peer) {
    if (peer == rank_) continue;
    Lane& l = lane(peer, false, tag);
    l.worker.submit([this, &l, peer, any] { probeLane(l, peer, *any); });
  }
  return work;
}

void P2PLanes::probeLane(Lane& l, int peer, AnySource& any) {
  const char* opName = "recv (any source)";
  auto pause = std::chrono::microseconds(20);
  bool owner = false;  // this lane claimed the receive: its errors are the receive's
  try {
    while (!any.claimed.load()) {
      if (stopping_.load()) {
        if (any.claim())
          any.work->markFailed(backendError("mixccl recv (any source): the process group was "
                                            "aborted or shut down"));
        return;
      }
      // A sender that has not sent on this lane yet has not published its id: do not wait for
      // it here (another rank may send first).
      if (!l.comm && store_->check({storeKey(peer, any.tag, false)})) ensureComm(l, peer, any.tag, false);
      if (l.comm) {
        int flag = 0;
        size_t bytes = 0;
        l.comm->check(mixcclIprobe(0, &flag, &bytes, l.comm->get()), opName);
        if (flag) {
          if (!any.claim()) return;  // another lane took the receive; this message stays
          owner = true;
          CommBuffer buf(*l.comm, any.tensor, false);
          TORCH_CHECK(bytes == buf.bytes(), "mixccl recv (any source): rank ", peer, " sent ",
                      bytes, " bytes with tag ", any.tag, " to a receive of ", buf.bytes(),
                      " bytes (the message stays for a receive of its size)");
          l.comm->check(mixcclRecv(buf.data(), bytes, mixcclUint8, 0, l.comm->get(), nullptr),
                        opName);
          buf.writeBack();
          any.work->setSourceRank(peer);
          any.work->markDone();
          return;
        }
      }
      if (std::chrono::steady_clock::now() >= any.deadline) {
        if (any.claim())
          any.work->markFailed(backendError(
              "mixccl recv (any source): rank " + std::to_string(rank_) + " got no message with "
              "tag " + std::to_string(any.tag) + " from any rank within " +
              std::to_string(timeout_.count()) + " ms (the process group's timeout)"));
        return;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  } catch (...) {
    // This lane failed (its communicator, or the message it took): the receive ends with the
    // error unless another lane finished it already.
    if (owner || any.claim()) any.work->markFailed(std::current_exception());
  }
}

void P2PLanes::abort() {
  stopping_.store(true);
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
